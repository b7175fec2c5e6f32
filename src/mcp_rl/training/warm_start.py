"""A supervised warm start before GRPO: demonstration episodes played through the real tools, then learned.

GRPO only amplifies what the policy already samples. A behaviour the untrained model almost never shows —
searching a second time for the entity the first passage named, or an operator it never picks — gives
every sample of a group the same reward and so no gradient. A warm start shows it a few hundred times first:

1. each demonstration is a list of assistant turns written from a training row (templates over its
   columns, or a function of the row), e.g. ``<search> {question} </search>`` then ``<answer> ... </answer>``;
   a turn of weight 0 is played but not learned: a mistake shown so that the turns after it teach recovery;
2. ``ScriptedEngine`` plays those turns instead of sampling, so every tool call goes to the recipe's real
   servers and every observation is framed and budgeted exactly as in a rollout: the episodes have the
   token layout GRPO will train on (observation tokens masked out);
3. the Environment's rubric (the recipe's own rewards, the very functions training uses) scores them and
   only those at or above ``min_reward`` are kept (a reference action the tools reject is not taught); the
   others are counted by why they fell short, with one example each (``DroppedDemonstrations``);
4. a few epochs of next-token loss on the assistant tokens, with the trainable weights GRPO will train.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from transformers import TrainerCallback

from mcp_rl.config.sections import DemonstrationTurn, Recipe, WarmStartConfig
from mcp_rl.env.engine import RolloutEngine
from mcp_rl.env.environment import Environment
from mcp_rl.env.parsers import ParsedTurn
from mcp_rl.env.recorder import user_prompt
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.errors import ConfigError, DataError
from mcp_rl.generation.base import Generation, SamplingParams
from mcp_rl.rewards.registry import import_object
from mcp_rl.training.sft import load_warm_start, train_on_demonstrations

ScriptTurn = str | Mapping[str, Any] | DemonstrationTurn  # text (learned), or {"content": ..., "weight": 0|1}
Script = Callable[[Mapping[str, Any]], Sequence[ScriptTurn] | None]


def script_turn(turn: ScriptTurn) -> DemonstrationTurn:
    """A script's turn as a ``DemonstrationTurn``; a mapping that is not one is a ``DataError`` naming it."""
    if isinstance(turn, DemonstrationTurn):
        return turn
    if isinstance(turn, str):
        return DemonstrationTurn(content=turn)
    try:
        return DemonstrationTurn.model_validate(turn)
    except ValueError:
        raise DataError(
            "warm_start.demonstrations: a turn must be text or {'content': text, 'weight': 0 or 1}, "
            f"got {turn!r}"
        ) from None


def script_from_config(config: WarmStartConfig) -> Script:
    """The recipe's ``warm_start.demonstrations`` as a function of a row: its turns, or None to skip it.
    (The recipe loader has already made a relative ``file.py`` absolute and checked that it imports.)"""
    spec = config.demonstrations
    if isinstance(spec, str):
        return import_object(spec)
    turns = [script_turn(turn) for turn in spec or []]

    def from_templates(row: Mapping[str, Any]) -> list[ScriptTurn]:
        try:
            filled = [turn.model_copy(update={"content": turn.content.format_map(row)}) for turn in turns]
        except (KeyError, IndexError) as error:
            raise DataError(
                f"warm_start.demonstrations: {error} is not in the training row (columns: {', '.join(row)})"
            ) from None
        return [turn.content if turn.weight else turn for turn in filled]

    return from_templates


