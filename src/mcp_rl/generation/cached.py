"""``CachedTransformersGenerator``: transformers generation that never re-reads text it has already read.

The engine hands the generator whole token lists every turn (prompt + everything so far), which keeps
token-in/token-out exact. Plain ``model.generate`` then runs the whole conversation through the model again
each turn: the shared system prompt and few-shot turns for every episode, and each episode's earlier turns.
This generator keeps attention state (keys and values) and forwards only what is new:

- the prefix every prompt of a call shares (system prompt, few-shot turns) is computed once per policy
  version and held once: it is copied into each batch that reads or decodes, but an episode's held state
  keeps only what comes after it (with a few-shot prompt, most of what a copy each would hold);
- each episode's state (its prompt and every token read or written so far) is kept after its turn, so the
  next turn forwards only the new observation tokens;
- a prompt is matched to held state by its tokens (the longest held prefix wins), so any caller works: a
  prompt with nothing to match is computed whole, as before;
- rows with the same prompt (GRPO's samples of one question, and later turns of samples that wrote the same
  thing) are read once and copied.

State is dropped when the policy changes (``sync`` with a new step, or weights changed in place), and
episodes that a call does not continue are dropped after it (finished episodes free their state), but for
those the engine ``hold``s: under episode scheduling, the episodes still waiting for their tools.

Within a batch, each row's held state is right-aligned against one cache boundary and its new tokens
right-aligned after it; the gaps are masked out, and positions come from the mask, so every token sits at
the position it would have had without caching.

Decoding is a short loop of our own over transformers' ``DynamicCache`` and its own sampling warpers,
rather than ``model.generate`` on the assembled cache, because a row whose turn is over leaves the batch at
once: ``generate`` keeps every row until the longest one ends, so with sampling one rambling episode keeps
the finished ones decoding, and each row in the batch adds to every step's time. transformers' continuous
batching (``generate_batch``) was slower than plain ``generate`` for these batches on CPU and has no stop
strings. A step attends with ``cpu_decoding.cpu_decode_attention`` (PyTorch's bfloat16 SDPA kernel is most
of a step on CPU) and samples by inverse CDF (``torch.multinomial`` draws exponential noise over the whole
vocabulary). The measurements behind these choices: ``docs/generation.md``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import (
    DynamicCache,
    LogitsProcessorList,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

from mcp_rl.generation.base import Generation, SamplingParams, TransformersGenerator, cut_at_stop
from mcp_rl.generation.cpu_decoding import BufferedLayer, buffered_cache, decode_attention

KeyValues = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values of shape [1, heads, n, dim]


@dataclass
class HeldState:
    """The keys and values of ``ids`` (one sequence, every layer). With a ``base`` (the prefix the episodes
    share), the first ``shared`` columns are the base's, held once for all episodes, and ``layers`` holds
    only the columns after them."""

    ids: list[int]
    layers: KeyValues
    base: HeldState | None = None
    shared: int = 0  # tokens ``ids`` has in common with ``base.ids``, from the start

    @property
    def nbytes(self) -> int:
        """Bytes of the columns this state holds itself (its base's not included)."""
        return sum(tensor.numel() * tensor.element_size() for layer in self.layers for tensor in layer)

    def copy_into(self, layer: int, keys: torch.Tensor, values: torch.Tensor, length: int) -> None:
        """Write the first ``length`` columns of ``layer`` into ``keys`` and ``values`` ([heads, length,
        dim] views)."""
        shared = 0
        if self.base is not None:
            shared = min(length, self.shared)
            base_keys, base_values = self.base.layers[layer]
            keys[:, :shared] = base_keys[0, :, :shared]
            values[:, :shared] = base_values[0, :, :shared]
        own_keys, own_values = self.layers[layer]
        keys[:, shared:length] = own_keys[0, :, : length - shared]
        values[:, shared:length] = own_values[0, :, : length - shared]


def common_length(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix (a binary search over slice comparisons, which run in C)."""
    low, high = 0, min(len(a), len(b))
    if list(a[:high]) == list(b[:high]):
        return high
    while low < high:
        middle = (low + high + 1) // 2
        if list(a[:middle]) == list(b[:middle]):
            low = middle
        else:
            high = middle - 1
    return low


def cache_argument(model: Any) -> str:
    """The name a model's forward takes its key/value cache by (and returns it under): ``cache`` from
    transformers 5.20, ``past_key_values`` before (still accepted later, with a deprecation warning)."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # PEFT wraps forward
    return "cache" if "cache" in inspect.signature(base.forward).parameters else "past_key_values"


def weights_version(model: Any) -> int:
    """Changes when a parameter is modified in place by an ordinary tensor operation (a state dict loaded,
    an unfused optimizer). Fused optimizer kernels, like the fused AdamW transformers picks by default, do
    not advance it: training invalidates held state through ``sync`` at each new step instead."""
    return sum(parameter._version for parameter in model.parameters())


class CachedTransformersGenerator(TransformersGenerator):
    """``TransformersGenerator`` with attention state reused across turns and episodes (see module doc)."""

    def __init__(
        self, model: Any, tokenizer: Any, batch_size: int | None = None, *, logprobs: bool = False
    ) -> None:
        super().__init__(model, tokenizer, batch_size)
        self.record_logprobs = logprobs  # each sampled token's log-probability, at the sampling temperature
        self.step: int | None = None
        self.version = weights_version(model)
        self.prefix: HeldState | None = None
        self.episodes: list[HeldState] = []
        self.kept: list[HeldState] = []  # held through the next call, which does not continue them

    def sync(self, model: Any, step: int) -> None:
        if model is not self.model or step != self.step:
            self.drop()
        super().sync(model, step)
        self.step = step

    def drop(self) -> None:
        """Forget every held state (the weights it was computed with are gone)."""
        self.prefix = None
        self.episodes = []
        self.kept = []

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        version = weights_version(self.model)
        if version != self.version:
            self.drop()
            self.version = version
        prompts = [list(p) for p in prompts]
        sources = [self.best_source(p) for p in prompts]
        if self.refresh_prefix(prompts, sources):
            sources = [self.best_source(p) for p in prompts]
        step = self.batch_size or len(prompts) or 1
        results: list[Generation] = []
        held: list[HeldState] = []
        for start in range(0, len(prompts), step):
            end = start + step
            generations, states = self._generate_cached(prompts[start:end], sources[start:end], sampling)
            results.extend(generations)
            held.extend(states)
        # The episodes neither continued by this call nor held for a later one are over: their state goes.
        self.episodes, self.kept = held + self.kept, []
        return results

    def held_bytes(self) -> int:
        """Bytes of attention state held now (the shared prefix counted once)."""
        held = [*self.episodes, *self.kept, self.prefix]
        states = {id(state): state for state in held if state is not None}
        states |= {id(state.base): state.base for state in states.values() if state.base is not None}
        return sum(state.nbytes for state in states.values())

    def hold(self, sequences: Sequence[Sequence[int]]) -> None:
        """Keep the state of these episodes through the next ``generate`` call, which they are not part of
        (with episode scheduling, the episodes still waiting for their tools)."""
        self.kept = [
            state
            for state in self.episodes
            if any(len(s) > len(state.ids) and list(s[: len(state.ids)]) == state.ids for s in sequences)
        ]

    # -- matching -------------------------------------------------------------------------------------
    def best_source(self, prompt: list[int]) -> tuple[HeldState | None, int]:
        """The held state sharing the longest prefix with ``prompt``, and how many tokens it covers (at
        least the prompt's last token is always forwarded: its logits start the turn)."""
        best: tuple[HeldState | None, int] = (None, 0)
        candidates = self.episodes if self.prefix is None else [*self.episodes, self.prefix]
        for state in candidates:
            length = min(common_length(state.ids, prompt), len(prompt) - 1)
            if length > best[1]:
                best = (state, length)
        return best

    def refresh_prefix(self, prompts: list[list[int]], sources: list[tuple[HeldState | None, int]]) -> bool:
        """Compute the prefix all ``prompts`` share once, when some prompt has less than it held."""
        shared = min(len(p) for p in prompts) - 1
        for prompt in prompts[1:]:
            shared = common_length(prompts[0], prompt[:shared])
        if shared <= 0 or all(length >= shared for _, length in sources):
            return False
        ids = prompts[0][:shared]
        with self.evaluating(), torch.no_grad():
            output = self.model(input_ids=torch.tensor([ids], device=self.device), use_cache=True)
        cache = output[cache_argument(self.model)]
        self.prefix = HeldState(ids, [(layer.keys, layer.values) for layer in cache.layers])
        return True

    # -- one batch ------------------------------------------------------------------------------------
    @torch.no_grad()
    def _generate_cached(
        self,
        prompts: list[list[int]],
        sources: list[tuple[HeldState | None, int]],
        sampling: SamplingParams,
    ) -> tuple[list[Generation], list[HeldState]]:
        # Rows with the same prompt (a question's samples, until their turns differ) are read once.
        distinct: dict[tuple[int, ...], int] = {}
        copy_of = [distinct.setdefault(tuple(prompt), len(distinct)) for prompt in prompts]
        firsts = [copy_of.index(group) for group in range(len(distinct))]
        read = [prompts[row] for row in firsts]
        argument = cache_argument(self.model)
        with self.evaluating(), decode_attention(self.model) as decoding_in_buffers:
            # Prompts read in groups of similar length: one batch padded to the longest is mostly padding
            # and gaps in later turns, and one call per prompt reads all the weights for each one
            # (docs/generation.md).
            rows_read: list[tuple[HeldState, torch.Tensor]] = [None] * len(read)  # type: ignore[list-item]
            for group in similar_lengths(
                [len(p) - sources[row][1] for p, row in zip(read, firsts, strict=True)]
            ):
                results = self.read_together([read[i] for i in group], [sources[firsts[i]] for i in group])
                for index, result in zip(group, results, strict=True):
                    rows_read[index] = result
            logits = torch.cat([last for _, last in rows_read])
            _, mask, positions = self.right_aligned(read, [len(prompt) for prompt in read])
            # Buffers with room for the turn (attention reads them whole: only with the decode attention).
            room = sampling.max_new_tokens + 1 if decoding_in_buffers else 0
            sources_read = [(state, len(state.ids)) for state, _ in rows_read]
            cache = self.assemble(sources_read, mask.shape[1], room)
            if len(read) < len(prompts):  # each row its own copy of what its prompt's reading left
                rows = torch.tensor(copy_of, device=self.device)
                cache.batch_select_indices(rows)
                logits, mask, positions = logits[rows], mask[rows], positions[rows]
            decoding = Decoding(prompts, mask, positions[:, -1], cache, self.prefix)
            scored = self.record_logprobs and sampling.temperature > 0
            while True:
                tokens = self.pick(logits, sampling)
                logprobs = self.token_logprobs(logits, tokens, sampling.temperature) if scored else None
                if not decoding.advance(tokens.tolist(), self.finished(sampling), logprobs):
                    break
                logits = self.model(
                    input_ids=decoding.tokens(tokens),
                    attention_mask=decoding.mask,
                    position_ids=decoding.positions[:, None],
                    **{argument: cache},
                    use_cache=True,
                ).logits[:, -1]
        generations = []
        for written, logprobs in zip(decoding.written, decoding.logprobs, strict=True):
            ids, reason = cut_at_stop(written, self.tokenizer, sampling.stop_strings, self.eos_token_ids)
            generations.append(Generation(ids, reason, logprobs[: len(ids)] if scored else None))
        return generations, decoding.states

    @staticmethod
    def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor, temperature: float) -> list[float]:
        """Each row's log-probability of its picked token at ``temperature``, before top-k and top-p: what
        TRL's loss computes for the same token, so the two can be compared for importance sampling."""
        scores = torch.log_softmax(logits.float() / temperature, dim=-1)
        return scores.gather(1, tokens[:, None]).squeeze(1).tolist()

    def right_aligned(
        self, prompts: list[list[int]], held: list[int]
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Each prompt's new tokens (those after its ``held`` ones) right-aligned and padded, and the
        attention mask and positions over held + new columns: held tokens right-aligned at one boundary,
        the gaps masked out, every token at the position it would have without them."""
        boundary = max(held)
        width = max(len(p) - h for p, h in zip(prompts, held, strict=True))
        new_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(prompts), boundary + width), dtype=torch.long)
        for row, (prompt, length) in enumerate(zip(prompts, held, strict=True)):
            new = len(prompt) - length
            new_ids[row, width - new :] = torch.tensor(prompt[length:], dtype=torch.long)
            mask[row, boundary - length : boundary] = 1
            mask[row, boundary + width - new :] = 1
        mask = mask.to(self.device)
        return new_ids.to(self.device), mask, (mask.cumsum(-1) - 1).clamp(min=0)

    def read_together(
        self, prompts: list[list[int]], sources: list[tuple[HeldState | None, int]]
    ) -> list[tuple[HeldState, torch.Tensor]]:
        """Each prompt's keys and values and last-token logits; the new tokens are read in one batch."""
        held = [length for _, length in sources]
        boundary = max(held)
        new_ids, mask, positions = self.right_aligned(prompts, held)
        cache = self.assemble(sources, boundary, room=0) if boundary else DynamicCache()
        logits = self.model(
            input_ids=new_ids,
            attention_mask=mask,
            position_ids=positions[:, boundary:],
            **{cache_argument(self.model): cache},
            use_cache=True,
            logits_to_keep=1,
        ).logits[:, -1]
        return [
            (row_state(cache, mask, row, prompt, self.prefix), logits[row : row + 1])
            for row, prompt in enumerate(prompts)
        ]

    def finished(self, sampling: SamplingParams) -> Callable[[list[int]], bool]:
        """Whether a row's turn is over: EOS, its token budget, or a stop string its last token completed."""
        stops = list(sampling.stop_strings)
        # A stop string spans at most one token per character: the newest tokens that many back suffice.
        window = max((len(stop) for stop in stops), default=0) + 1

        def done(written: list[int]) -> bool:
            if written[-1] in self.eos_token_ids or len(written) >= sampling.max_new_tokens:
                return True
            if not stops:
                return False
            tail = self.tokenizer.decode(written[-window:], skip_special_tokens=False)
            return any(stop in tail for stop in stops)

        return done

    @staticmethod
    def pick(logits: torch.Tensor, sampling: SamplingParams) -> torch.Tensor:
        """The next token of every row: argmax, or a sample after transformers' own temperature, top-k and
        top-p warpers (in ``generate``'s order), from the global torch generator (seeded by the caller)."""
        scores = logits.float()
        if sampling.temperature <= 0:
            return scores.argmax(-1)
        warpers = LogitsProcessorList([TemperatureLogitsWarper(sampling.temperature)])
        if sampling.top_k > 0:
            warpers.append(TopKLogitsWarper(sampling.top_k))
        if sampling.top_p < 1.0:
            warpers.append(TopPLogitsWarper(sampling.top_p))
        scores = warpers(None, scores)
        # Inverse-CDF sampling: the multinomial draw, without torch.multinomial's exponential noise over the
        # whole vocabulary, a noticeable share of a decoding step.
        cumulative = torch.softmax(scores, dim=-1).cumsum(-1)
        draw = torch.rand(cumulative.shape[0], 1, device=cumulative.device) * cumulative[:, -1:]
        return torch.searchsorted(cumulative, draw, right=True).clamp(max=scores.shape[-1] - 1).squeeze(1)

    def assemble(self, sources: list[tuple[HeldState | None, int]], boundary: int, room: int) -> DynamicCache:
        """One batch cache: each row's held keys/values right-aligned at ``boundary``, zeros before, and
        ``room`` columns to write after."""
        reference = next(state for state, _ in sources if state is not None).layers
        layers = []
        for index, (keys, values) in enumerate(reference):
            shape = (len(sources), keys.shape[1], boundary + room, keys.shape[3])
            batch_keys = keys.new_zeros(shape)
            batch_values = values.new_zeros(shape)
            for row, (state, length) in enumerate(sources):
                if state is not None and length > 0:
                    columns = slice(boundary - length, boundary)
                    state.copy_into(index, batch_keys[row, :, columns], batch_values[row, :, columns], length)
            if room:
                layers.append(BufferedLayer.within(batch_keys, batch_values, boundary))
            else:
                layers.append((batch_keys, batch_values))
        return buffered_cache(layers) if room else DynamicCache(layers)


def row_state(cache: Any, mask: torch.Tensor, row: int, ids: list[int], base: HeldState | None) -> HeldState:
    """Row ``row`` of ``cache`` without the gaps ``mask`` leaves out: the held state of ``ids``, on top of
    ``base`` for the tokens they start with in common (their columns are not copied again)."""
    shared = common_length(ids, base.ids) if base is not None else 0
    columns = mask[row].nonzero().squeeze(1)[shared:]
    layers = [
        (
            layer.keys[row : row + 1].index_select(2, columns),
            layer.values[row : row + 1].index_select(2, columns),
        )
        for layer in cache.layers
    ]
    return HeldState(ids, layers, base, shared) if shared else HeldState(ids, layers)


def similar_lengths(lengths: list[int], slack: float = 1.25, extra: int = 8) -> list[list[int]]:
    """Indices of ``lengths`` in groups, shortest first, each holding lengths up to ``slack`` times its
    shortest plus ``extra`` (padding a row by a few tokens costs less than another forward call)."""
    groups: list[list[int]] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        if groups and lengths[index] <= lengths[groups[-1][0]] * slack + extra:
            groups[-1].append(index)
        else:
            groups.append([index])
    return groups


class Decoding:
    """The rows of one batch while they decode: a row whose turn is over leaves the batch (and the cache) at
    once, keeping its state, so the rows still writing do not pay for it."""

    def __init__(
        self,
        prompts: list[list[int]],
        mask: torch.Tensor,
        positions: torch.Tensor,
        cache: Any,
        base: HeldState | None = None,
    ):
        self.prompts = prompts
        self.base = base  # the shared prefix the rows' states are kept on top of
        self.mask = mask
        self.positions = positions
        self.cache = cache
        self.rows = list(range(len(prompts)))  # batch row → prompt index
        self.written: list[list[int]] = [[] for _ in prompts]
        self.logprobs: list[list[float]] = [[] for _ in prompts]  # of the written tokens, when recorded
        self.states: list[HeldState] = [HeldState([], []) for _ in prompts]
        self.kept: list[int] = []  # the batch rows (before the last ``advance``) still writing

    def advance(
        self, tokens: list[int], done: Callable[[list[int]], bool], logprobs: list[float] | None = None
    ) -> bool:
        """Append each row's new token (and its log-probability, if given); rows that are done leave. False
        when no row is left."""
        keep = []
        for row, (index, token) in enumerate(zip(self.rows, tokens, strict=True)):
            self.written[index].append(token)
            if logprobs is not None:
                self.logprobs[index].append(logprobs[row])
            if done(self.written[index]):
                self.states[index] = self.state(row, index)
            else:
                keep.append(row)
        if not keep:
            return False
        if len(keep) < len(self.rows):
            selected = torch.tensor(keep, device=self.mask.device)
            self.cache.batch_select_indices(selected)
            self.mask, self.positions = self.mask[selected], self.positions[selected]
            self.rows = [self.rows[row] for row in keep]
        self.kept = keep
        self.mask = torch.cat([self.mask, self.mask.new_ones((len(self.rows), 1))], dim=1)
        self.positions = self.positions + 1
        return True

    def tokens(self, picked: torch.Tensor) -> torch.Tensor:
        """The tokens to feed next: the newest of each row still in the batch."""
        return picked[torch.tensor(self.kept, device=picked.device)][:, None]

    def state(self, row: int, index: int) -> HeldState:
        """One row's held state: its prompt and what it wrote, but the newest token (never fed back)."""
        ids = self.prompts[index] + self.written[index][:-1]
        return row_state(self.cache, self.mask, row, ids, self.base)
