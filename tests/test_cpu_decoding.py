"""The CPU decode attention against transformers' own SDPA attention, and the generator's sampler."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

from mcp_rl.generation.base import SamplingParams
from mcp_rl.generation.cached import CachedTransformersGenerator
from mcp_rl.generation.cpu_decoding import (
    DECODE_ATTENTION,
    BufferedLayer,
    cpu_decode_attention,
    decode_attention,
)


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


def test_buffered_layer_writes_in_place_and_hands_decoding_the_whole_buffer() -> None:
    keys = torch.randn(2, 3, 5, 4)
    layer = BufferedLayer.within(torch.cat([keys, torch.zeros(2, 3, 3, 4)], 2), torch.zeros(2, 3, 8, 4), 5)
    assert layer.get_seq_length() == 5
    step = torch.randn(2, 3, 1, 4)
    whole_keys, _ = layer.update(step, step)
    assert whole_keys.shape[-2] == 8 and layer.get_seq_length() == 6  # the buffer, not just what is written
    torch.testing.assert_close(layer.keys, torch.cat([keys, step], 2))
    layer.batch_select_indices(torch.tensor([1, 1, 0]))
    assert layer.key_buffer.shape == (3, 3, 8, 4)
    torch.testing.assert_close(layer.keys[2], torch.cat([keys, step], 2)[0])
    more = torch.randn(3, 3, 4, 4)  # past the room: the buffer grows and keeps what it held
    written, _ = layer.update(more, more)
    assert written.shape[-2] == 10 and layer.key_buffer.shape[-2] > 10
    torch.testing.assert_close(written[:, :, 6:], more)


def test_decode_attention_masks_a_buffers_unwritten_columns() -> None:
    query, key, value, mask = attention_inputs(torch.float32)
    module = SimpleNamespace(num_key_value_groups=3, is_causal=True)
    padded = [torch.cat([t, torch.randn(5, 3, 6, 16)], 2) for t in (key, value)]  # 6 columns not written
    with torch.no_grad():
        whole, _ = cpu_decode_attention(module, query, *padded, mask)
        exact, _ = sdpa_attention_forward(module, query, key, value, mask)
    torch.testing.assert_close(whole, exact, rtol=1e-5, atol=1e-6)
