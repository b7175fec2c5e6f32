"""Which way each GRPO step pushed one behaviour, from a run's traces: the diagnosis of a drifting decision.

    python bench/behaviour_push.py RUN_DIR|TRACES.jsonl[.gz] --behaviour called_twice [--by hops]
        [--scale-rewards none] [--out push.png]

A step's batch is in ``RUN_DIR/traces.jsonl`` (one line per trained episode: its rewards and dataset row).
Each group (a step's episodes of one prompt) with a reward spread pulls every episode's log-probability
along its advantage, (reward − group mean) / group std (``--scale-rewards none``: not divided). Its push on a
behaviour is the mean over its episodes of advantage × behaviour, where the behaviour is one of the episode's
reward entries, usually a zero-weight metric (``called_twice``: 1 when it searched twice): positive means the
step favoured the behaviour. Summed by step and by a row column (``--by hops``), it shows what a shared
decision hears: on search-multihop, two-hop groups only ever push a second search up and single-hop groups
only down, and which of them has a spread depends on where the decision stands.
Last stdout line: one JSON object, per stratum the push and informative-group count of every step.
"""

from __future__ import annotations

import argparse
import statistics
from collections import defaultdict
from itertools import accumulate
from pathlib import Path
from typing import Any

from _common import finish, read_jsonl  # bench/ is sys.path[0]

from mcp_rl.viewer.run_data import trace_paths


def group_pushes(
    traces: list[dict[str, Any]], behaviour: str, by: str | None, scale: bool
) -> dict[str, dict[int, list[float]]]:
    """stratum → step → the push of each of that step's informative groups."""
    groups: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    for trace in traces:
        groups[(trace["step"], trace["user_prompt"])].append(trace)
    pushes: dict[str, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (step, _), episodes in sorted(groups.items()):
        rewards = [episode["reward"] for episode in episodes]
        spread = statistics.pstdev(rewards)
        if spread < 1e-6:
            continue  # no advantage, no push
        mean = statistics.mean(rewards)
        divisor = spread if scale else 1.0
        push = statistics.mean(
            (episode["reward"] - mean) / divisor * float(episode["rewards"].get(behaviour, 0.0))
            for episode in episodes
        )
        stratum = f"{by}={episodes[0]['row'].get(by)}" if by else "all"
        pushes[stratum][step].append(round(push, 6) + 0.0)  # + 0.0: no -0.00 from rounding noise
    return pushes


def plot(pushes: dict[str, dict[int, list[float]]], last_step: int, behaviour: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (per_step, running) = plt.subplots(2, 1, figsize=(7.0, 5.0), sharex=True)
    steps = range(1, last_step + 1)
    total = [0.0] * last_step
    for stratum, by_step in sorted(pushes.items()):
        values = [sum(by_step.get(step, [])) for step in steps]
        per_step.bar(steps, values, alpha=0.6, label=stratum)
        total = [a + b for a, b in zip(total, values, strict=True)]
        running.plot(steps, list(accumulate(values)), label=stratum)
    running.plot(steps, list(accumulate(total)), color="black", label="net")
    per_step.axhline(0, color="black", linewidth=0.8)
    running.axhline(0, color="black", linewidth=0.8)
    per_step.set_ylabel(f"push on {behaviour}")
    running.set_ylabel("running sum")
    running.set_xlabel("GRPO step")
    per_step.legend(fontsize="small")
    running.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run",
        type=Path,
        help="A run directory (its traces, one file or one per process), or a traces file (.gz too).",
    )
    parser.add_argument(
        "--behaviour", required=True, help="A reward entry of each episode (e.g. called_twice)."
    )
    parser.add_argument("--by", help="A dataset row column to split the push by (e.g. hops).")
    parser.add_argument(
        "--scale-rewards",
        choices=("group", "none"),
        default="group",
        help="Whether advantages are divided by the group's reward std, as the run's trainer.scale_rewards.",
    )
    parser.add_argument("--out", type=Path, help="Also draw the push per step and its running sum.")
    args = parser.parse_args()
    paths = trace_paths(args.run) if args.run.is_dir() else [args.run]
    traces = [trace for path in paths for trace in read_jsonl(path)]
    if not traces:
        raise SystemExit(f"{args.run}: no traces (train with the run's trace file on)")
    if not any(args.behaviour in trace["rewards"] for trace in traces):
        names = sorted({name for trace in traces for name in trace["rewards"]})
        raise SystemExit(
            f"--behaviour {args.behaviour}: no episode has it; its rewards are {', '.join(names)}"
        )
    pushes = group_pushes(traces, args.behaviour, args.by, args.scale_rewards == "group")
    last_step = max(trace["step"] for trace in traces)
    if args.out:
        plot(pushes, last_step, args.behaviour, args.out)
    lines = []
    for stratum, by_step in sorted(pushes.items()):
        total = sum(sum(values) for values in by_step.values())
        groups = sum(len(values) for values in by_step.values())
        lines.append(
            f"{stratum:>10}: {groups} informative groups in {len(by_step)} steps, net push {total:+.2f}"
        )
        lines.append(
            " " * 12 + " ".join(f"{step}:{sum(values):+.2f}" for step, values in sorted(by_step.items()))
        )
    result = {
        "behaviour": args.behaviour,
        "by": args.by,
        "steps": last_step,
        "strata": {
            stratum: {
                str(step): {"push": sum(values), "groups": len(values)} for step, values in by_step.items()
            }
            for stratum, by_step in pushes.items()
        },
    }
    if args.out:
        result["plot"] = str(args.out)
    finish(result, "\n".join(["", *lines]))


if __name__ == "__main__":
    main()
