"""Drift probes logged every GRPO step, to warn of a collapse before the rewards show it.

- ``probe/kl`` and ``probe/delta_logp``: held-out warm-start demonstrations (played through the real tools,
  never trained on) scored at their model-written tokens by the warm-started policy once and by the current
  policy after every step: the mean per-token KL(warm-started ‖ current) over the whole vocabulary, and the
  mean change in the demonstrated tokens' log-probability;
- ``probe/hops/N/search_margin``: on probe demonstrations of N calls, teacher-forced right after the first
  observation, log p(the opening of a call) − log p(the opening of an answer): positive where the model
  would search again (what a two-hop question needs), negative where it would answer;
- ``probe/update_norm`` and ``probe/update_norm_over_lr``: how far the optimizer step moved the trained
  weights (0 for a step skipped for want of signal).

The trainer's own ``grpo/informative_groups`` and TRL's ``frac_reward_zero_std`` sit on the same log line.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import torch
from transformers import TrainerCallback

from mcp_rl.config.sections import Recipe
from mcp_rl.env.environment import Environment
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.training.lean_forward import EpisodeForward
from mcp_rl.training.warm_start import played_demonstrations


def probe_demonstrations(
    recipe: Recipe, environment: Environment, rows: Sequence[Mapping[str, Any]]
) -> list[Trajectory]:
    """``probes.demonstrations`` demonstrations of the rows after the warm start's own draw (the same seeded
    order, so none of them was trained on), kept by the same rule and rubric as the warm start's; their
    per-episode servers are stopped once scored."""
    config = recipe.warm_start
    held_out = list(rows)[config.episodes : config.episodes + recipe.probes.demonstrations]
    return played_demonstrations(config, environment, held_out)


@contextmanager
def evaluating(model: Any) -> Iterator[None]:
    """``model`` in eval mode without gradients, back to its mode after."""
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            yield
    finally:
        model.train(was_training)


def second_turn_start(episode: Trajectory) -> int | None:
    """Where the episode's second model turn starts in its completion (after the first observation)."""
    mask = episode.completion_mask
    return next((i for i in range(1, len(mask)) if mask[i - 1] == 0 and mask[i] == 1), None)


def opening(text: str) -> str:
    """The first word of a turn (``<search>``, ``<answer>``, ``<tool_call>``)."""
    words = text.split()
    return words[0] if words else ""


class SearchMargin:
    """log p(call opening) − log p(answer opening) after each probe episode's first observation, by the
    episode's number of calls. The openings are the first words of the demonstrations' first turn (a
    call) and last turn (the answer); nothing is measured when they are the same word."""

    def __init__(self, episodes: Sequence[Trajectory], tokenizer: Any) -> None:
        self.episodes = list(episodes)
        self.items: list[tuple[int, int, int]] = []  # (calls, episode index, turn 2 start)
        two_turns = [i for i, e in enumerate(self.episodes) if len(e.turns) >= 2 and e.calls]
        first = self.episodes[two_turns[0]] if two_turns else None
        call = opening(first.turns[0].text) if first else ""
        answer = opening(first.turns[-1].text) if first else ""
        self.openings = [tokenizer(word, add_special_tokens=False)["input_ids"] for word in (call, answer)]
        if call == answer or not all(self.openings):
            return
        for index in two_turns:
            episode = self.episodes[index]
            start = second_turn_start(episode)
            if start is not None:
                self.items.append((len(episode.calls), index, start))

    def __call__(self, model: Any, pad_id: int) -> dict[str, float]:
        if not self.items:
            return {}
        return self.read(EpisodeForward(model, self.episodes, pad_id, keep_cache=True))

    def read(self, forward: EpisodeForward) -> dict[str, float]:
        """The margins from a forward over this probe's episodes that kept its cache: each opening is
        scored after each episode's context without running the context again."""
        points = [(index, start) for _, index, start in self.items]
        call, answer = (forward.continuation_log_probs(points, ids) for ids in self.openings)
        margins: dict[int, list[float]] = defaultdict(list)
        for (hops, _, _), margin in zip(self.items, (call - answer).tolist(), strict=True):
            margins[hops].append(margin)
        return {f"probe/hops/{hops}/search_margin": sum(v) / len(v) for hops, v in sorted(margins.items())}


class DriftProbes(TrainerCallback):
    """Adds the probe numbers of each optimizer step to the trainer's ``step_metrics``.

    Args:
        metrics: where the numbers go (``MCPGRPOTrainer.step_metrics``: name -> values since the last log).
        model: the policy; its log-probabilities on ``episodes`` now are the reference.
        episodes: probe demonstrations (none: no KL probe).
        pad_id: the tokenizer's padding id.
        tokenizer: for the search margin (None: not measured).
        update_norm: also log the size of every update (holds a copy of the trained weights meanwhile).
    """

    def __init__(
        self,
        metrics: dict[str, list[float]],
        model: Any,
        episodes: Sequence[Trajectory],
        pad_id: int,
        *,
        tokenizer: Any = None,
        update_norm: bool = True,
    ) -> None:
        self.metrics = metrics
        self.episodes = list(episodes)
        self.pad_id = pad_id
        self.margin = SearchMargin(self.episodes, tokenizer) if tokenizer is not None else None
        self.update_norm = update_norm
        self.before: list[torch.Tensor] | None = None
        self.reference = None
        if self.episodes:
            with evaluating(model):
                self.reference = self.log_probs(EpisodeForward(model, self.episodes, pad_id))

    def log_probs(self, forward: EpisodeForward) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-softmax over the vocabulary at each probe token, and each probe token's own log-probability."""
        logits, targets = forward.own_token_logits()
        log_softmax = logits.float().log_softmax(-1)
        return log_softmax, log_softmax.gather(-1, targets[:, None]).squeeze(-1)

    def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
        if self.reference is None or model is None:
            return
        reference, reference_tokens = self.reference
        margin = self.margin if self.margin is not None and self.margin.items else None
        with evaluating(model):  # one forward for both: the margin reads the episodes' cache
            forward = EpisodeForward(model, self.episodes, self.pad_id, keep_cache=margin is not None)
            now, now_tokens = self.log_probs(forward)
            margins = margin.read(forward) if margin is not None else {}
        kl = (reference.exp() * (reference - now)).sum(-1).mean()
        self.metrics["probe/kl"].append(float(kl))
        self.metrics["probe/delta_logp"].append(float((now_tokens - reference_tokens).mean()))
        for key, value in margins.items():
            self.metrics[key].append(value)

    def trained(self, model: Any) -> list[torch.Tensor]:
        return [p for p in model.parameters() if p.requires_grad]

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
        if self.update_norm and model is not None:
            self.before = [p.detach().clone() for p in self.trained(model)]

    def on_optimizer_step(
        self, args: Any, state: Any, control: Any, model: Any = None, lr_scheduler: Any = None, **_: Any
    ) -> None:
        if self.before is None or model is None:
            return
        squared = sum(
            float((p.detach().float() - b.float()).pow(2).sum())
            for p, b in zip(self.trained(model), self.before, strict=True)
        )
        self.before = None
        norm = squared**0.5
        self.metrics["probe/update_norm"].append(norm)
        rate = lr_scheduler.get_last_lr()[0] if lr_scheduler is not None else args.learning_rate
        if rate > 0:  # the lr-0 control has no ratio; its norm says whether anything moved at all
            self.metrics["probe/update_norm_over_lr"].append(norm / rate)
