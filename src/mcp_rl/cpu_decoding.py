"""Attention for one new token on CPU: what ``CachedTransformersGenerator`` decodes with.

Measured on the search recipe's rollout (SmolLM2-135M in bfloat16, 16 episodes, one thread; a step at 16
rows and ~400 cached tokens):

For one query token, transformers calls PyTorch's SDPA, whose CPU kernel in bfloat16 took 4.4 ms per layer
at 16 rows (0.28 ms at one row): 64% of a decoding step. The same attention as two small matmuls over the
grouped heads (softmax in float32) takes 0.25 ms (0.06 ms). ``DECODE_ATTENTION`` is that, registered with
transformers' ``AttentionInterface``; any call that is not a single-query CPU call without gradients
(prefill, training, GPUs) goes to transformers' own SDPA function unchanged.

Tried and dropped: a cache layer writing each step's column into a preallocated buffer instead of
``DynamicLayer``'s ``torch.cat`` of the whole cache. Its keys and values are then strided views, which the
matmuls copy anyway: 69 ms a step against 55 ms with the concatenation (16 rows, 400 cached tokens).

``decode_attention(model)`` switches a model that uses SDPA to the decode attention for a ``with`` block.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AttentionInterface, AttentionMaskInterface
from transformers.integrations.sdpa_attention import sdpa_attention_forward
from transformers.masking_utils import sdpa_mask

DECODE_ATTENTION = "mcp_rl_cpu_decode"


def cpu_decode_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """Attention of one new token per row over its cached keys: SDPA's result, as two matmuls."""
    batch, heads, query_length, dim = query.shape
    if (
        query_length != 1
        or query.device.type != "cpu"
        or torch.is_grad_enabled()
        or dropout
        or kwargs.get("softcap") is not None
        or kwargs.get("position_bias") is not None
        or kwargs.get("sinks") is not None
    ):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout, scaling, **kwargs)
    kv_heads = key.shape[1]
    # Query head h reads key/value head h // (heads / kv_heads), as transformers' repeat_kv lays them out.
    grouped = query.reshape(batch, kv_heads, heads // kv_heads, dim)
    scores = torch.matmul(grouped, key.transpose(-1, -2)) * (dim**-0.5 if scaling is None else scaling)
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:
            scores = scores.masked_fill(~attention_mask, float("-inf"))
        else:
            scores = scores + attention_mask
    weights = scores.float().softmax(-1).to(value.dtype)
    output = torch.matmul(weights, value)  # batch, kv heads, group, dim
    return output.reshape(batch, 1, heads, dim), None


AttentionInterface.register(DECODE_ATTENTION, cpu_decode_attention)
AttentionMaskInterface.register(DECODE_ATTENTION, sdpa_mask)  # the masks SDPA takes


@contextmanager
def decode_attention(model: Any) -> Iterator[None]:
    """Within: a model that attends with SDPA uses ``cpu_decode_attention`` (others are left alone)."""
    config = model.config
    previous = config._attn_implementation
    if previous == "sdpa":
        config._attn_implementation = DECODE_ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = previous
