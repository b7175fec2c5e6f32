"""The CPU decode attention against transformers' own SDPA attention, and the generator's sampler."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from mcp_rl.cached_generation import CachedTransformersGenerator
from mcp_rl.cpu_decoding import DECODE_ATTENTION, cpu_decode_attention, decode_attention
from mcp_rl.generation import SamplingParams


def attention_inputs(dtype: torch.dtype, rows: int = 5, keys: int = 37) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(rows, 9, 1, 16, generator=generator).to(dtype)
    key = torch.randn(rows, 3, keys, 16, generator=generator).to(dtype)
    value = torch.randn(rows, 3, keys, 16, generator=generator).to(dtype)
    mask = torch.ones(rows, 1, 1, keys, dtype=torch.bool)
    for row in range(rows):
        mask[row, ..., : 3 * row] = False  # rows right-aligned after gaps of different widths
    return query, key, value, mask


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("mask_kind", ["bool", "additive", "none"])
def test_decode_attention_is_sdpas(dtype: torch.dtype, mask_kind: str) -> None:
    query, key, value, mask = attention_inputs(dtype)
    if mask_kind == "additive":
        mask = torch.zeros(mask.shape, dtype=dtype).masked_fill(~mask, torch.finfo(dtype).min)
    elif mask_kind == "none":
        mask = None
    module = SimpleNamespace(num_key_value_groups=3, is_causal=True)
    with torch.no_grad():
        ours, _ = cpu_decode_attention(module, query, key, value, mask, scaling=0.25)
        theirs, _ = sdpa_attention_forward(module, query, key, value, mask, scaling=0.25)
    assert ours.shape == theirs.shape == (5, 1, 9, 16)
    tolerance = {"rtol": 2e-2, "atol": 2e-2} if dtype == torch.bfloat16 else {"rtol": 1e-5, "atol": 1e-6}
    torch.testing.assert_close(ours, theirs, **tolerance)


def test_prefill_and_training_calls_go_to_sdpa() -> None:
    query, key, value, mask = attention_inputs(torch.float32)
    module = SimpleNamespace(num_key_value_groups=3, is_causal=True)
    query = query.requires_grad_()
    ours, _ = cpu_decode_attention(module, query, key, value, mask)  # gradients on: SDPA's own
    ours.sum().backward()
    assert query.grad is not None and query.grad.abs().sum() > 0


def test_decode_attention_switches_only_sdpa_models_and_restores() -> None:
    for before, during in [("sdpa", DECODE_ATTENTION), ("eager", "eager")]:
        model = SimpleNamespace(config=SimpleNamespace(_attn_implementation=before))
        with decode_attention(model):
            assert model.config._attn_implementation == during
        assert model.config._attn_implementation == before


def test_sampler_draws_from_the_warped_distribution() -> None:
    logits = torch.tensor([[2.0, 1.0, 0.0, -1.0, -8.0, 0.5]]).repeat(20000, 1)
    torch.manual_seed(3)
    sampling = SamplingParams(max_new_tokens=1, temperature=0.7, top_k=4)
    drawn = CachedTransformersGenerator.pick(logits, sampling)
    expected = torch.softmax(logits[0] / 0.7, -1)
    expected[[3, 4]] = 0  # outside the top 4
    expected /= expected.sum()
    frequencies = torch.bincount(drawn, minlength=6).float() / len(drawn)
    assert frequencies[3] == 0 and frequencies[4] == 0
    torch.testing.assert_close(frequencies, expected, atol=0.015, rtol=0)
