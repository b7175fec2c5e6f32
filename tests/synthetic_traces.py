"""Trace and eval files in the recorder's and ``mcp-rl eval``'s formats, made up fast and in any number:
for the viewer's tests (a malformed line, 100k episodes, two reports to compare) and ``bench/viewer.py``.

Standard library only; deterministic for a seed.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

FAILURE_KINDS = ["timeout", "tool error", "bad arguments"]
FINISH_REASONS = ["answer", "answer", "answer", "max_turns", "max_tokens", "no_action"]
CUT = " …[truncated]"  # what the engine appends to an observation cut to its token budget


def synthetic_episode(index: int, rng: random.Random, *, episodes_per_step: int = 16) -> dict[str, Any]:
    """One trace line: a question, 1-3 search turns (some calls failing, some observations cut), an answer."""
    question = f"Where was person {index % 5000} born?"
    gold = f"Town{index % 97}"
    turns = []
    for turn in range(rng.randint(1, 3)):
        failure = rng.choice(FAILURE_KINDS) if rng.random() < 0.15 else None
        observation = (
            "" if failure else f"Doc 1(Title: Person {index}) was born in {gold}. " * rng.randint(1, 4)
        )
        if not failure and rng.random() < 0.1:
            observation += CUT
        call = {
            "turn": turn,
            "name": "search" if rng.random() < 0.9 else "lookup",
            "arguments": {"query": f"person {index % 5000} birthplace"},
            "observation": observation or f"Error: {failure}",
            "failure": failure,
            "latency_s": round(rng.uniform(0.002, 0.2), 4),
        }
        turns.append(
            {
                "text": f"<search> person {index % 5000} birthplace </search>",
                "calls": [call],
                "parse_errors": [],
                "observation": f"\n<information>{call['observation']}</information>\n",
                "generated_tokens": 12,
                "observation_tokens": 40,
            }
        )
    finish = rng.choice(FINISH_REASONS)
    answer = (gold if rng.random() < 0.5 else "Elsewhere") if finish == "answer" else None
    text = f"<answer> {answer} </answer>" if answer else "I am not sure"
    turns.append({"text": text, "calls": [], "parse_errors": [], "observation": None, "generated_tokens": 9})
    em = float(answer == gold)
    row = {"id": f"q{index}", "question": question, "golden_answers": [gold], "hops": 1 + index % 2}
    return {
        "step": index // episodes_per_step + 1,
        "rewards": {"exact_match": em, "format": float(answer is not None)},
        "reward": em + 0.1 * float(answer is not None),
        "question": question,
        "golden_answers": [gold],
        "row": row,
        "prompt_index": index % episodes_per_step,
        "turns": turns,
        "answer": answer,
        "finish_reason": finish,
        "timings": {},
        "info": {},
        "num_calls": len(turns) - 1,
        "num_turns": len(turns),
    }


def write_traces(path: Path, n: int, seed: int = 0, *, bad_line_after: int | None = None) -> Path:
    """``n`` episodes as ``traces.jsonl`` lines; a line that is not JSON after episode ``bad_line_after``."""
    rng = random.Random(seed)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        for index in range(n):
            out.write(json.dumps(synthetic_episode(index, rng)) + "\n")
            if index == bad_line_after:
                out.write('{"step": 1, "rewards": {"exact_match": \n')
    return path


def write_eval_report(path: Path, n: int, seed: int, model: str) -> Path:
    """An eval report (``path``) and its ``.trajectories.jsonl`` of ``n`` episodes, as mcp-rl eval writes."""
    rng = random.Random(seed)
    episodes = []
    for index in range(n):
        record = synthetic_episode(index, rng)
        for key in ("step", "question", "golden_answers"):
            record.pop(key)
        record["task"] = record["row"]["question"]
        record["em"] = record["rewards"]["exact_match"]
        episodes.append(record)
    with path.with_suffix(".trajectories.jsonl").open("w") as out:
        out.writelines(json.dumps(e) + "\n" for e in episodes)
    report = {"n": n, "em": sum(e["em"] for e in episodes) / n, "reward": None, "model": model}
    # As if sampled twice a task: pass@2 lies between pass@1 and 1.
    report["pass_at_k"] = {"exact_match": {"1": report["em"], "2": (1 + report["em"]) / 2}}
    path.write_text(json.dumps(report))
    return path
