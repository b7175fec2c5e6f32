"""``Rubric``: a task's reward functions and their weights, and the one path that scores episodes with them.

Train, eval, the warm start's demonstration filter, the drift probes and dynamic sampling all score through
``Rubric.score``, so a reward is called the same way everywhere: with TRL's keyword arguments
(``reward_arguments``), async rewards on the shared loop. An entry of weight 0 is a metric: it is scored,
logged and traced like any reward but adds nothing to the total.

TRL calls each of its ``reward_funcs`` itself; ``TRLRewards`` hands it one stand-in per entry. The first
stand-in called for a batch scores every entry at once through ``Rubric.score`` (with TRL's own keyword
arguments, so each function sees what TRL would have passed it); each stand-in returns its entry's scores,
and when the last has reported, the batch goes to the ``on_scored`` hook (the Environment's: traces, metrics,
per-episode release). Scores taken ahead of TRL (dynamic sampling) are returned to TRL without calling the
functions again.
"""

from __future__ import annotations

import functools
import inspect
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mcp_rl.errors import ConfigError
from mcp_rl.rewards.registry import RewardFunction, build_reward_functions, is_async_reward
from mcp_rl.rewards.samples import NOT_COLUMNS

__all__ = ["Rubric", "ScoredBatch", "TRLRewards", "reward_arguments", "reward_name", "weighted_total"]

Scores = dict[str, float | None]
OnScored = Callable[["ScoredBatch", Mapping[str, Any]], None]


def reward_name(function: RewardFunction) -> str:
    """The name TRL logs a reward under (``rewards/<name>/mean``): its ``__name__``, a partial's function's,
    or its class name."""
    while isinstance(function, functools.partial):
        function = function.func
    return str(getattr(function, "__name__", type(function).__name__))


