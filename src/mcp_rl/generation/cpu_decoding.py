"""Attention and cache for one new token on CPU: what ``CachedTransformersGenerator`` decodes with.

For one query token, transformers calls PyTorch's SDPA, whose CPU kernel in bfloat16 is most of a decoding
step; the same attention as two small matmuls over the grouped heads (softmax in float32) costs a small
fraction of it (``docs/generation.md``). ``DECODE_ATTENTION`` is that, registered with transformers'
``AttentionInterface``; any call that is not a single-query CPU call without gradients (prefill, training,
GPUs) goes to transformers' own SDPA function unchanged.

The cache: ``DynamicLayer.update`` concatenates the whole cache with each new column. ``BufferedLayer``
writes the column into a buffer with room and hands a decoding step the whole buffer (the decode attention
masks the columns not written yet). A strided view of only the written columns would be copied by the
matmuls anyway, which made a step slower than the concatenation, so a step gets the whole buffer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import torch
from transformers import AttentionInterface, AttentionMaskInterface, DynamicCache
from transformers.cache_utils import DynamicLayer
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
    if attention_mask is not None and attention_mask.shape[-1] < key.shape[-2]:
        # A ``BufferedLayer`` hands over its whole buffer: the columns past the mask are not written yet.
        unwritten = key.shape[-2] - attention_mask.shape[-1]
        fill = False if attention_mask.dtype == torch.bool else torch.finfo(attention_mask.dtype).min
        attention_mask = torch.nn.functional.pad(attention_mask, (0, unwritten), value=fill)
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


def decode_mask(*args: Any, **kwargs: Any) -> torch.Tensor | None:
    """SDPA's mask, always written out: a ``BufferedLayer``'s unwritten columns need one to be masked."""
    kwargs["allow_is_causal_skip"] = False
    return sdpa_mask(*args, **kwargs)


AttentionInterface.register(DECODE_ATTENTION, cpu_decode_attention)
AttentionMaskInterface.register(DECODE_ATTENTION, decode_mask)


@contextmanager
def decode_attention(model: Any) -> Iterator[bool]:
    """Within: a model that attends with SDPA uses ``cpu_decode_attention`` (others are left alone); yields
    whether it does (only then may a ``BufferedLayer`` hand attention its whole buffer)."""
    config = model.config
    previous = config._attn_implementation
    if previous == "sdpa":
        config._attn_implementation = DECODE_ATTENTION
    try:
        yield previous == "sdpa"
    finally:
        config._attn_implementation = previous


class BufferedLayer(DynamicLayer):
    """A ``DynamicLayer`` whose keys and values live in buffers with room to grow: appending writes the new
    columns in place instead of concatenating the whole cache. A decoding step (one new token) gets the whole
    buffers, which ``cpu_decode_attention`` masks past the written columns; longer calls get the written
    columns. Only for models attending with ``cpu_decode_attention``."""

    def __init__(self, room: int = 64) -> None:
        super().__init__()
        self.room = room
        self.key_buffer: torch.Tensor | None = None
        self.value_buffer: torch.Tensor | None = None

    @classmethod
    def within(cls, key_buffer: torch.Tensor, value_buffer: torch.Tensor, length: int) -> BufferedLayer:
        """A layer whose buffers' first ``length`` columns are written (no copy)."""
        layer = cls(key_buffer.shape[-2] - length)
        layer.lazy_initialization(key_buffer, value_buffer)
        layer.key_buffer, layer.value_buffer = key_buffer, value_buffer
        layer.keys, layer.values = key_buffer[:, :, :length], value_buffer[:, :, :length]
        return layer

    def adopt(self, keys: torch.Tensor, values: torch.Tensor, capacity: int) -> None:
        """New zeroed buffers of ``capacity`` columns holding ``keys`` and ``values``."""
        shape = (*keys.shape[:2], capacity, keys.shape[-1])
        self.key_buffer, self.value_buffer = keys.new_zeros(shape), values.new_zeros(shape)
        length = keys.shape[-2]
        self.key_buffer[:, :, :length] = keys
        self.value_buffer[:, :, :length] = values

    def update(
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        length, new = self.get_seq_length(), key_states.shape[-2]
        buffered = self.key_buffer is not None and self.keys.data_ptr() == self.key_buffer.data_ptr()
        if not buffered or length + new > self.key_buffer.shape[-2]:  # first use, full, or replaced outside
            held = (self.keys, self.values) if length else (key_states[:, :, :0], value_states[:, :, :0])
            self.adopt(*held, length + new + max(self.room, (length + new) // 4))
        self.key_buffer[:, :, length : length + new] = key_states
        self.value_buffer[:, :, length : length + new] = value_states
        self.keys = self.key_buffer[:, :, : length + new]
        self.values = self.value_buffer[:, :, : length + new]
        if new == 1:
            return self.key_buffer, self.value_buffer
        return self.keys, self.values

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        length = self.get_seq_length()
        if self.key_buffer is None or length == 0:
            return super().batch_select_indices(indices)
        self.key_buffer, self.value_buffer = self.key_buffer[indices], self.value_buffer[indices]
        self.keys, self.values = self.key_buffer[:, :, :length], self.value_buffer[:, :, :length]


def buffered_cache(layers: list[BufferedLayer] | None = None, room: int = 64) -> DynamicCache:
    """A ``DynamicCache`` of ``layers``, or an empty one whose layers will be ``BufferedLayer(room)``."""
    cache = DynamicCache()
    cache.layer_class_to_replicate = lambda: BufferedLayer(room)
    cache.layers = list(layers or [])
    return cache
