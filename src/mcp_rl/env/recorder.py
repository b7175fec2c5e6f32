"""``EpisodeRecorder``: traces and rollout metrics written from what the reward functions received.

The recorder wraps each reward function. TRL calls every function once per batch with the same keyword
arguments (our ``trajectories``, every dataset column, ``trainer_state``, ``log_metric``); when the last
function of a batch has returned, the recorder has the episodes, the rows and every function's scores
together, and only then

- appends one trace line per episode (the episode, its score per function, its dataset row),
- logs the batch's rollout numbers and the tool pool's counters through TRL's ``log_metric``, resetting
  the counters: a step's ``tools/*`` numbers include the calls its tool-verifying rewards made, and
- stops the episodes' per-episode server instances, which the rewards could query until then.

So nothing travels between two private trainer methods, and the scores in a trace are exactly the ones
the loss used. Dynamic sampling needs a group's rewards before TRL asks for them: ``score_ahead`` scores
episodes with the same functions then, and TRL's later call for those episodes returns the same scores
without calling the function again.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_rl.env.engine import hop_metrics, rollout_metrics
from mcp_rl.env.environment import RolloutPipeline
from mcp_rl.env.prompts import template_fields
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.rewards import exact_match_score, is_async_reward, sample_rows, score_batch, weighted_total


def is_counter(key: str) -> bool:
    """Counters add up over processes (calls, failures, reconnects); every other metric is a mean."""
    return key.endswith("/calls") or "/failures" in key or key.endswith("/reconnects")


def user_prompt(trajectory: Trajectory) -> str:
    """The episode's user turn as the model read it: ``prompt.user_template`` filled with the row."""
    users = [m for m in trajectory.prompt_messages if m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


def truncated_share(trajectories: Sequence[Trajectory]) -> float:
    """The share of episodes cut by a token limit: the episode's budget ran out, or its last turn hit
    ``max_new_tokens`` without an answer. What TRL's ``completions/clipped_ratio`` means to measure; TRL
    counts every completion not ending in EOS, and ours end on a stop string (or an observation)."""
    cut = [
        t.finish_reason == "max_tokens" or (t.answer is None and t.info.get("last_finish") == "length")
        for t in trajectories
    ]
    return sum(cut) / len(cut) if cut else 0.0


@dataclass
class _Batch:
    trajectories: Sequence[Trajectory]
    scores: dict[str, list[float | None]] = field(default_factory=dict)


class EpisodeRecorder:
    """Wraps reward functions; writes traces and logs metrics once a batch is fully scored.

    Args:
        pipeline: the pipeline the episodes came from (its engine's timings, its pool's counters).
        trace_path: where trace lines go (JSON lines, appended), or None for no traces.

    Counters are summed over processes: TRL averages ``log_metric`` values over processes, so each process
    logs its count times the number of processes.
    """

    def __init__(self, pipeline: RolloutPipeline, trace_path: str | Path | None = None) -> None:
        self.pipeline = pipeline
        self.trace_path = Path(trace_path) if trace_path else None
        self.num_processes = 1
        self.gather_keys: Callable[[list[str]], list[str]] | None = None
        self.names: list[str] = []
        # Each function's weight in the total TRL trains on (``GRPOConfig.reward_weights``); 1 when unset.
        self.weights: dict[str, float] = {}
        self.last_batch: _Batch | None = None
        self.functions: dict[str, Callable[..., Any]] = {}
        self.ahead: dict[int, dict[str, float | None]] = {}  # id(trajectory) -> scores from score_ahead
        self._batch: _Batch | None = None
        self._lock = threading.Lock()

    def distribute(
        self, process_index: int, num_processes: int, gather_keys: Callable[[list[str]], list[str]]
    ) -> None:
        """Record as one of ``num_processes`` training processes: traces go to a file per rank, and
        every process logs the union of all processes' metric names (``gather_keys``, a collective)."""
        self.num_processes = num_processes
        self.gather_keys = gather_keys
        if self.trace_path is not None and num_processes > 1:
            self.trace_path = self.trace_path.with_name(
                f"{self.trace_path.stem}.rank{process_index}{self.trace_path.suffix}"
            )

    # -- wrapping -------------------------------------------------------------------------------------
    def wrap(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        """``function`` under the same name (what TRL logs it as), reporting its scores here."""
        self.names.append(name)
        self.functions[name] = function
        if is_async_reward(function):

            async def scored_async(**kwargs: Any) -> list[float | None]:
                scores = self.scored_ahead(name, kwargs)
                if scores is None:
                    scores = await function(**kwargs)
                self.scored(name, scores, kwargs)
                return scores

            wrapper: Callable[..., Any] = scored_async
        else:

            def scored(**kwargs: Any) -> list[float | None]:
                scores = self.scored_ahead(name, kwargs)
                if scores is None:
                    scores = function(**kwargs)
                self.scored(name, scores, kwargs)
                return scores

            wrapper = scored
        wrapper.__name__ = wrapper.__qualname__ = name
        wrapper.__doc__ = getattr(function, "__doc__", None)
        return wrapper

    def score_ahead(
        self, trajectories: Sequence[Trajectory], rows: Sequence[Mapping[str, Any]]
    ) -> list[float | None]:
        """Every wrapped function's scores for these episodes now, kept for TRL's call; their weighted
        totals. A function that raises stops training here as it would in TRL's call."""
        scored = score_batch(list(self.functions.values()), trajectories, rows)
        if scored.errors:
            raise RuntimeError(f"reward functions failed: {scored.errors}")
        by_name = dict(zip(self.functions, scored.scores.values(), strict=True))
        for index, trajectory in enumerate(trajectories):
            self.ahead[id(trajectory)] = {name: scores[index] for name, scores in by_name.items()}
        return [weighted_total(self.ahead[id(t)], self.weights) for t in trajectories]

    def forget(self, trajectories: Sequence[Trajectory]) -> None:
        """Drop the scores ``score_ahead`` kept for episodes that will not be trained on."""
        for trajectory in trajectories:
            self.ahead.pop(id(trajectory), None)

    def scored_ahead(self, name: str, kwargs: Mapping[str, Any]) -> list[float | None] | None:
        """``name``'s scores from ``score_ahead`` when it scored every one of these episodes, else None."""
        trajectories = kwargs.get("trajectories")
        if not trajectories or not all(id(t) in self.ahead for t in trajectories):
            return None
        return [self.ahead[id(t)][name] for t in trajectories]

    def scored(self, name: str, scores: Sequence[float | None], kwargs: Mapping[str, Any]) -> None:
        """One function's scores for a batch; the batch is recorded when every function has reported."""
        trajectories = kwargs.get("trajectories")
        if trajectories is None:
            return  # not our rollout (plain TRL generation): nothing to trace
        with self._lock:
            if self._batch is None or self._batch.trajectories is not trajectories:
                self._batch = _Batch(trajectories)
            self._batch.scores[name] = list(scores)
            if len(self._batch.scores) < len(self.names):
                return
            batch, self._batch = self._batch, None
        self.forget(batch.trajectories)
        self.last_batch = batch
        state = kwargs.get("trainer_state")
        # The optimizer step these episodes train (global_step counts the ones done): the same step number
        # as the metrics line that logs their rewards, and what a resume trims traces to.
        step = state.global_step + 1 if state is not None else 0
        rows = sample_rows(len(trajectories), kwargs)
        self.write_traces(batch, rows, step)
        log_metric = kwargs.get("log_metric")
        if log_metric is not None:
            self.log_metrics(batch.trajectories, rows, log_metric)
        self.pipeline.release(batch.trajectories)  # every reward has seen the state the episodes left

    # -- what is recorded -----------------------------------------------------------------------------
    def write_traces(self, batch: _Batch, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """One JSON line per episode: step, score per function and their weighted total (what the loss used),
        the task (the template's column) and the user prompt it rendered, the dataset row, the episode."""
        if self.trace_path is None:
            return
        self.trace_path.parent.mkdir(parents=True, exist_ok=True)
        # The task text is in whichever column the template names ("task" for a scaffolded recipe).
        task_columns = [*template_fields(self.pipeline.prompts.config.user_template), "question"]
        with self.trace_path.open("a") as out:
            for index, (trajectory, row) in enumerate(zip(batch.trajectories, rows, strict=True)):
                rewards = {name: scores[index] for name, scores in batch.scores.items()}
                record = {
                    "step": step,
                    "rewards": rewards,
                    "reward": weighted_total(rewards, self.weights),
                    "question": next((row[c] for c in task_columns if row.get(c) is not None), None),
                    "user_prompt": user_prompt(trajectory),
                    "golden_answers": row.get("golden_answers"),
                    "row": dict(row),
                    **trajectory.to_dict(),
                }
                record.pop("prompt_messages")  # the same for a whole group, and long
                out.write(json.dumps(record, default=str) + "\n")

    def log_metrics(
        self,
        trajectories: Sequence[Trajectory],
        rows: Sequence[Mapping[str, Any]],
        log_metric: Callable[[str, float], None],
    ) -> None:
        """The batch's rollout numbers (by hop count too), the engine's timings and the pool's counters
        (then reset)."""
        golds = [row.get("golden_answers") for row in rows]
        exact = (
            [exact_match_score(t.answer, g) for t, g in zip(trajectories, golds, strict=True)]
            if golds and all(g is not None for g in golds)
            else None
        )
        metrics = {
            **rollout_metrics(trajectories),
            "rollout/truncated": truncated_share(trajectories),
            **hop_metrics(trajectories, rows, exact),
            **self.pipeline.engine.last_stats,
            **self.pipeline.tool_metrics(reset=True),
        }
        keys = sorted(metrics)
        if self.num_processes > 1 and self.gather_keys is not None:
            keys = sorted(set(self.gather_keys(keys)))
        for key in keys:
            value = float(metrics.get(key, 0.0))
            log_metric(key, value * self.num_processes if is_counter(key) else value)
