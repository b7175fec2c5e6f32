"""Rule rewards: exact match and F1 against the golden answers, format validity, shaping for tool use; and
metrics, rule functions meant for weight 0 (logged per episode like a reward, adding nothing to the total)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp_rl.env.trajectory import Trajectory
from mcp_rl.rewards.answers import ARTICLES, exact_match_score, f1_score, golden_list, golds_column
from mcp_rl.rewards.samples import sample_trajectories


def _score_answers(
    score: Callable[[str | None, Any], float],
    trajectories: Sequence[Trajectory] | None,
    completions: Sequence[Any] | None,
    golden_answers: Sequence[Any] | None,
    columns: Mapping[str, Any],
) -> list[float | None]:
    """``score(answer, golds)`` per sample: the final answers against the golden-answer column."""
    answers = [t.answer for t in sample_trajectories(trajectories, None, completions)]
    golds = golds_column(golden_answers, columns, len(answers))
    return [score(a, g) for a, g in zip(answers, golds, strict=True)]


def exact_match(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    completions: Sequence[Any] | None = None,
    golden_answers: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Search-R1's reward: 1.0 when the final answer matches a golden answer after normalisation."""
    return _score_answers(exact_match_score, trajectories, completions, golden_answers, kwargs)


def f1(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    completions: Sequence[Any] | None = None,
    golden_answers: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Token F1 of the final answer against the best golden answer: partial credit for near misses."""
    return _score_answers(f1_score, trajectories, completions, golden_answers, kwargs)


def format_score(trajectory: Trajectory, partial_credit: float = 0.5) -> float:
    """1.0 for a clean episode ending in an answer; ``partial_credit`` if some turn had parse errors."""
    if trajectory.answer is None:
        return 0.0
    return partial_credit if any(turn.parse_errors for turn in trajectory.turns) else 1.0


def format_reward(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    completions: Sequence[Any] | None = None,
    partial_credit: float = 0.5,
    **kwargs: Any,
) -> list[float | None]:
    """Format validity: did the episode end with a parseable answer, without malformed turns on the way."""
    # Without trajectories (plain TRL) parse errors are unknown: only the answer tag can be checked.
    return [format_score(t, partial_credit) for t in sample_trajectories(trajectories, None, completions)]


def tool_use(*, trajectories: Sequence[Trajectory] | None = None, **kwargs: Any) -> list[float | None]:
    """Shaping: 1.0 if the episode made at least one successful tool call."""
    if trajectories is None:
        raise ValueError("the tool_use reward needs `trajectories`: use the mcp-rl trainer")
    return [float(any(call.ok for call in t.calls)) for t in trajectories]


def called_twice(*, trajectories: Sequence[Trajectory] | None = None, **kwargs: Any) -> list[float | None]:
    """A metric (give it weight 0): 1.0 if the episode made two or more tool calls, what a question needing
    a second lookup (a two-hop one) asks for. Split by ``data.report_by: hops``, it shows whether the
    questions that need a second search get one."""
    if trajectories is None:
        raise ValueError("the called_twice metric needs `trajectories`: use the mcp-rl trainer")
    return [float(len(t.calls) >= 2) for t in trajectories]


_NON_WORD = re.compile(r"[^\w\s]")


def _words(text: str) -> str:
    """Like ``normalize_answer``, but punctuation splits words: markup such as ``river.</information>``."""
    return " ".join(ARTICLES.sub(" ", _NON_WORD.sub(" ", text.lower())).split())


def _contains_answer(text: str, golds: Any) -> bool:
    padded = f" {_words(text)} "
    return any(f" {gold} " in padded for gold in map(_words, golden_list(golds)) if gold)


def answer_retrieved(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    golden_answers: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Shaping for search: 1.0 if a golden answer was in an observation the model was shown.

    Dense where EM is sparse: it pays for a query that finds the evidence even before the model learns to copy
    the answer out of it. It reads what the model saw (after truncation), not the tool's full result.
    """
    if trajectories is None:
        raise ValueError("the answer_retrieved reward needs `trajectories`: use the mcp-rl trainer")
    golds = golds_column(golden_answers, kwargs, len(trajectories))
    return [
        float(any(_contains_answer(turn.observation or "", g) for turn in t.turns if turn.calls))
        for t, g in zip(trajectories, golds, strict=True)
    ]


__all__ = [
    "answer_retrieved",
    "called_twice",
    "exact_match",
    "f1",
    "format_reward",
    "format_score",
    "tool_use",
]
