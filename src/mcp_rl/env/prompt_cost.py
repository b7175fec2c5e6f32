"""What a recipe's prompt costs before any training: its tokens, the share its tool schemas take, and the
seconds this machine spends on it per GRPO step.

The seconds are measured, not looked up: one forward and backward pass of the recipe's model over the
real prompt (bf16 autocast where the trainer would use it), times the samples a step takes. Generation and
the completion tokens come on top, so this is a floor; ``mcp-rl train`` prints the pace it measures after
its first steps.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from mcp_rl.config.sections import Recipe
from mcp_rl.env.parsers import Parser
from mcp_rl.env.prompts import PromptBuilder
from mcp_rl.generation.models import cpu_supports_bf16
from mcp_rl.tools import ToolSpec

__all__ = ["PromptCost", "measure_prompt_cost", "prompt_seconds", "prompt_tokens", "samples_per_step"]


@dataclass(frozen=True)
class PromptCost:
    """A recipe's first prompt in tokens, and (when a model was timed) its seconds per step here."""

    tokens: int
    schema_tokens: int  # what the tool descriptions add, however the prompt renders them
    tools: int
    samples_per_step: int
    seconds_per_step: float | None = None

    def line(self) -> str:
        """One line for the terminal: tokens, schema share, and the measured floor per step."""
        text = (
            f"cost: prompt {self.tokens:,} tokens ({self.schema_tokens:,} of them the {self.tools} tool "
            f"schema(s)), {self.samples_per_step} samples a step"
        )
        if self.seconds_per_step is not None:
            text += (
                f"; reading the prompt alone takes ~{self.seconds_per_step / 60:.1f} min a step on this "
                f"machine (forward+backward, timed here; generation comes on top)"
            )
        return text


def samples_per_step(trainer: Mapping[str, Any]) -> int:
    """Completions one optimizer step generates and trains on (one process), as TRL's GRPOConfig counts
    them: the batch size times the accumulation steps."""
    from trl import GRPOConfig

    defaults = {f.name: f.default for f in dataclasses.fields(GRPOConfig)}
    keys = ("per_device_train_batch_size", "gradient_accumulation_steps")
    batch, accumulation = (int(trainer.get(key, defaults[key])) for key in keys)
    return batch * accumulation


def prompt_tokens(
    recipe: Recipe, parser: Parser, tools: Sequence[ToolSpec], tokenizer: Any, row: Mapping[str, Any]
) -> tuple[list[int], int]:
    """The prompt ids of ``row`` and how many tokens fewer it has without the tool descriptions."""
    with_tools = PromptBuilder(recipe.prompt, parser, tools, tokenizer)
    without = PromptBuilder(recipe.prompt, parser, [], tokenizer)
    ids = with_tools.encode(with_tools.messages(row))
    return ids, len(ids) - len(without.encode(without.messages(row)))


def prompt_seconds(model: Any, ids: Sequence[int]) -> float:
    """Seconds of one forward and backward pass of ``model`` over ``ids``, as the trainer would run it."""
    bf16 = model.device.type == "cpu" and cpu_supports_bf16()
    model.train()

    def forward_backward(tokens: Sequence[int]) -> float:
        inputs = torch.tensor([list(tokens)], device=model.device)
        started = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            loss = model(input_ids=inputs, labels=inputs).loss
        loss.backward()
        model.zero_grad(set_to_none=True)
        return time.perf_counter() - started

    forward_backward(ids[:8])  # the first pass also pays for one-time kernel set-up, which a run pays once
    return forward_backward(ids)


def measure_prompt_cost(
    recipe: Recipe,
    parser: Parser,
    tools: Sequence[ToolSpec],
    row: Mapping[str, Any],
    *,
    tokenizer: Any,
    model: Any = None,
) -> PromptCost:
    """The cost of ``row``'s prompt under ``recipe``; seconds only when ``model`` is given."""
    ids, schema_tokens = prompt_tokens(recipe, parser, tools, tokenizer, row)
    samples = samples_per_step(recipe.trainer)
    seconds = None if model is None else prompt_seconds(model, ids) * samples
    return PromptCost(len(ids), schema_tokens, len(tools), samples, seconds)
