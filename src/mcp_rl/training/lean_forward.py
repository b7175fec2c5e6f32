"""The training forward pass, lean: the shared prompt prefix read once, only the loss's tokens scored.

TRL computes a micro-batch's per-token log-probabilities with ``model(..., labels=..., fused_lm_head=True)``
(``trl.trainer.utils.add_fused_lm_head``). On CPU that call and its backward do far more work than the loss
needs, for two reasons:

- off CUDA/XPU, TRL projects *every* position onto the 49k-token vocabulary (its compact path needs
  Triton), although the loss reads only model-written completion tokens: a third of the positions at
  most, and observation tokens (``tool_mask`` 0) are most of the completion;
- every row runs the system prompt and few-shot turns through the whole model again, though in the CPU
  recipes they are most of each row's tokens and the same in every row.

``LeanScoring`` replaces that fused forward on the policy model with one that runs the prefix all rows share
once (batch 1, its keys and values then broadcast to every row, so its gradient is the sum over rows, as
before) and projects only the positions the loss reads; its log-probabilities, entropies and gradients
are TRL's to float rounding (``tests/test_scoring.py``; the timings are in ``docs/training.md``). Positions
the loss never reads come back 0.

Everything it cannot do the same way goes to TRL's own forward: calls without ``fused_lm_head``
(generation), models whose logits are scaled or soft-capped, MoE router losses, multimodal inputs. The
prefix is shared only where a key/value cache can carry gradients (no gradient checkpointing).
"""

from __future__ import annotations

import functools
import types
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
from torch.utils.checkpoint import checkpoint
from transformers import DynamicCache

from mcp_rl.env.trajectory import Trajectory
from mcp_rl.generation.cached import cache_argument

# Positions projected onto the vocabulary at once: bounds the logits a backward pass holds.
CHUNK_POSITIONS = 1024
# A shorter common prefix is not worth a second forward call.
MIN_SHARED_PREFIX = 16


# What TRL lays out along the prompt and along the completion (one row per episode).
PROMPT_KEYS = ("prompt_ids", "prompt_mask")
COMPLETION_KEYS = (
    "completion_ids",
    "completion_mask",
    "tool_mask",
    "advantages",
    "old_per_token_logps",
    "sampling_per_token_logps",
    "ref_per_token_logps",
    "importance_sampling_ratio",
)


def trim_padding(inputs: dict[str, Any]) -> dict[str, Any]:
    """``inputs`` without the prompt's leading and the completion's trailing columns that are padding in
    every row.

    TRL pads a whole generation batch to its longest prompt (on the left) and longest completion (on the
    right), then computes the loss a micro-batch at a time: a micro-batch of short episodes would run the
    model over columns that are padding in all of its rows (a third of the completion columns in a records
    run). Padding is masked out of attention and loss, so dropping it changes no token's value beyond float
    rounding (positions shift alike for every token, and rotary attention sees only their differences).
    Inputs holding any other per-token tensor (images, token types) are left as they are.
    """
    prompt_mask, completion_mask = inputs["prompt_mask"], inputs["completion_mask"]
    completion_width = completion_mask.size(1)
    known = {*PROMPT_KEYS, *COMPLETION_KEYS}
    if any(torch.is_tensor(v) and v.dim() >= 2 and k not in known for k, v in inputs.items()):
        return inputs
    used_prompt = prompt_mask.any(0).nonzero()
    used_completion = completion_mask.any(0).nonzero()
    start = int(used_prompt[0]) if len(used_prompt) else 0
    end = int(used_completion[-1]) + 1 if len(used_completion) else completion_width
    if start == 0 and end == completion_width:
        return inputs
    trimmed = dict(inputs)
    for key in PROMPT_KEYS:
        trimmed[key] = inputs[key][:, start:]
    for key in COMPLETION_KEYS:
        value = inputs.get(key)
        if torch.is_tensor(value) and value.dim() == 2 and value.size(1) == completion_width:
            trimmed[key] = value[:, :end]
    return trimmed


@dataclass
class ScoredTokens:
    """What TRL reads from a fused forward: per-token log-probabilities and entropies, shaped like
    ``labels[:, 1:]`` (0 where not scored)."""

    log_probs: torch.Tensor
    entropy: torch.Tensor | None
    loss: torch.Tensor
    aux_loss: torch.Tensor | None = None


