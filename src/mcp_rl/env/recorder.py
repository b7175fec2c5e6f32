"""``EpisodeRecorder``: what the Environment's "batch scored" hook writes — traces and rollout metrics.

Once the rubric has scored a training batch (every entry reported, see ``mcp_rl.rewards.rubric``), the
recorder has the episodes, their dataset rows and every entry's scores together, and

- appends one trace line per episode (the episode, its score per entry, its dataset row),
- logs the batch's rollout numbers and the tool pool's counters through TRL's ``log_metric``, resetting
  the counters: a step's ``tools/*`` numbers include the calls its tool-verifying rewards made.

So the scores in a trace are exactly the ones the loss used. The Environment then stops the episodes'
per-episode server instances, which the rewards could query until then.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_rl.env.metrics import grouped_metrics, rollout_metrics, truncated_share
from mcp_rl.env.prompts import template_fields
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.rewards.rubric import ScoredBatch

__all__ = ["EpisodeRecorder", "is_counter", "user_prompt"]


def is_counter(key: str) -> bool:
    """Counters add up over processes (calls, failures, reconnects); every other metric is a mean."""
    return key.endswith("/calls") or "/failures" in key or key.endswith("/reconnects")


def user_prompt(trajectory: Trajectory) -> str:
    """The episode's user turn as the model read it: ``prompt.user_template`` filled with the row."""
    users = [m for m in trajectory.prompt_messages if m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


class EpisodeRecorder:
    """Writes a scored batch's trace lines and logs its metrics.

    Args:
        user_template: ``prompt.user_template``: a trace's ``question`` is the column it names.
        trace_path: where trace lines go (JSON lines, appended), or None for no traces.

    Counters are summed over processes: TRL averages ``log_metric`` values over processes, so each process
    logs its count times the number of processes.
    """

    def __init__(self, user_template: str, trace_path: str | Path | None = None) -> None:
        self.user_template = user_template
        self.trace_path = Path(trace_path) if trace_path else None
        self.num_processes = 1
        self.gather_keys: Callable[[list[str]], list[str]] | None = None

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

    def write_traces(self, batch: ScoredBatch, rows: Sequence[Mapping[str, Any]], step: int) -> None:
        """One JSON line per episode: step, score per entry and their weighted total (what the loss used),
        the task (the template's column) and the user prompt it rendered, the dataset row, the episode."""
        if self.trace_path is None:
            return
        self.trace_path.parent.mkdir(parents=True, exist_ok=True)
        # The task text is in whichever column the template names ("task" for a scaffolded recipe).
        task_columns = [*template_fields(self.user_template), "question"]
        with self.trace_path.open("a") as out:
            for trajectory, row, rewards, total in zip(
                batch.trajectories, rows, batch.rewards, batch.totals, strict=True
            ):
                record = {
                    "step": step,
                    "rewards": rewards,
                    "reward": total,
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
        batch: ScoredBatch,
        rows: Sequence[Mapping[str, Any]],
        log_metric: Callable[[str, float], None],
        extra: Mapping[str, float],
        report_by: str | None = None,
    ) -> None:
        """The batch's rollout numbers, every rubric entry by the ``report_by`` column's values, and
        ``extra`` (the engine's timings, the pool's counters)."""
        metrics = {
            **rollout_metrics(batch.trajectories),
            "rollout/truncated": truncated_share(batch.trajectories),
            **grouped_metrics(rows, batch.scores, report_by),
            **extra,
        }
        keys = sorted(metrics)
        if self.num_processes > 1 and self.gather_keys is not None:
            keys = sorted(set(self.gather_keys(keys)))
        for key in keys:
            value = float(metrics.get(key, 0.0))
            log_metric(key, value * self.num_processes if is_counter(key) else value)
