"""Two `mcp-rl eval` reports on the same tasks, compared with paired bootstrap confidence intervals.

    python bench/compare_evals.py BEFORE.json AFTER.json [--by kind] [--metric em] [--pass-at K]
        [--resamples 10000]

Reads each report's ``<report>.trajectories.jsonl`` (one line per episode, the row included), takes each
task's mean success over its episodes (one greedy, or ``--samples N`` sampled: either side may be either),
pairs the tasks, and prints the success of each side, their difference and its 95% interval (percentile
bootstrap over tasks, the same resample for both sides), overall and by a row column. A learning claim is
the interval of the difference, not two means side by side: the same tasks make the sides correlated, which
the paired resample keeps. ``--pass-at K`` compares each task's pass@K (the chance that one of K of its
sampled episodes succeeds; a task's mean success is pass@1) instead. An unscored episode (its server failed)
counts as a failure unless ``--drop-unscored`` leaves its task out on both sides. Last line: one JSON object.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from _common import finish, read_jsonl  # bench/ is sys.path[0]

from mcp_rl.env.metrics import pass_chance


def episodes(report: Path) -> list[dict[str, Any]]:
    """The report's episodes, in task order, from ``.trajectories.jsonl`` or the gzipped copy kept beside a
    report in docs/measurements (``.trajectories.jsonl.gz``)."""
    return read_jsonl(report.with_suffix(".trajectories.jsonl"))


def by_task(
    episodes: list[dict[str, Any]], metric: str, k: int = 1
) -> list[tuple[str, dict[str, Any], float]]:
    """Each task once, in the report's order, with its row and its pass@k over its episodes (k = 1: its
    mean success): the samples of one task are not independent draws of the evaluation, so the bootstrap
    resamples tasks."""
    tasks: dict[str, tuple[dict[str, Any], list[float]]] = {}
    for episode in episodes:
        tasks.setdefault(episode.get("task"), (episode.get("row") or {}, []))[1].append(
            success(episode, metric)
        )
    if k == 1:
        return [(task, row, sum(values) / len(values)) for task, (row, values) in tasks.items()]
    if any(value not in (0.0, 1.0) for _, values in tasks.values() for value in values):
        raise SystemExit(f"--pass-at needs a 0/1 metric; {metric} has other values")
    try:
        return [
            (task, row, pass_chance(len(values), int(sum(values)), k))
            for task, (row, values) in tasks.items()
        ]
    except ValueError as error:
        raise SystemExit(f"--pass-at {k}: {error} (evaluate with --samples {k} or more)") from error


def score(episode: dict[str, Any], metric: str) -> float | None:
    """``em`` (exact match on QA data) or a reward's name; None where the episode was not scored (its
    per-episode server was unavailable, say)."""
    value = episode.get(metric)
    return (episode.get("rewards") or {}).get(metric) if value is None else value


def success(episode: dict[str, Any], metric: str) -> float:
    """The episode's score; a missing or unscored value counts as 0."""
    return float(score(episode, metric) or 0.0)


def unscored_tasks(episodes: list[dict[str, Any]], metric: str) -> set[str]:
    """The tasks with an episode that has no score for ``metric``."""
    return {episode.get("task") for episode in episodes if score(episode, metric) is None}


def interval(values: Sequence[float], resamples: int, rng: random.Random) -> tuple[float, float]:
    """The 2.5th and 97.5th percentiles of the mean over ``resamples`` bootstrap draws."""
    n = len(values)
    means = sorted(sum(values[rng.randrange(n)] for _ in range(n)) / n for _ in range(resamples))
    return means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]


def compare(before: list[float], after: list[float], resamples: int, seed: int) -> dict[str, Any]:
    """Both means, their difference and its paired 95% interval."""
    rng = random.Random(seed)
    differences = [a - b for a, b in zip(after, before, strict=True)]
    n = len(differences)
    low, high = interval(differences, resamples, rng)
    return {
        "n": n,
        "before": sum(before) / n,
        "after": sum(after) / n,
        "difference": sum(differences) / n,
        "ci95": [low, high],
    }


def metric_label(metric: str, k: int) -> str:
    return metric if k == 1 else f"{metric} pass@{k}"


def difference_text(row: dict[str, Any]) -> str:
    low, high = row["ci95"]
    return f"Δ {row['difference']:+.3f} [{low:+.3f}, {high:+.3f}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--by", default=None, help="A row column to split by (e.g. kind, hops).")
    parser.add_argument("--metric", default="em", help="em, or a reward's name (e.g. calculator_verified).")
    parser.add_argument(
        "--pass-at", type=int, default=1, help="Compare pass@K of sampled reports (1: mean success)."
    )
    parser.add_argument(
        "--drop-unscored",
        action="store_true",
        help="Leave out the tasks with an unscored episode on either side (a server that failed, not the "
        "model), instead of counting it a failure; the count left out is reported.",
    )
    parser.add_argument("--resamples", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    played = [episodes(report) for report in (args.before, args.after)]
    first, second = (by_task(report, args.metric, args.pass_at) for report in played)
    if [task for task, _, _ in first] != [task for task, _, _ in second]:
        raise SystemExit("the two reports are not on the same tasks in the same order")
    unscored = set().union(*(unscored_tasks(report, args.metric) for report in played))
    kept = [i for i, (task, _, _) in enumerate(first) if not (args.drop_unscored and task in unscored)]
    groups: dict[str, list[int]] = {"all": kept}
    if args.by:
        for index in kept:
            groups.setdefault(f"{args.by}={first[index][1].get(args.by)}", []).append(index)
    result: dict[str, Any] = {
        "metric": metric_label(args.metric, args.pass_at),
        "before": str(args.before),
        "after": str(args.after),
        "unscored_tasks": len(unscored),
        "dropped_unscored": len(first) - len(kept),
    }
    lines = []
    for name, indices in groups.items():
        row = compare(
            [first[i][2] for i in indices], [second[i][2] for i in indices], args.resamples, args.seed
        )
        result[name] = row
        sides = f"{row['before']:.3f} → {row['after']:.3f}"
        lines.append(f"{name:>16}  n={row['n']:<4} {sides}  {difference_text(row)}")
    if unscored:
        what = "left out" if args.drop_unscored else "counted as failures (--drop-unscored leaves them out)"
        lines.append(f"{len(unscored)} task(s) with an unscored episode {what}")
    finish(result, "\n".join(["", *lines]))


if __name__ == "__main__":
    main()
