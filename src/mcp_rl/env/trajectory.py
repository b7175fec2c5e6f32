"""The one record of a rollout, from the engine to rewards, traces, eval reports and the trainer."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class CallRecord:
    """One tool call the model made, and what came back."""

    turn: int
    name: str
    arguments: dict[str, Any]
    observation: str
    failure: str | None = None
    latency_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.failure is None


@dataclass
class Turn:
    """One model turn: what it wrote, what it asked for, and the observation appended after it."""

    text: str
    calls: list[CallRecord] = field(default_factory=list)
    parse_errors: list[str] = field(default_factory=list)
    observation: str | None = None
    generated_tokens: int = 0
    observation_tokens: int = 0


@dataclass
class Trajectory:
    """A whole episode for one prompt sample.

    ``completion_ids`` holds, in order, the model's tokens and the observation tokens appended after its
    turns; ``completion_mask`` is 1 on the model's tokens and 0 on observations (TRL's ``tool_mask``).
    Model tokens are kept exactly as generated, never re-tokenized.
    """

    prompt_index: int
    prompt_messages: list[dict[str, Any]]
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    completion_mask: list[int] = field(default_factory=list)
    logprobs: list[float] | None = None
    turns: list[Turn] = field(default_factory=list)
    answer: str | None = None
    finish_reason: str = "running"
    timings: dict[str, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    # Not a dataclass field (no annotation), so ``asdict``, copies and traces leave it out: the tools this
    # episode saw (an ``EpisodeTools``: the shared servers plus its own per-episode instances), open until
    # its rewards are computed, so a reward can check the state the episode left. Set by the engine.
    tools = None

    @property
    def done(self) -> bool:
        return self.finish_reason != "running"

    @property
    def calls(self) -> list[CallRecord]:
        return [call for turn in self.turns for call in turn.calls]

    @property
    def failed_calls(self) -> list[CallRecord]:
        return [call for call in self.calls if not call.ok]

    @property
    def model_text(self) -> str:
        """Everything the model wrote, turns joined (observations left out)."""
        return "".join(turn.text for turn in self.turns)

    @property
    def transcript(self) -> str:
        """Model text with the observations in place, as the model read it."""
        return "".join(turn.text + (turn.observation or "") for turn in self.turns)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record for traces and reports (token ids left out: they are large and derivable)."""
        record = asdict(self)
        for key in ("prompt_ids", "completion_ids", "completion_mask", "logprobs"):
            record.pop(key)
        record["num_calls"] = len(self.calls)
        record["num_turns"] = len(self.turns)
        return record
