"""Which operators a calculator GRPO run's groups pushed up or down, from its traces.

    python docs/measurements/calc-operator-push.py TRACES.jsonl[.gz] ... [--steps 10 20]

For every group with a reward spread (the only ones with a gradient), each rollout's advantage sign is its
`calculator_verified` reward minus the group's mean. Summed over the rollouts whose first call's expression
uses an operator, that is the net push the run's questions gave the operator by that step: positive where the
groups rewarded writing it, negative where they punished it. Last stdout line: one JSON object, per file and
step.
"""

from __future__ import annotations

import argparse
import gzip
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

OPERATORS = "+-*/"


def read_traces(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as lines:
        return [json.loads(line) for line in lines if line.strip()]


def first_expression(trace: dict[str, Any]) -> str:
    calls = trace["turns"][0]["calls"] if trace["turns"] else []
    return str(calls[0]["arguments"].get("expression", "")) if calls else ""


def operator_push(traces: list[dict[str, Any]], last_step: int) -> dict[str, float]:
    groups: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for trace in traces:
        if trace["step"] <= last_step:
            groups[(trace["step"], trace["row"]["id"])].append(trace)
    push = dict.fromkeys(OPERATORS, 0.0)
    for group in groups.values():
        rewards = [trace["rewards"]["calculator_verified"] for trace in group]
        if len(set(rewards)) < 2:
            continue
        mean = sum(rewards) / len(rewards)
        for trace, reward in zip(group, rewards, strict=True):
            expression = first_expression(trace)
            for operator in OPERATORS:
                if operator in expression:
                    push[operator] += reward - mean
    return {operator: round(value, 2) for operator, value in push.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("traces", nargs="+", type=Path)
    parser.add_argument("--steps", nargs="+", type=int, default=[10, 20])
    args = parser.parse_args()
    result = {}
    for path in args.traces:
        traces = read_traces(path)
        result[str(path)] = {step: operator_push(traces, step) for step in args.steps}
        print(path, "  ".join(f"to step {step}: {push}" for step, push in result[str(path)].items()))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
