"""``CachedTransformersGenerator``: transformers generation that never re-reads text it has already read.

The engine hands the generator whole token lists every turn (prompt + everything so far), which keeps
token-in/token-out exact. Plain ``model.generate`` then runs the whole conversation through the model again
each turn: the shared system prompt and few-shot turns for every episode, and each episode's earlier turns.
This generator keeps attention state (keys and values) and forwards only what is new:

- the prefix every prompt of a call shares (system prompt, few-shot turns) is computed once per policy
  version and copied into every episode;
- each episode's state (its prompt and every token read or written so far) is kept after its turn, so the
  next turn forwards only the new observation tokens;
- a prompt is matched to held state by its tokens (the longest held prefix wins), so any caller works: a
  prompt with nothing to match is computed whole, as before.

State is dropped when the policy changes (``sync`` with a new step, or weights changed in place), and
episodes that a call does not continue are dropped after it (finished episodes free their state).

Within a batch, each row's held state is right-aligned against one cache boundary and its new tokens
right-aligned after it; the gaps are masked out, and positions come from the mask, so every token sits at
the position it would have had without caching.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from transformers import DynamicCache

from mcp_rl.generation import Generation, SamplingParams, TransformersGenerator, cut_at_stop

KeyValues = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values of shape [1, heads, n, dim]


@dataclass
class HeldState:
    """The keys and values of ``ids`` (one sequence, every layer)."""

    ids: list[int]
    layers: KeyValues


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


def weights_version(model: Any) -> int:
    """Changes whenever a parameter is modified in place (an optimizer step, a state dict loaded)."""
    return sum(parameter._version for parameter in model.parameters())


class CachedTransformersGenerator(TransformersGenerator):
    """``TransformersGenerator`` with attention state reused across turns and episodes (see module doc)."""

    def __init__(self, model: Any, tokenizer: Any, batch_size: int | None = None) -> None:
        super().__init__(model, tokenizer, batch_size)
        self.step: int | None = None
        self.version = weights_version(model)
        self.prefix: HeldState | None = None
        self.episodes: list[HeldState] = []

    def sync(self, model: Any, step: int) -> None:
        if model is not self.model or step != self.step:
            self.drop()
        super().sync(model, step)
        self.step = step

    def drop(self) -> None:
        """Forget every held state (the weights it was computed with are gone)."""
        self.prefix = None
        self.episodes = []

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
        self.episodes = held  # the episodes not continued by this call are over: their state goes
        return results

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
        self.prefix = HeldState(ids, [(layer.keys, layer.values) for layer in output.cache.layers])
        return True

    # -- one batch ------------------------------------------------------------------------------------
    @torch.no_grad()
    def _generate_cached(
        self,
        prompts: list[list[int]],
        sources: list[tuple[HeldState | None, int]],
        sampling: SamplingParams,
    ) -> tuple[list[Generation], list[HeldState]]:
        held = [length for _, length in sources]
        boundary = max(held)  # columns [0, boundary) come from held state
        width = max(len(p) - h for p, h in zip(prompts, held, strict=True))  # new tokens to forward
        rows = len(prompts)
        input_ids = torch.full((rows, boundary + width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((rows, boundary + width), dtype=torch.long)
        for row, (prompt, length) in enumerate(zip(prompts, held, strict=True)):
            new = len(prompt) - length
            input_ids[row, boundary - length : boundary] = torch.tensor(prompt[:length])
            input_ids[row, boundary + width - new :] = torch.tensor(prompt[length:])
            attention_mask[row, boundary - length : boundary] = 1
            attention_mask[row, boundary + width - new :] = 1
        options = self.generate_options(sampling)
        if boundary > 0:
            options["cache"] = self.assemble(sources, boundary)
        with self.evaluating():
            output = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                return_dict_in_generate=True,
                **options,
            )
        generated = output.sequences[:, boundary + width :].tolist()
        cache_length = output.cache.get_seq_length()
        generations, states = [], []
        for row, (prompt, length) in enumerate(zip(prompts, held, strict=True)):
            ids, reason = cut_at_stop(
                generated[row], self.tokenizer, sampling.stop_strings, self.eos_token_ids
            )
            generations.append(Generation(ids, reason))
            # The last token written was never fed back, so the cache holds one fewer than were generated.
            written = min(len(ids), cache_length - boundary - width)
            columns = torch.cat(
                [
                    torch.arange(boundary - length, boundary),
                    torch.arange(boundary + width - (len(prompt) - length), boundary + width + written),
                ]
            ).to(self.device)
            layers = [
                (
                    layer.keys[row : row + 1].index_select(2, columns),
                    layer.values[row : row + 1].index_select(2, columns),
                )
                for layer in output.cache.layers
            ]
            states.append(HeldState(prompt + ids[:written], layers))
        return generations, states

    def assemble(self, sources: list[tuple[HeldState | None, int]], boundary: int) -> DynamicCache:
        """One batch cache: each row's held keys/values right-aligned at ``boundary``, zeros before."""
        reference = next(state for state, _ in sources if state is not None).layers
        layers = []
        for index, (keys, values) in enumerate(reference):
            shape = (len(sources), keys.shape[1], boundary, keys.shape[3])
            batch_keys = keys.new_zeros(shape)
            batch_values = values.new_zeros(shape)
            for row, (state, length) in enumerate(sources):
                if state is not None and length > 0:
                    batch_keys[row, :, boundary - length :] = state.layers[index][0][0, :, :length]
                    batch_values[row, :, boundary - length :] = state.layers[index][1][0, :, :length]
            layers.append((batch_keys, batch_values))
        return DynamicCache(layers)