class ScriptedEngine(RolloutEngine):
    """The rollout engine with each episode's turns read from its script instead of sampled.

    Everything else is the engine's own: parsing, concurrent tool calls, observation framing and budgets.
    A scripted turn ends the way a sampled one stops (at its stop string), so the tokens match a rollout's.
    A turn of weight 0 gets mask 0, as an observation does: in the context, out of every loss.
    """

    def __init__(self, engine: RolloutEngine, scripts: Sequence[Sequence[ScriptTurn]]) -> None:
        super().__init__(
            engine.generator, engine.tokenizer, engine.parser, engine.prompts, engine.pool, engine.config
        )
        self.scripts = [[script_turn(turn) for turn in script] for script in scripts]

    def generate(self, active: Sequence[Trajectory], sampling: SamplingParams) -> list[Generation]:
        generations = []
        for trajectory in active:
            script = self.scripts[trajectory.prompt_index]
            turn = len(trajectory.turns)
            text = script[turn].content if turn < len(script) else ""
            generations.append(Generation(self._encode(text), "stop" if text else "eos"))
        return generations

    def record_turn(
        self, trajectory: Trajectory, generation: Generation, *, last_turn: bool
    ) -> ParsedTurn | None:
        start = len(trajectory.completion_ids)
        parsed = super().record_turn(trajectory, generation, last_turn=last_turn)
        script, turn = self.scripts[trajectory.prompt_index], len(trajectory.turns) - 1
        if turn < len(script) and script[turn].weight == 0:
            mask = trajectory.completion_mask
            mask[start:] = [0] * (len(mask) - start)
        return parsed


def _clipped(text: str, chars: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= chars else text[:chars] + "…"


@dataclass
class DroppedDemonstrations:
    """The demonstrations the rewards turned down, counted by why, with the first example of each reason."""

    reasons: Counter[str] = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)

    def add(self, reason: str, example: str) -> None:
        self.reasons[reason] += 1
        self.examples.setdefault(reason, example)

    def describe(self) -> str:
        """One line per reason, most frequent first, each with its example; empty when none was dropped."""
        return "\n".join(
            f"  {count} × {reason}\n      e.g. {self.examples[reason]}"
            for reason, count in self.reasons.most_common()
        )


def drop_reason(
    episode: Trajectory,
    scores: Mapping[str, float | None],
    best: Mapping[str, float | None],
    total: float | None,
    min_reward: float,
) -> tuple[str, str]:
    """Why a demonstration fell short of ``min_reward``, and the evidence: a failed call (its tool and
    failure kind), an episode that did not end with an answer, the rewards below their best over all the
    demonstrations played, or a ``min_reward`` above what the rewards gave even at their best."""
    task = f"task {_clipped(user_prompt(episode), 80)!r}: "
    failed = next((call for call in episode.calls if not call.ok), None)
    if failed is not None:
        arguments = _clipped(str(failed.arguments), 80)
        return (
            f"a call to {failed.name} failed ({failed.failure})",
            task + f"{failed.name}({arguments}) → {_clipped(failed.observation)}",
        )
    if episode.finish_reason != "answer":
        last = _clipped(episode.turns[-1].text, 80) if episode.turns else ""
        return f"ended by {episode.finish_reason}, not an answer", task + f"last turn {last!r}"
    shown = ", ".join(f"{name} {'-' if v is None else f'{v:g}'}" for name, v in scores.items())
    example = task + f"answer {_clipped(episode.answer or '', 60)!r}; rewards {shown}"
    short = [
        f"{name} {'unscored' if value is None else f'{value:g}'} (best {top:g})"
        for name, value in scores.items()
        if (top := best.get(name)) is not None and (value is None or value < top)
    ]
    if short:
        return "rewards short: " + ", ".join(short), example
    reached = "nothing scored" if total is None else f"total {total:g}"
    return f"{reached} < min_reward {min_reward:g} even with every reward at its best", example


