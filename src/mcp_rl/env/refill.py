"""Dynamic sampling's refill: which groups of a batch are kept, and which fresh groups replace the rest.

A group (one prompt's ``num_generations`` episodes) carries a gradient only when its rewards differ.
``GroupRefill`` judges finished groups, keeps those with a spread and asks for fresh prompts to replace the
others while the extra-rollout budget lasts. Two ways to play the groups use it:

- whole rounds (``RolloutEngine.rollout``, any scheduling): play every candidate, judge them all, start the
  round of replacements, and so on;
- overlapping (``OverlappingRefill``, episode scheduling): the engine takes episodes from it as slots free;
  a group is judged as soon as its episodes have all ended, and its replacement starts while the other
  groups are still running.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_rl.env.trajectory import Trajectory

Row = dict[str, Any]


@dataclass
class Group:
    """One prompt's episodes with their rows (one row per episode: TRL writes each episode's fields into
    its row); ``order`` is when it was started, which is the batch order the groups are chosen in."""

    rows: list[Row]
    episodes: list[Trajectory]
    order: int

    @property
    def finished(self) -> bool:
        return all(episode.done for episode in self.episodes)


def group_spread(totals: Sequence[float | None]) -> bool:
    """Whether a group's rewards differ (unscored episodes left out): only then does it carry a gradient."""
    present = [t for t in totals if t is not None]
    return len(present) > 1 and max(present) - min(present) > 1e-6


class GroupRefill:
    """Which groups fill a batch of ``wanted`` groups of ``size`` episodes.

    Args:
        size: episodes per group.
        wanted: groups in the batch.
        budget: the most extra episodes (beyond the batch's own) to play.
        score: the weighted reward totals of a group's episodes (scored once, kept for TRL's call).
        fresh: up to ``count`` training rows whose prompts the batch has not seen.
    """

    def __init__(
        self,
        size: int,
        wanted: int,
        budget: int,
        score: Callable[[Sequence[Trajectory], Sequence[Row]], list[float | None]],
        fresh: Callable[[int], list[Row]],
    ) -> None:
        self.size, self.wanted, self.budget = size, wanted, budget
        self.score, self.fresh = score, fresh
        self.groups: list[Group] = []  # every group started, kept or not
        self.kept: list[Group] = []
        self.dropped: list[Group] = []
        self.spent = 0  # extra episodes started

    def add(self, rows: Sequence[Row], episodes: Sequence[Trajectory]) -> list[Group]:
        """Register started episodes (whole groups, in order) as groups."""
        added = [
            Group(list(rows[start : start + self.size]), list(episodes[start : start + self.size]), 0)
            for start in range(0, len(rows), self.size)
        ]
        for group in added:
            group.order = len(self.groups)
            self.groups.append(group)
        return added

    def judge(self, groups: Sequence[Group]) -> None:
        """Score finished groups (in one call, as TRL scores a batch) and keep those with a reward spread."""
        if not groups:
            return
        totals = self.score(
            [episode for group in groups for episode in group.episodes],
            [row for group in groups for row in group.rows],
        )
        for index, group in enumerate(groups):
            spread = group_spread(totals[index * self.size : (index + 1) * self.size])
            (self.kept if spread else self.dropped).append(group)

    def replacements(self, running: int) -> list[Row]:
        """Rows (a group's worth per fresh prompt) of the groups to start now, with ``running`` groups still
        under way: as many as the batch may still need if all of those get a spread, within the budget."""
        missing = self.wanted - len(self.kept) - running
        affordable = (self.budget - self.spent) // self.size
        if missing <= 0 or affordable <= 0:
            return []
        rows = [dict(row) for row in self.fresh(min(missing, affordable)) for _ in range(self.size)]
        self.spent += len(rows)
        return rows

    def chosen(self) -> list[Group]:
        """The batch: kept groups first, then dropped ones to fill it, each in the order they started."""
        by_start = sorted(self.kept, key=lambda g: g.order) + sorted(self.dropped, key=lambda g: g.order)
        return by_start[: self.wanted]

    def surplus(self) -> list[Group]:
        """Groups played but not in the batch."""
        chosen = {id(group) for group in self.chosen()}
        return [group for group in self.groups if id(group) not in chosen]

    def zero_std_share(self) -> float:
        return len(self.dropped) / max(1, len(self.kept) + len(self.dropped))


class OverlappingRefill:
    """The episodes of a refilling batch, handed to ``RolloutEngine.rollout_from`` one at a time.

    Asked for an episode whenever the engine has a free slot, it first judges the groups that have ended
    and starts their replacements; when it has nothing to hand out now it says so (``StopIteration``) and
    is asked again after the next episode ends, so the run ends once no group runs and none is needed.
    """

    def __init__(
        self, refill: GroupRefill, start: Callable[[Sequence[Row]], list[Trajectory]], rows: Sequence[Row]
    ) -> None:
        self.refill = refill
        self.start = start  # starts one episode per row (opening its per-episode servers)
        self.pending: deque[Trajectory] = deque()
        self.running: list[Group] = []
        self.begin(rows)

    def begin(self, rows: Sequence[Row]) -> None:
        if rows:
            groups = self.refill.add(rows, self.start(rows))
            self.running += groups
            self.pending.extend(episode for group in groups for episode in group.episodes)

    def __iter__(self) -> OverlappingRefill:
        return self

    def __next__(self) -> Trajectory:
        ended = [group for group in self.running if group.finished]
        if ended:
            self.running = [group for group in self.running if not group.finished]
            self.refill.judge(ended)
            self.begin(self.refill.replacements(running=len(self.running)))
        if not self.pending:
            raise StopIteration
        return self.pending.popleft()
