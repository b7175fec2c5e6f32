"""What each sample of a reward batch holds: its trajectory, its dataset row, its question.

Answers come from ``Trajectory.answer`` — the answer the parser took from the model's own turns — never from
decoded text that may still hold the prompt's example answer (Search-R1's known bug). Without trajectories
(plain TRL), the first ``<answer>…</answer>`` of the completion alone is used.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_rl.env.trajectory import Trajectory

# Keyword arguments TRL or our trainer pass that are not per-sample dataset columns.
NOT_COLUMNS = frozenset(
    {"prompts", "completions", "completion_ids", "trajectories", "environments"}
    | {"trainer_state", "log_extra", "log_metric"}
)
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def completion_text(completion: Any) -> str:
    """A TRL completion (a string, or a conversational list of messages) → the model's text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        return "".join(
            str(m.get("content") or "")
            for m in completion
            if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"
        )
    return str(completion)


def _answer_from_text(text: str) -> str | None:
    # The first complete answer ends an episode in our parser too; an empty one is no answer.
    match = _ANSWER_TAG.search(text)
    return (match.group(1).strip() or None) if match else None


def _as_messages(prompt: Any) -> list[dict[str, Any]]:
    """A TRL prompt (messages, or plain text) as chat messages."""
    return list(prompt) if isinstance(prompt, list) else [{"role": "user", "content": str(prompt or "")}]


def sample_trajectories(
    trajectories: Sequence[Trajectory] | None,
    prompts: Sequence[Any] | None,
    completions: Sequence[Any] | None,
) -> list[Trajectory]:
    """Our trainer's trajectories, or minimal ones built from plain TRL completions (answer tag only)."""
    if trajectories is not None:
        return list(trajectories)
    if completions is None:
        raise ValueError("a reward needs `trajectories` (from the mcp-rl trainer) or TRL's `completions`")
    prompts = list(prompts) if prompts is not None else [None] * len(completions)
    return [
        Trajectory(
            prompt_index=i,
            prompt_messages=_as_messages(prompt),
            prompt_ids=[],
            answer=_answer_from_text(completion_text(completion)),
            finish_reason="answer",
        )
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True))
    ]


def sample_rows(
    n: int, columns: Mapping[str, Any], prompts: Sequence[Any] | None = None
) -> list[dict[str, Any]]:
    """Per-sample dicts of the dataset columns TRL passed (each column is a list, one value a sample)."""
    per_sample = {
        name: value
        for name, value in columns.items()
        if name not in NOT_COLUMNS
        and isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == n
    }
    rows = [{name: value[i] for name, value in per_sample.items()} for i in range(n)]
    if prompts is not None:
        for row, prompt in zip(rows, prompts, strict=True):
            row.setdefault("prompt", prompt)
    return rows


def sample_question(row: Mapping[str, Any], trajectory: Trajectory | None = None) -> str:
    """The question: a ``question`` column if the dataset has one, else the prompt's last user message."""
    if row.get("question") is not None:
        return str(row["question"])
    messages: Any = trajectory.prompt_messages if trajectory is not None else row.get("prompt")
    if isinstance(messages, str):
        return messages
    users = [m for m in messages or [] if isinstance(m, Mapping) and m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


__all__ = ["NOT_COLUMNS", "completion_text", "sample_question", "sample_rows", "sample_trajectories"]
