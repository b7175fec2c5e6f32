"""Rolling out the next batch while this one trains (``grpo.overlap``).

One batch at a time is played in a background thread against a generator with its own copy of the weights
(``rollout.backend: process``), so the trainer's thread computes the loss, the backward pass and the
optimizer step meanwhile; on a machine whose rollouts wait on tools, that waiting is hidden behind
training. The batch then trains one step later, one policy version behind the policy that sampled it,
which TRL's importance-sampling correction accounts for (``MCPGRPOTrainer.stale_samples_weighted``).

The trainer syncs the generator's weights before each background rollout starts and never while one runs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from concurrent import futures
from dataclasses import dataclass
from typing import Any

from mcp_rl.env.trajectory import Trajectory

__all__ = ["PlayedBatch", "RolloutAhead"]

Rows = list[dict[str, Any]]
Metrics = dict[str, list[float]]


@dataclass
class PlayedBatch:
    """A batch's rows (dynamic sampling may have replaced some) and their episodes, in the same order."""

    rows: Rows
    episodes: list[Trajectory]
    stats: dict[str, float]  # the engine's timings of the rollout
    metrics: Metrics  # what its rollout logged for the step that trains it


class RolloutAhead:
    """At most one batch in flight in a background thread.

    Args:
        play: plays a batch's rows with the weights the generator holds, logging into the metrics given.
        last_stats: the engine's timings of the rollout the calling thread just ran.
    """

    def __init__(
        self,
        play: Callable[[Rows, Metrics], tuple[Rows, list[Trajectory]]],
        last_stats: Callable[[], dict[str, float]],
    ) -> None:
        self.play = play
        self.last_stats = last_stats
        self.executor: futures.ThreadPoolExecutor | None = None
        self.pending: futures.Future[PlayedBatch] | None = None

    def played(self, rows: Rows, policy_step: int) -> PlayedBatch:
        """``rows`` played in this thread by the policy of optimizer step ``policy_step`` (each episode's
        ``info["policy_step"]``, which its trace line keeps)."""
        metrics: Metrics = defaultdict(list)
        rows, episodes = self.play(rows, metrics)
        for episode in episodes:
            episode.info["policy_step"] = policy_step
        return PlayedBatch(rows, episodes, dict(self.last_stats()), metrics)

    def start(self, rows: Rows, policy_step: int) -> None:
        if self.pending is not None:
            raise RuntimeError("a batch is already being rolled out ahead")
        if self.executor is None:
            self.executor = futures.ThreadPoolExecutor(1, thread_name_prefix="mcp-rl-rollout-ahead")
        self.pending = self.executor.submit(self.played, rows, policy_step)

    def take(self) -> PlayedBatch | None:
        """The batch rolled out ahead once it is done (its rollout's error raised here), or None."""
        pending, self.pending = self.pending, None
        return pending.result() if pending is not None else None

    def wait(self) -> None:
        """Until the batch in flight, if any, has finished (kept for ``take``)."""
        if self.pending is not None:
            futures.wait([self.pending])

    def close(self, discard: Callable[[list[Trajectory]], None]) -> None:
        """Wait for the batch in flight and hand its episodes, which nothing will train on, to ``discard``."""
        pending, self.pending = self.pending, None
        if pending is not None and pending.exception() is None:
            discard(pending.result().episodes)
        if self.executor is not None:
            self.executor.shutdown(wait=True)
            self.executor = None