def shared_prefix_length(input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> int:
    """The number of leading attended tokens every row has in common, stopping before the first position
    whose next token is scored (its hidden state must come out of the per-row pass)."""
    starts = attention_mask.argmax(1)  # left padding comes first
    scored = labels[:, 1:] != -100
    first_scored = torch.where(scored.any(1), scored.int().argmax(1), torch.full_like(starts, labels.size(1)))
    limit = int((first_scored - starts).min())
    if limit <= 0:
        return 0
    columns = starts[:, None] + torch.arange(limit)[None, :]
    rows = input_ids.gather(1, columns)
    attended = attention_mask.gather(1, columns).bool().all(0)
    same = (rows == rows[:1]).all(0) & attended
    return limit if bool(same.all()) else int((~same).int().argmax())


def checkpointing(model: Any) -> bool:
    """Whether activation checkpointing is on (which drops the key/value cache the shared prefix needs)."""
    flag = "is_activation_checkpointing" if hasattr(type(model), "is_activation_checkpointing") else None
    return bool(getattr(model, flag or "is_gradient_checkpointing", False))


@dataclass
class SharedForward:
    """What ``prefix_shared_forward`` returns.

    Attributes:
        hidden: the backbone's last hidden states for positions 0..L-2 (those that predict a next token);
            the rows of the shared prefix are zeros (never scored).
        shared: how many leading tokens all rows shared (0: none; they ran once, batch 1).
        cache: every column's keys and values (None unless asked for). Column c >= ``shared`` holds the
            input's column c; the columns before hold the shared prefix.
        cache_mask: which of the cache's columns hold a token (rows × L).
        positions: the position each of the cache's columns ran at (rows × L).
    """

    hidden: torch.Tensor
    shared: int
    cache: Any
    cache_mask: torch.Tensor
    positions: torch.Tensor


def prefix_shared_forward(
    model: Any,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    labels: torch.Tensor,
    *,
    keep_cache: bool = False,
) -> SharedForward:
    """The backbone over a left-padded batch, the leading tokens every row shares run once (see
    ``SharedForward``). ``keep_cache`` keeps the keys and values, to score more tokens after any column."""
    backbone = model.base_model
    rows, length = input_ids.shape
    keyword = cache_argument(backbone)
    shared = shared_prefix_length(input_ids, attention_mask, labels)
    if rows < 2 or shared < MIN_SHARED_PREFIX or checkpointing(model):
        output = backbone(input_ids=input_ids, attention_mask=attention_mask, use_cache=keep_cache)
        cache = output[keyword] if keep_cache else None
        positions = torch.arange(length, device=input_ids.device).expand(rows, -1)  # the model's default
        return SharedForward(output.last_hidden_state[:, :-1], 0, cache, attention_mask, positions)
    # Each row becomes [shared prefix][its left padding][the rest]: rest column j holds original column
    # j + shared. Positions count attended tokens (rotary attention sees only their differences).
    starts = attention_mask.argmax(1)
    columns = torch.arange(length - shared)[None, :]
    padding = columns < starts[:, None]
    rest_ids = input_ids[:, shared:].masked_fill(padding, 0)
    rest_mask = attention_mask[:, shared:].masked_fill(padding, 0)
    full_mask = torch.cat([rest_mask.new_ones(rows, shared), rest_mask], dim=1)
    positions = (full_mask.cumsum(1) - 1)[:, shared:]
    first = int(starts[0])
    held = backbone(input_ids=input_ids[:1, first : first + shared], use_cache=True)[keyword]
    cache = DynamicCache()
    for index, layer in enumerate(held.layers):
        cache.update(layer.keys.expand(rows, -1, -1, -1), layer.values.expand(rows, -1, -1, -1), index)
    rest = backbone(
        input_ids=rest_ids,
        attention_mask=full_mask,
        position_ids=positions,
        use_cache=True,
        **{keyword: cache},
    ).last_hidden_state
    # Original column c >= start + shared is rest column c - shared; the columns before are never scored.
    hidden = torch.cat([rest.new_zeros(rows, shared, rest.size(-1)), rest[:, :-1]], dim=1)
    all_positions = torch.cat([positions.new_tensor(range(shared)).expand(rows, -1), positions], dim=1)
    return SharedForward(hidden, shared, cache if keep_cache else None, full_mask, all_positions)


class LeanScoring:
    """Installs the lean fused forward on ``model`` (after TRL installed its own, which it keeps as the
    fallback). ``enabled`` switches it at run time; ``loss_mask`` (rows × completion columns) narrows the
    scored positions to those the loss reads for the next call (``MCPGRPOTrainer.compute_loss`` sets it).
    """

    def __init__(self, model: Any, temperature: float, cast_lm_head_to_fp32: bool = False) -> None:
        self.model = model
        self.temperature = temperature
        self.cast_lm_head_to_fp32 = cast_lm_head_to_fp32
        self.enabled = True
        self.loss_mask: torch.Tensor | None = None
        self.last_shared_prefix = 0  # tokens read once for all rows in the latest call (0: none shared)
        self.fused_forward = model.forward  # TRL's (or the model's own when TRL did not patch it)
        config = model.config.get_text_config()
        self.supported = not any(
            getattr(config, name, None) is not None
            for name in ("final_logit_softcapping", "logit_scale", "output_multiplier", "lm_head_multiplier")
        ) and not getattr(config, "output_router_logits", False)

        # Bound to the model, as TRL binds its own: accelerate's mixed-precision wrapper rebinds
        # ``model.forward.__func__`` to the model.
        def lean_forward(_model: Any, *args: Any, **kwargs: Any) -> Any:
            return self.forward(*args, **kwargs)

        model.forward = types.MethodType(functools.wraps(type(model).forward)(lean_forward), model)

    @contextmanager
    def reading(self, loss_mask: torch.Tensor) -> Iterator[None]:
        """Within: fused forward calls on ``loss_mask``'s micro-batch score only where it is 1."""
        self.loss_mask = loss_mask
        try:
            yield
        finally:
            self.loss_mask = None

    def forward(self, *args: Any, fused_lm_head: bool = False, labels: Any = None, **kwargs: Any) -> Any:
        input_ids, attention_mask = kwargs.get("input_ids"), kwargs.get("attention_mask")
        plain_call = set(kwargs) <= {"input_ids", "attention_mask"} and not args
        if not (fused_lm_head and self.enabled and self.supported and plain_call and labels is not None):
            return self.fused_forward(*args, fused_lm_head=fused_lm_head, labels=labels, **kwargs)
        if attention_mask is None:
            attention_mask = torch.ones_like(input_ids)
        scored = labels[:, 1:] != -100
        loss_mask = self.loss_mask
        if (
            loss_mask is not None
            and loss_mask.size(0) == scored.size(0)
            and loss_mask.size(1) <= scored.size(1)
        ):
            width = loss_mask.size(1)
            scored = scored.clone()
            scored[:, -width:] &= loss_mask.bool().to(scored.device)
            scored[:, :-width] = False
        hidden = self.hidden_states(input_ids, attention_mask, labels)
        log_probs, entropy = self.score(hidden, labels[:, 1:], scored)
        loss = -log_probs.sum() / scored.sum().clamp(min=1)
        return ScoredTokens(log_probs=log_probs, entropy=entropy, loss=loss)

    def hidden_states(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: Any
    ) -> torch.Tensor:
        forward = prefix_shared_forward(self.model, input_ids, attention_mask, labels)
        self.last_shared_prefix = forward.shared
        return forward.hidden

    def score(
        self, hidden: torch.Tensor, next_tokens: torch.Tensor, scored: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probability of each scored next token and the entropy there, at ``temperature``."""
        head = self.model.get_output_embeddings()
        picked, tokens = hidden[scored], next_tokens[scored]
        parts = [
            checkpoint(
                self.score_chunk,
                head.weight,
                head.bias,
                picked[s : s + CHUNK_POSITIONS],
                tokens[s : s + CHUNK_POSITIONS],
                use_reentrant=False,
            )
            for s in range(0, len(picked), CHUNK_POSITIONS)
        ] or [self.score_chunk(head.weight, head.bias, picked, tokens)]
        log_probs = torch.cat([part[0] for part in parts])
        entropy = torch.cat([part[1] for part in parts])
        # masked_scatter keeps an all-masked micro-batch connected to the graph (a zero loss backward accepts)
        return (
            log_probs.new_zeros(scored.shape).masked_scatter(scored, log_probs),
            entropy.new_zeros(scored.shape).masked_scatter(scored, entropy),
        )

    def score_chunk(
        self, weight: torch.Tensor, bias: torch.Tensor | None, hidden: torch.Tensor, tokens: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.cast_lm_head_to_fp32:
            with torch.autocast(hidden.device.type, enabled=False):
                logits = torch.nn.functional.linear(
                    hidden.float(), weight.float(), None if bias is None else bias.float()
                )
        else:
            logits = torch.nn.functional.linear(hidden, weight.to(hidden.dtype), bias)
        log_softmax = (logits.float() / self.temperature).log_softmax(-1)
        picked = log_softmax.gather(-1, tokens[:, None]).squeeze(-1)
        entropy = -(log_softmax.exp() * log_softmax).sum(-1)
        return picked, entropy


def supervised_loss(model: Any, episodes: Sequence[Trajectory], pad_id: int) -> torch.Tensor:
    """Mean next-token loss over the episodes' own turns (observation and prompt tokens not scored).

    As in the GRPO step: the prompt prefix every episode shares runs once, and only the scored positions
    are projected onto the vocabulary.
    """
    logits, targets = EpisodeForward(model, episodes, pad_id).own_token_logits()
    return torch.nn.functional.cross_entropy(logits.float(), targets)


class EpisodeForward:
    """One lean forward over whole episodes, read afterwards: the logits at their model-written tokens and,
    with ``keep_cache``, the log-probability of other tokens after any point of an episode, scored without
    running the episode up to that point again.

    Args:
        model: the policy (under LoRA: adapters in).
        episodes: laid out left-padded, one row each, as the shared-prefix forward expects.
        pad_id: the tokenizer's padding id.
        keep_cache: keep every column's keys and values for ``continuation_log_probs``.
    """

    def __init__(
        self, model: Any, episodes: Sequence[Trajectory], pad_id: int, *, keep_cache: bool = False
    ) -> None:
        self.model = model.get_base_model() if hasattr(model, "get_base_model") else model
        self.completion_lengths = [len(e.completion_ids) for e in episodes]
        self.width = max(len(e.prompt_ids) + len(e.completion_ids) for e in episodes)
        input_ids = torch.full((len(episodes), self.width), pad_id, dtype=torch.long)
        attention = torch.zeros_like(input_ids)
        self.labels = torch.full_like(input_ids, -100)
        for row, episode in enumerate(episodes):
            ids = episode.prompt_ids + episode.completion_ids
            input_ids[row, self.width - len(ids) :] = torch.tensor(ids)
            attention[row, self.width - len(ids) :] = 1
            own = torch.tensor(episode.completion_mask, dtype=torch.bool)
            completion = torch.tensor(episode.completion_ids)
            self.labels[row, self.width - len(completion) :] = completion.masked_fill(~own, -100)
        self.device = self.model.get_output_embeddings().weight.device
        input_ids, attention, self.labels = (t.to(self.device) for t in (input_ids, attention, self.labels))
        self.forward = prefix_shared_forward(
            self.model, input_ids, attention, self.labels, keep_cache=keep_cache
        )

    def own_token_logits(self) -> tuple[torch.Tensor, torch.Tensor]:
        """The logits predicting each model-written token (positions × vocabulary), and those tokens, in
        episode order."""
        scored = self.labels[:, 1:] != -100  # the hidden state at t predicts token t + 1
        head = self.model.get_output_embeddings()
        return head(self.forward.hidden[scored]), self.labels[:, 1:][scored]

    def continuation_log_probs(
        self, points: Sequence[tuple[int, int]], tokens: Sequence[int]
    ) -> torch.Tensor:
        """log p(``tokens``), teacher-forced, after each point (episode row, position in its completion):
        the episode's tokens before the point are the context. One sum per point."""
        device = self.device
        rows = torch.tensor([row for row, _ in points], device=device)
        columns = torch.tensor(
            [self.width - self.completion_lengths[r] + cut for r, cut in points], device=device
        )
        head = self.model.get_output_embeddings()
        scores = head(self.forward.hidden[rows, columns - 1]).float().log_softmax(-1)[:, tokens[0]]
        if len(tokens) == 1:
            return scores
        if self.forward.cache is None:
            raise ValueError("scoring more than one token needs EpisodeForward(..., keep_cache=True)")
        # Each point's row of the cache, its columns from the point on hidden: the tokens follow the point.
        context = self.forward.cache_mask[rows] * (torch.arange(self.width, device=device) < columns[:, None])
        cache = DynamicCache()
        for index, layer in enumerate(self.forward.cache.layers):
            cache.update(layer.keys[rows], layer.values[rows], index)
        inputs = torch.tensor(tokens[:-1], device=device).expand(len(points), -1)
        positions = (
            self.forward.positions[rows, columns - 1, None] + 1 + torch.arange(inputs.size(1), device=device)
        )
        backbone = self.model.base_model
        hidden = backbone(
            input_ids=inputs,
            attention_mask=torch.cat([context, torch.ones_like(inputs)], dim=1),
            position_ids=positions,
            use_cache=True,
            **{cache_argument(backbone): cache},
        ).last_hidden_state
        following = torch.tensor(tokens[1:], device=device).expand(len(points), -1)
        picked = head(hidden).float().log_softmax(-1).gather(-1, following[..., None]).squeeze(-1)
        return scores + picked.sum(1)
