"""Does an episode fit the model's context? Checked once, when a pipeline first renders its prompt.

A tool's description is the server's to write: one that runs to megabytes makes every prompt longer than
the model can read, and generation would fail (or attend past its positions) deep into a run. The check
renders the fixed part of the prompt (system text, tool schemas, few-shot turns, an empty question), adds
the episode's budget of model and observation tokens, and names the tool that takes the most room.
"""

from __future__ import annotations

import json
from typing import Any

from mcp_rl.config.sections import RolloutConfig
from mcp_rl.env.prompts import PromptBuilder, template_fields
from mcp_rl.errors import ConfigError

__all__ = ["check_prompt_fits", "context_tokens", "first_prompt_tokens"]

# transformers' model_max_length when a tokenizer states none is int(1e30): no limit at all.
_NO_LIMIT = 10**12


def context_tokens(tokenizer: Any, model: Any = None) -> int | None:
    """The most tokens the model reads: its ``max_position_embeddings`` and the tokenizer's
    ``model_max_length``, whichever is smaller; None when neither says."""
    limits = [
        value
        for value in (
            getattr(getattr(model, "config", None), "max_position_embeddings", None),
            getattr(tokenizer, "model_max_length", None),
        )
        if isinstance(value, int) and 0 < value < _NO_LIMIT
    ]
    return min(limits) if limits else None


def first_prompt_tokens(builder: PromptBuilder) -> int:
    """Tokens of the prompt every episode starts with, the question itself left empty."""
    return len(
        builder.encode(builder.messages(dict.fromkeys(template_fields(builder.config.user_template), "")))
    )


def check_prompt_fits(builder: PromptBuilder, rollout: RolloutConfig, context: int | None) -> int | None:
    """The first prompt's token count; ``ConfigError`` (one line: the tool that takes the room, the fixes)
    when it and ``rollout.max_completion_tokens`` do not fit in ``context`` tokens. None without a limit."""
    if context is None:
        return None
    prompt = first_prompt_tokens(builder)
    budget = rollout.max_completion_tokens
    if prompt + budget <= context:
        return prompt
    cause, fixes = "its system text and few-shot turns", ["shorten prompt.system or prompt.few_shot"]
    if builder.tools and builder.config.tools_in != "none":
        tokenizer = builder.tokenizer
        sizes = [
            len(tokenizer(json.dumps(tool.as_openai()), add_special_tokens=False)["input_ids"])
            for tool in builder.tools
        ]
        size = max(sizes)
        tool = builder.tools[sizes.index(size)]
        if size * 4 >= prompt:  # it is the tool, not the system text, that takes the room
            cause = f"tool {tool.server}/{tool.remote_name}'s description and schema take about {size}"
            fixes = [
                "shorten that description on the server",
                f"leave the tool out (mcpServers.{tool.server}.excludeTools: [{tool.remote_name}])",
                "set prompt.tools_in: none",
            ]
    if prompt < context:
        fixes.append("lower rollout.max_completion_tokens")
    fixes.append("use a model with a longer context")
    raise ConfigError(
        f"the first prompt is {prompt} tokens ({cause}) and an episode adds up to "
        f"rollout.max_completion_tokens={budget} more, but the model reads at most {context} tokens; "
        f"{', '.join(fixes[:-1])}, or {fixes[-1]}"
    )
