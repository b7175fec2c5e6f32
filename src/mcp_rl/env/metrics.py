"""A batch of episodes → the numbers logged for it: rollout behaviour, the rubric's scores split by a column.

The rollout numbers (turns, calls, failures, finish reasons, truncation) describe any task. What is specific
to a task is declared by its recipe: zero-weight entries of ``rewards:`` (scored per episode like any reward,
adding nothing to the total) and ``data.report_by``, a row column whose values split every rubric entry's
mean (``hops/2/called_twice``). So neither the engine nor the trainer's callbacks know any task's columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from math import comb
from typing import Any

from mcp_rl.env.trajectory import Trajectory


def rollout_metrics(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Per-batch numbers worth a line in the logs."""
    if not trajectories:
        return {}
    n = len(trajectories)
    calls = [c for t in trajectories for c in t.calls]
    metrics = {
        "rollout/turns_mean": sum(len(t.turns) for t in trajectories) / n,
        "rollout/calls_per_trajectory": len(calls) / n,
        "rollout/call_failure_rate": sum(not c.ok for c in calls) / len(calls) if calls else 0.0,
        "rollout/parse_errors_per_trajectory": sum(
            len(turn.parse_errors) for t in trajectories for turn in t.turns
        )
        / n,
        "rollout/answered": sum(t.answer is not None for t in trajectories) / n,
        "rollout/observation_tokens_mean": sum(t.completion_mask.count(0) for t in trajectories) / n,
        "rollout/model_tokens_mean": sum(t.completion_mask.count(1) for t in trajectories) / n,
    }
    for reason in ("answer", "no_action", "max_turns", "max_tokens", "episode_failed"):
        metrics[f"rollout/finish_{reason}"] = sum(t.finish_reason == reason for t in trajectories) / n
    return metrics


def truncated_share(trajectories: Sequence[Trajectory]) -> float:
    """The share of episodes cut by a token limit: the episode's budget ran out, or its last turn hit
    ``max_new_tokens`` without an answer. What TRL's ``completions/clipped_ratio`` means to measure; TRL
    counts every completion not ending in EOS, and ours end on a stop string (or an observation)."""
    cut = [
        t.finish_reason == "max_tokens" or (t.answer is None and t.info.get("last_finish") == "length")
        for t in trajectories
    ]
    return sum(cut) / len(cut) if cut else 0.0


def value_order(value: Any) -> tuple[int, float, str]:
    """A sort key for a column's values, and for them as text in log keys: numbers first, in numeric order
    (hops 2 before 10), then everything else by its text."""
    if isinstance(value, bool):
        return (1, 0.0, str(value))
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0.0, str(value))


def grouped_means(
    rows: Sequence[Mapping[str, Any]], scores: Mapping[str, Sequence[float | None]], column: str | None
) -> dict[str, dict[str, float]]:
    """``{value of column: {name: mean score}}`` over the episodes whose row has that value.

    ``scores`` holds each rubric entry's per-episode scores, in the rows' order. Rows without the column
    (or with None in it) are left out, and so are unscored episodes (None) from a mean, as TRL's
    ``rewards/<name>/mean`` leaves them out; a name that scored none of a value's episodes is absent there.
    """
    if column is None:
        return {}
    for name, values in scores.items():
        if len(values) != len(rows):
            raise ValueError(f"{name}: {len(values)} score(s) for {len(rows)} row(s)")
    indices: dict[str, list[int]] = {}
    first_seen: dict[str, Any] = {}
    for index, row in enumerate(rows):
        value = row.get(column)
        if value is not None:
            indices.setdefault(str(value), []).append(index)
            first_seen.setdefault(str(value), value)
    grouped: dict[str, dict[str, float]] = {}
    for key in sorted(indices, key=lambda key: value_order(first_seen[key])):
        means = {}
        for name, values in scores.items():
            present = [score for score in (values[i] for i in indices[key]) if score is not None]
            if present:
                means[name] = sum(present) / len(present)
        grouped[key] = means
    return grouped


def grouped_metrics(
    rows: Sequence[Mapping[str, Any]], scores: Mapping[str, Sequence[float | None]], column: str | None
) -> dict[str, float]:
    """:func:`grouped_means` as log keys, ``<column>/<value>/<name>``: e.g. ``hops/2/exact_match``."""
    return {
        f"{column}/{value}/{name}": mean
        for value, means in grouped_means(rows, scores, column).items()
        for name, mean in means.items()
    }


def pass_chance(episodes: int, successes: int, k: int) -> float:
    """The chance that k of a task's ``episodes``, drawn without replacement, hold at least one of its
    ``successes``: the unbiased pass@k estimate for one task (Chen et al., 2021)."""
    if not 1 <= k <= episodes:
        raise ValueError(f"pass@{k} needs at least {k} scored episode(s) of a task, not {episodes}")
    return 1 - comb(episodes - successes, k) / comb(episodes, k)


def pass_at_k(scores: Sequence[float | None], samples: int) -> dict[str, float]:
    """pass@k for k = 1, 2, 4, ... and ``samples``: the chance that at least one of k episodes of a task
    succeeds, averaged over tasks, by :func:`pass_chance` over each task's episodes.

    ``scores`` holds ``samples`` consecutive episodes per task, each 1 (success) or 0; unscored episodes
    (None) are left out, and a task with fewer than k scored episodes is left out of pass@k. Empty when a
    score is neither 0 nor 1, or nothing is scored. pass@k above pass@1 is what sharpening the policy could
    still gain without it learning anything new.
    """
    if samples < 1 or len(scores) % samples:
        raise ValueError(f"{len(scores)} score(s) are not whole tasks of {samples} episode(s)")
    if any(score not in (None, 0, 1) for score in scores):
        return {}
    tasks = []  # (scored episodes, successes) per task
    for start in range(0, len(scores), samples):
        present = [score for score in scores[start : start + samples] if score is not None]
        tasks.append((len(present), int(sum(present))))
    result: dict[str, float] = {}
    for k in sorted({2**i for i in range(samples.bit_length())} | {samples}):
        chances = [pass_chance(n, c, k) for n, c in tasks if n >= k]
        if chances:
            result[str(k)] = sum(chances) / len(chances)
    return result


__all__ = [
    "grouped_means", "grouped_metrics", "pass_at_k", "pass_chance", "rollout_metrics", "truncated_share",
    "value_order",
]  # fmt: skip
