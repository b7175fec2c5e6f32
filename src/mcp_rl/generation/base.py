"""Generators: token ids in → token ids (and, where the backend has them, logprobs) out, batched.

One small interface so the rollout engine does not care whether transformers or vLLM generates. Every
backend cuts each sequence right after the first stop string (the end of an action) or end-of-sequence
token, and says which of the two ended it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import torch

FinishReason = Literal["stop", "eos", "length"]


@dataclass
class SamplingParams:
    """How to sample one turn. ``temperature == 0`` means greedy."""

    max_new_tokens: int = 64
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    stop_strings: list[str] = field(default_factory=list)


@dataclass
class Generation:
    token_ids: list[int]
    finish_reason: FinishReason
    logprobs: list[float] | None = None


class Generator(Protocol):
    """What the rollout engine and the trainer need from a generation backend.

    ``lockstep`` is true when every process must call ``generate`` equally often (a backend that gathers
    prompts from all ranks), so the engine keeps calling it after this rank's episodes have ended.
    ``sync`` is called before each rollout with the policy as it is now (unwrapped from any distributed
    wrapper) and the optimizer step it belongs to: a backend that generates with the policy object itself
    takes the object; one with its own copy of the weights reloads them when the step changed.
    A generator that keeps per-episode state between calls may also define ``hold(sequences)``: with
    episode scheduling the engine calls it before each ``generate`` with the episodes still waiting for
    their tools, which that call does not continue.
    """

    lockstep: bool

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]: ...

    def sync(self, model: Any, step: int) -> None: ...


def cut_at_stop(
    token_ids: Sequence[int], tokenizer: Any, stop_strings: Sequence[str], eos_token_ids: set[int]
) -> tuple[list[int], FinishReason]:
    """Keep tokens up to and including the one that completes the earliest stop string, or the first EOS.

    Batched backends keep producing (padding) tokens for rows that already stopped; this finds the real end.
    The token that completes a stop string is kept whole, so the model's tokens are never re-tokenized.
    """
    ids = list(token_ids)
    eos_at = next((i for i, t in enumerate(ids) if t in eos_token_ids), None)
    search_ids = ids if eos_at is None else ids[:eos_at]
    if stop_strings and search_ids:
        text = tokenizer.decode(search_ids, skip_special_tokens=False)
        ends = [text.find(stop) + len(stop) for stop in stop_strings if stop in text]
        if ends:
            stop_end = min(ends)
            # The shortest prefix whose text reaches the stop string's end (decoded length grows with tokens).
            low, high = 1, len(search_ids)
            while low < high:
                middle = (low + high) // 2
                if len(tokenizer.decode(search_ids[:middle], skip_special_tokens=False)) >= stop_end:
                    high = middle
                else:
                    low = middle + 1
            return search_ids[:low], "stop"
    if eos_at is not None:
        return ids[: eos_at + 1], "eos"
    return ids, "length"


class TransformersGenerator:
    """``model.generate`` with left padding and a KV cache; stop strings by transformers' own criteria.

    It generates with the policy object itself, so ``sync`` only points it at the current (unwrapped) one.
    """

    lockstep = False

    def __init__(self, model: Any, tokenizer: Any, batch_size: int | None = None) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        eos = model.generation_config.eos_token_id if model.generation_config is not None else None
        eos_ids = eos if isinstance(eos, list) else [eos] if eos is not None else []
        if tokenizer.eos_token_id is not None:
            eos_ids.append(tokenizer.eos_token_id)
        self.eos_token_ids = set(eos_ids)
        self.pad_token_id = (
            tokenizer.pad_token_id if tokenizer.pad_token_id is not None else min(self.eos_token_ids)
        )

    def sync(self, model: Any, step: int) -> None:
        self.model = model

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        step = self.batch_size or len(prompts) or 1
        results: list[Generation] = []
        for start in range(0, len(prompts), step):
            results.extend(self._generate_batch(prompts[start : start + step], sampling))
        return results

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    @contextmanager
    def evaluating(self) -> Iterator[None]:
        """The policy in eval mode (no dropout) while generating, its mode restored afterwards."""
        was_training = self.model.training
        self.model.eval()
        try:
            yield
        finally:
            self.model.train(was_training)

    def generate_options(self, sampling: SamplingParams) -> dict[str, Any]:
        """``model.generate`` keyword arguments for one turn: budget, sampling, EOS and stop strings."""
        greedy = sampling.temperature <= 0
        options: dict[str, Any] = {
            "max_new_tokens": sampling.max_new_tokens,
            "do_sample": not greedy,
            "pad_token_id": self.pad_token_id,
            "eos_token_id": sorted(self.eos_token_ids),
        }
        if not greedy:
            options.update(
                temperature=sampling.temperature, top_p=sampling.top_p, top_k=sampling.top_k or None
            )
        else:
            options.update(temperature=None, top_p=None, top_k=None)
        if sampling.stop_strings:
            options.update(stop_strings=list(sampling.stop_strings), tokenizer=self.tokenizer)
        return options

    @torch.no_grad()
    def _generate_batch(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        width = max(len(p) for p in prompts)
        input_ids = torch.full((len(prompts), width), self.pad_token_id, dtype=torch.long)
        attention_mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            input_ids[row, width - len(prompt) :] = torch.tensor(list(prompt), dtype=torch.long)
            attention_mask[row, width - len(prompt) :] = 1
        with self.evaluating():
            output = self.model.generate(
                input_ids=input_ids.to(self.device),
                attention_mask=attention_mask.to(self.device),
                **self.generate_options(sampling),
            )
        generations = []
        for row in output[:, width:].tolist():
            ids, reason = cut_at_stop(row, self.tokenizer, sampling.stop_strings, self.eos_token_ids)
            generations.append(Generation(ids, reason))
        return generations
