"""The options of each built-in reward as a pydantic model, so a recipe's reward options are validated once,
by field, when the recipe loads.

``BUILTIN_REWARD_OPTIONS`` maps each built-in reward's name (``mcp_rl.rewards.BUILTIN_REWARDS``, the same
keys) to its model. ``mcp_rl.config.recipe`` validates a built-in reward's options against it at load;
the registry can build the reward from the validated model instead of reading the options again.
Options naming Python objects (a judge's model object, a ``tool_verify`` arguments function) are typed
``Any`` here: a recipe writes them as text, code may pass the objects.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from mcp_rl.config.sections import Section, YamlFloat

__all__ = [
    "BUILTIN_REWARD_OPTIONS",
    "FormatOptions",
    "JudgeOptions",
    "RewardOptions",
    "ToolVerifyOptions",
]


class RewardOptions(Section):
    """Options every reward takes; a reward without options of its own takes only these."""

    label: str | None = Field(
        default=None, description="Name the reward is logged under (default: the reward's name)."
    )


class FormatOptions(RewardOptions):
    """``format``: did the episode end in a parseable answer, without malformed turns on the way."""

    partial_credit: YamlFloat = Field(
        default=0.5, description="Score of an episode that answered after a turn with parse errors."
    )


class JudgeOptions(RewardOptions):
    """``judge``: a model grades each answer against the reference, over an OpenAI-compatible API or a local
    transformers model."""

    backend: Literal["openai", "transformers"] = Field(
        default="openai", description="openai (an OpenAI-compatible endpoint) or transformers (local)."
    )
    model: Any = Field(
        description="The judge model: its API name (openai), or a hub id or folder (transformers)."
    )
    base_url: str | None = Field(default=None, description="openai: the endpoint, e.g. http://host:8000/v1.")
    api_key_env: str | None = Field(
        default=None, description="openai: environment variable holding the API key."
    )
    max_concurrency: int = Field(default=8, description="openai: requests in flight at once.", ge=1)
    timeout_s: YamlFloat = Field(default=30.0, description="openai: seconds per request.", gt=0)
    retries: int = Field(default=2, description="openai: retries of a failed request.", ge=0)
    max_tokens: int = Field(default=64, description="openai: most tokens of a verdict.", ge=1)
    temperature: YamlFloat = Field(default=0.0, description="openai: sampling temperature.", ge=0)
    tokenizer: Any = Field(default=None, description="transformers: tokenizer id (default: the model's).")
    max_new_tokens: int = Field(default=16, description="transformers: most tokens of a verdict.", ge=1)
    batch_size: int = Field(default=8, description="transformers: answers judged per batch.", ge=1)
    system_prompt: str | None = Field(default=None, description="System message of the judge's prompt.")
    template: str | None = Field(
        default=None, description="The judge's prompt, formatted with the row's columns and the answer."
    )
    max_score: YamlFloat = Field(
        default=10.0, description="The verdict scale's top: score / max_score.", gt=0
    )


class ToolVerifyOptions(RewardOptions):
    """``tool_verify``: call an MCP tool after the episode and score what it returns."""

    tool: str = Field(description="The tool to call, TOOL or SERVER/TOOL.")
    arguments: Any = Field(
        description="Its arguments: a mapping of templates over the row's columns and the answer, or "
        "'package.module:function' building them."
    )
    expect: Literal["true", "answer", "golden"] = Field(
        default="true",
        description="What a passing result says: true (the text is true), answer (the model's answer), "
        "golden (a reference answer).",
    )
    score: Any = Field(
        default=None, description="'package.module:function' scoring the result instead of `expect`."
    )
    compare: str | None = Field(
        default=None, description="An operator of mcp_rl.rewards.compare comparing the result with expected."
    )
    expected: Any = Field(default=None, description="compare: a template of what the result should be.")
    reference: dict[str, Any] | None = Field(
        default=None, description="compare: a tool call whose result the result should match."
    )
    tolerance: YamlFloat | None = Field(default=None, description="compare number: the allowed difference.")
    path: str | None = Field(default=None, description="compare json_path: where in the result to look.")
    timeout_s: YamlFloat | None = Field(
        default=None, description="Seconds the call may take; null = the server's.", gt=0
    )
    error_score: YamlFloat = Field(default=0.0, description="Score when the call fails.")


BUILTIN_REWARD_OPTIONS: dict[str, type[RewardOptions]] = {
    "exact_match": RewardOptions,
    "f1": RewardOptions,
    "format": FormatOptions,
    "tool_use": RewardOptions,
    "answer_retrieved": RewardOptions,
    "judge": JudgeOptions,
    "tool_verify": ToolVerifyOptions,
    "called_twice": RewardOptions,
}