def weighted_total(scores: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """The weighted sum TRL trains on (its ``nansum``: unscored rewards left out, weight 1 when unset); None
    when no function scored."""
    parts = [weights.get(name, 1.0) * score for name, score in scores.items() if score is not None]
    return sum(parts) if parts else None


def _ignore(*args: Any, **kwargs: Any) -> None:
    """``log_extra`` / ``log_metric`` outside a trainer: nothing is logged."""


def reward_arguments(trajectories: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The keyword arguments TRL gives a reward for these episodes: ``prompts``, ``completions`` (the
    conversational form: the model's turns with the observations in place), ``completion_ids``, every dataset
    column as a list, ``trajectories``, and ``trainer_state``/``log_extra``/``log_metric`` stand-ins."""
    if len(trajectories) != len(rows):
        raise ValueError(f"got {len(trajectories)} trajectories for {len(rows)} dataset rows")
    names = list(dict.fromkeys(key for row in rows for key in row))
    columns = {
        name: [row.get(name) for row in rows]
        for name in names
        if name not in NOT_COLUMNS and name not in ("prompt", "completion")
    }
    return {
        "prompts": [t.prompt_messages for t in trajectories],
        "completions": [[{"role": "assistant", "content": t.transcript}] for t in trajectories],
        "completion_ids": [list(t.completion_ids) for t in trajectories],
        **columns,
        "trajectories": list(trajectories),
        "trainer_state": None,
        "log_extra": _ignore,
        "log_metric": _ignore,
    }


@dataclass
class ScoredBatch:
    """Episodes and every rubric entry's per-episode scores (``None``: not scored).

    ``errors`` holds the entries that raised (episodes they left unscored, their first message); ``why``
    the failure kinds a tool-verified reward counted for the calls it could not make.
    """

    trajectories: list[Any]
    scores: dict[str, list[float | None]]
    weights: dict[str, float]
    errors: dict[str, dict[str, Any]] = field(default_factory=dict)
    why: dict[str, dict[str, int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.trajectories)

    def episode(self, index: int) -> Scores:
        """One episode's ``{entry name: score}``."""
        return {name: scores[index] for name, scores in self.scores.items()}

    @property
    def rewards(self) -> list[Scores]:
        """Per-episode ``{entry name: score}``, in episode order."""
        return [self.episode(index) for index in range(len(self))]

    @property
    def totals(self) -> list[float | None]:
        """Each episode's weighted total (what TRL trains on; unscored entries left out)."""
        return [weighted_total(scores, self.weights) for scores in self.rewards]

    def skipped(self) -> dict[str, dict[str, Any]]:
        """Per entry that left episodes unscored: how many of how many (its mean is over the others), and
        why where it counts that."""
        out: dict[str, dict[str, Any]] = {}
        for name, scores in self.scores.items():
            unscored = sum(score is None for score in scores)
            if unscored:
                why = self.why.get(name)
                out[name] = {"skipped": unscored, "of": len(scores), **({"why": why} if why else {})}
        return out

    def extend(self, other: ScoredBatch) -> None:
        """Append ``other``'s episodes (an evaluation's batches, one after another)."""
        self.trajectories += other.trajectories
        for name, scores in other.scores.items():
            self.scores.setdefault(name, []).extend(scores)
        for name, error in other.errors.items():
            mine = self.errors.setdefault(name, {"episodes": 0, "first_error": error["first_error"]})
            mine["episodes"] += error["episodes"]
        self.why.update(other.why)  # the counters are cumulative: the newest snapshot has them all


async def _awaited(value: Any) -> Any:
    return await value


def _call(function: RewardFunction, kwargs: Mapping[str, Any]) -> list[Any]:
    """One reward on one batch, as TRL calls it; async ones on the shared loop (``tools.bridge``)."""
    from mcp_rl.tools.bridge import run_sync  # the loop thread starts only when a batch is scored

    if is_async_reward(function):
        return list(run_sync(functools.partial(function, **kwargs)))
    values = function(**kwargs)
    if inspect.isawaitable(values):  # a sync callable that hands back an awaitable
        values = run_sync(_awaited, values)
    return list(values)


class Rubric:
    """Reward functions with their weights; weight 0 makes an entry a metric (scored, not summed).

    Args:
        functions: reward callables in TRL's shape; each one's name (``reward_name``) must be unique.
        weights: one per function (default 1 each).
    """

    def __init__(self, functions: Sequence[RewardFunction] = (), weights: Sequence[float] | None = None):
        self.functions = list(functions)
        self.names = [reward_name(function) for function in self.functions]
        weights = [1.0] * len(self.functions) if weights is None else [float(w) for w in weights]
        if len(weights) != len(self.functions):
            raise ConfigError(f"{len(weights)} reward weights for {len(self.functions)} reward functions")
        duplicates = sorted({name for name in self.names if self.names.count(name) > 1})
        if duplicates:
            raise ConfigError(f"two rewards are named {duplicates}: give each its own name (a 'label')")
        self.weights = weights

    @classmethod
    def from_specs(cls, specs: Sequence[Any], pool: Any = None) -> Rubric:
        """A recipe's ``rewards:`` list (see ``build_reward_functions``), tool-verified ones on ``pool``."""
        functions, weights = build_reward_functions(specs, pool)
        return cls(functions, weights)

    def __len__(self) -> int:
        return len(self.functions)

    @property
    def weight_of(self) -> dict[str, float]:
        return dict(zip(self.names, self.weights, strict=True))

    def score(
        self,
        trajectories: Sequence[Any],
        rows: Sequence[Mapping[str, Any]] | None = None,
        *,
        arguments: Mapping[str, Any] | None = None,
        strict: bool = False,
    ) -> ScoredBatch:
        """Every entry's scores for these episodes, called as TRL calls them: with ``arguments`` (TRL's own
        keyword arguments) or those ``reward_arguments`` makes from ``rows``. An entry that raises or returns
        the wrong number of scores is recorded in ``errors`` with ``None`` scores and the others still run;
        with ``strict`` its error propagates instead (training stops, as it would inside TRL)."""
        if arguments is None:
            if rows is None:
                raise ValueError("Rubric.score needs the episodes' dataset rows or TRL's arguments")
            arguments = reward_arguments(trajectories, rows)
        batch = ScoredBatch(list(trajectories), {}, self.weight_of)
        for name, function in zip(self.names, self.functions, strict=True):
            try:
                values = _call(function, arguments)
                if len(values) != len(trajectories):
                    raise ValueError(f"returned {len(values)} scores for {len(trajectories)} episodes")
                batch.scores[name] = [None if value is None else float(value) for value in values]
            except Exception as error:
                if strict:
                    raise
                batch.errors[name] = {
                    "episodes": len(trajectories),
                    "first_error": f"{type(error).__name__}: {error}",
                }
                batch.scores[name] = [None] * len(trajectories)
            why = getattr(function, "skipped_by_kind", None)
            if why:
                batch.why[name] = dict(why)
        return batch


@dataclass
class _Pending:
    """A batch TRL is scoring: the entries that have reported so far."""

    trajectories: Sequence[Any]
    reported: set[str] = field(default_factory=set)


class TRLRewards:
    """The rubric as TRL's ``reward_funcs``: one stand-in per entry, one scoring pass per batch.

    Args:
        rubric: the entries TRL calls.
        on_scored: called once per batch, after the last entry reported, with the ``ScoredBatch`` and
            TRL's keyword arguments (``trainer_state``, ``log_metric``, the dataset columns).
    """

    def __init__(self, rubric: Rubric, on_scored: OnScored) -> None:
        self.rubric = rubric
        self.on_scored = on_scored
        self.ahead: dict[int, Scores] = {}  # id(trajectory) -> its scores, until TRL asks for them
        self._pending: _Pending | None = None
        self._lock = threading.Lock()

    def functions(self) -> list[RewardFunction]:
        """TRL's ``reward_funcs``: under each entry's name, async where the entry is (TRL's own test)."""
        return [
            self._stand_in(name, function)
            for name, function in zip(self.rubric.names, self.rubric.functions, strict=True)
        ]

    def _stand_in(self, name: str, function: RewardFunction) -> RewardFunction:
        if is_async_reward(function):

            async def scored_async(**kwargs: Any) -> list[float | None]:
                return self.report(name, kwargs)

            wrapper: RewardFunction = scored_async
        else:

            def scored(**kwargs: Any) -> list[float | None]:
                return self.report(name, kwargs)

            wrapper = scored
        wrapper.__name__ = wrapper.__qualname__ = name
        wrapper.__doc__ = getattr(function, "__doc__", None)
        return wrapper

    def score_ahead(
        self, trajectories: Sequence[Any], rows: Sequence[Mapping[str, Any]]
    ) -> list[float | None]:
        """Every entry's scores for these episodes now (dynamic sampling judges groups by them), kept for
        TRL's call; their weighted totals. An entry that raises stops training here."""
        return self._keep(self.rubric.score(trajectories, rows, strict=True)).totals

    def _keep(self, batch: ScoredBatch) -> ScoredBatch:
        for index, trajectory in enumerate(batch.trajectories):
            self.ahead[id(trajectory)] = batch.episode(index)
        return batch

    def forget(self, trajectories: Sequence[Any]) -> None:
        """Drop the scores kept for episodes that will not be trained on."""
        for trajectory in trajectories:
            self.ahead.pop(id(trajectory), None)

    def report(self, name: str, kwargs: Mapping[str, Any]) -> list[float | None]:
        """``name``'s scores for TRL's batch; the batch is scored on the first entry's call and handed to
        ``on_scored`` on the last."""
        trajectories = kwargs.get("trajectories")
        if trajectories is None:  # not our rollout (plain TRL generation): the function alone, no record
            return _call(self.rubric.functions[self.rubric.names.index(name)], kwargs)
        with self._lock:
            if not all(id(t) in self.ahead for t in trajectories):  # with TRL's own arguments
                self._keep(self.rubric.score(trajectories, arguments=kwargs, strict=True))
            scores = [self.ahead[id(t)][name] for t in trajectories]
            if self._pending is None or self._pending.trajectories is not trajectories:
                self._pending = _Pending(trajectories)
            self._pending.reported.add(name)
            if len(self._pending.reported) < len(self.rubric):
                return scores
            self._pending = None
            rewards = [self.ahead[id(t)] for t in trajectories]
        self.forget(trajectories)
        batch = ScoredBatch(
            list(trajectories),
            {entry: [r[entry] for r in rewards] for entry in self.rubric.names},
            self.rubric.weight_of,
        )
        self.on_scored(batch, kwargs)
        return scores