def demonstration_episodes(
    environment: Environment,
    rows: Sequence[Mapping[str, Any]],
    script: Script,
    *,
    min_reward: float | None,
    batch_size: int = 32,
    dropped: DroppedDemonstrations | None = None,
) -> tuple[list[Trajectory], dict[str, float]]:
    """Play each row's demonstration through the real tools; keep those the Environment's rubric accepts.
    Those turned down are counted in ``stats`` and, by reason with an example, in ``dropped`` when given."""
    kept: list[Trajectory] = []
    short: list[tuple[Trajectory, dict[str, float | None], float | None]] = []
    every: list[dict[str, float | None]] = []  # each played demonstration's scores: each reward's best
    played = skipped = 0
    for start in tqdm(range(0, len(rows), batch_size), desc="demonstrations", unit="batch", leave=False):
        batch, scripts = [], []
        for row in rows[start : start + batch_size]:
            turns = [script_turn(turn) for turn in script(row) or []]
            if any(turn.weight for turn in turns):  # one with nothing to learn is skipped as an empty one
                batch.append(row)
                scripts.append(turns)
            else:
                skipped += 1
        if not batch:
            continue
        engine = ScriptedEngine(environment.engine, scripts)
        episodes = engine.rollout([environment.messages(row) for row in batch], greedy=True, rows=batch)
        scored = environment.score(episodes, batch)  # their per-episode servers stop once scored
        played += len(episodes)
        every += scored.rewards
        for episode, score, total in zip(episodes, scored.rewards, scored.totals, strict=True):
            if min_reward is None or (total is not None and total >= min_reward):
                episode.info["reward"] = total
                kept.append(episode)
            else:
                short.append((episode, score, total))
    if dropped is not None and min_reward is not None:
        weights = environment.rubric.weight_of
        best = {  # the rewards that count toward min_reward: a zero-weight metric is no reason to drop one
            name: max((s[name] for s in every if s[name] is not None), default=None)
            for name in environment.rubric.names
            if weights[name] != 0
        }
        for episode, score, total in short:
            dropped.add(*drop_reason(episode, score, best, total, min_reward))
    stats = {
        "warm_start/played": float(played),
        "warm_start/kept": float(len(kept)),
        "warm_start/dropped": float(len(short)),
        "warm_start/skipped_rows": float(skipped),
    }
    return kept, stats


def played_demonstrations(
    config: WarmStartConfig, environment: Environment, rows: Sequence[Mapping[str, Any]]
) -> list[Trajectory]:
    """The rows' demonstrations played and kept as the warm start does (its script, its ``min_reward``);
    their per-episode servers are stopped once scored."""
    if not rows:
        return []
    episodes, _ = demonstration_episodes(
        environment, rows, script_from_config(config), min_reward=config.min_reward
    )
    return episodes


def warm_start(
    recipe: Recipe,
    model: Any,
    environment: Environment,
    rows: Sequence[Mapping[str, Any]],
    *,
    output_dir: Path,
    callbacks: Sequence[TrainerCallback] = (),
    resume: bool = False,
    bf16: bool | None = None,
) -> dict[str, float]:
    """The recipe's warm start on ``model`` (in place), its demonstrations scored by the Environment's
    rubric, trained by ``train_on_demonstrations`` in ``output_dir`` (checkpoints, ``final/``); returns
    its numbers. ``callbacks`` get each batch's loss; ``resume`` continues a stopped warm start and
    loads a finished one without playing its demonstrations again."""
    config = recipe.warm_start
    started = time.monotonic()
    if resume and (finished := load_warm_start(model, output_dir)) is not None:
        return finished
    script = script_from_config(config)
    chosen = list(rows)[: config.episodes]
    dropped = DroppedDemonstrations()
    episodes, stats = demonstration_episodes(
        environment, chosen, script, min_reward=config.min_reward, dropped=dropped
    )
    if not episodes:
        raise ConfigError(
            f"warm_start: none of the {len(chosen)} demonstrations reached min_reward {config.min_reward}; "
            "check warm_start.demonstrations against the tools (mcp-rl rollout shows their format). "
            f"Why they were dropped:\n{dropped.describe()}"
        )
    if dropped.reasons:
        tqdm.write(
            f"warm start: {sum(dropped.reasons.values())} demonstration(s) dropped:\n{dropped.describe()}"
        )
    return train_on_demonstrations(
        model,
        environment.tokenizer,
        episodes,
        config,
        output_dir=output_dir,
        callbacks=callbacks,
        resume=resume,
        bf16=bf16,
        stats=stats,
        started=started,
    )
