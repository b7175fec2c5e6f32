"""``TRLVLLMGenerator``: generation through TRL's own vLLM integration, for a trainer with ``use_vllm=True``.

TRL owns the vLLM engine (colocated or a server) and pushes new weights to it before each rollout; this
generator only sets each turn's stop strings, token budget and sampling, and hands back vLLM's sampled-token
logprobs for TRL's importance-sampling correction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from mcp_rl.generation.base import Generation, SamplingParams, cut_at_stop

__all__ = ["TRLVLLMGenerator"]


class TRLVLLMGenerator:
    """Generation through TRL's ``VLLMGeneration`` (colocate or server mode), on CUDA machines.

    ``sync`` has nothing to do: TRL's ``rollout_func`` path syncs vLLM's weights itself. In server mode
    every rank's prompts are gathered in each call, so the engine must call it in lockstep.
    """

    def __init__(self, vllm_generation: Any, tokenizer: Any, eos_token_ids: Sequence[int], *, lockstep: bool):
        self.vllm = vllm_generation
        self.tokenizer = tokenizer
        self.eos_token_ids = set(eos_token_ids)
        self.lockstep = lockstep

    def sync(self, model: Any, step: int) -> None:
        """TRL's ``rollout_func`` path syncs vLLM's weights itself before calling us."""

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        vllm = self.vllm
        saved = (vllm.generation_kwargs, vllm.max_completion_length, vllm.temperature, vllm.top_p, vllm.top_k)
        vllm.generation_kwargs = {
            **saved[0],
            "stop": list(sampling.stop_strings),
            "include_stop_str_in_output": True,
        }
        vllm.max_completion_length = sampling.max_new_tokens
        vllm.temperature, vllm.top_p = sampling.temperature, sampling.top_p
        vllm.top_k = sampling.top_k if sampling.top_k > 0 else -1
        try:
            _, completions, logprobs, _ = vllm.generate(
                prompts=[list(p) for p in prompts], images=None, num_generations=1
            )
        finally:
            (vllm.generation_kwargs, vllm.max_completion_length, vllm.temperature, vllm.top_p, vllm.top_k) = (
                saved
            )
        generations = []
        for ids, token_logprobs in zip(completions, logprobs, strict=True):
            cut, reason = cut_at_stop(ids, self.tokenizer, sampling.stop_strings, self.eos_token_ids)
            sampled = [float("nan") if lp[0] is None else lp[0] for lp in token_logprobs]
            generations.append(Generation(cut, reason, sampled[: len(cut)]))
        return generations
