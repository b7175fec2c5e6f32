"""``mcp-rl train``: a recipe → model, tool pool, rewards, dataset, trainer; checkpoints, logs, traces, plot.

Everything a run writes lands in its output folder:

    checkpoint-N/        atomic checkpoints (resume with --resume)
    final/               the trained model and tokenizer
    metrics.jsonl        one line per logged step (TRL's metrics, rewards, tool counters)
    traces.jsonl         every rollout: turns, calls, observations, rewards
    summary.json         the run in numbers;  training.png: reward and exact match over steps
    recipe.yaml          the resolved recipe;  tool_servers.log: the servers' stderr
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import torch
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from mcp_rl.callbacks import MetricsFile, RunProgress
from mcp_rl.configs import Recipe
from mcp_rl.data import check_data, load_split
from mcp_rl.models import cpu_supports_bf16, load_model, train_top_layers
from mcp_rl.pipeline import RolloutPipeline
from mcp_rl.plots import plot_metrics, read_metrics
from mcp_rl.recipe import recipe_to_yaml
from mcp_rl.rewards import build_reward_functions
from mcp_rl.trainer import MCPGRPOTrainer, last_complete_checkpoint


def grpo_config(recipe: Recipe, output_dir: Path) -> Any:
    """``GRPOConfig`` from the recipe's ``trainer`` section, over defaults that suit the machine."""
    from trl import GRPOConfig

    on_gpu = torch.cuda.is_available()
    defaults: dict[str, Any] = {
        "output_dir": str(output_dir),
        "use_cpu": not on_gpu,
        # TRL defaults to bf16, which fails on a CPU without it; with AVX512-BF16/AMX autocast is faster.
        "bf16": on_gpu or cpu_supports_bf16(),
        "gradient_checkpointing": False,
        "report_to": "none",
        "logging_steps": 1,
        "save_strategy": "steps",
        "save_steps": 20,
        "max_completion_length": recipe.rollout.max_completion_tokens,
        "temperature": recipe.rollout.temperature,
        "top_p": recipe.rollout.top_p,
        "seed": recipe.data.seed,
        # TRL's sampler would reshuffle the curriculum's order; the questions are already shuffled by seed.
        "shuffle_dataset": not recipe.data.curriculum,
        "disable_tqdm": True,  # our own bar shows reward, EM and tool calls instead of raw log dicts
    }
    settings = {**defaults, **recipe.trainer, "output_dir": str(output_dir)}
    return GRPOConfig(**settings)


def training_dataset(recipe: Recipe) -> Any:
    """Train questions, shuffled with the recipe's seed; single-hop first when ``curriculum`` is on."""
    dataset = load_split(recipe, "train").shuffle(seed=recipe.data.seed)
    if recipe.data.train_limit is not None:
        dataset = dataset.select(range(min(recipe.data.train_limit, len(dataset))))
    if recipe.data.curriculum and "hops" in dataset.column_names:
        hops = dataset["hops"]
        dataset = dataset.select(sorted(range(len(hops)), key=hops.__getitem__))  # stable: keeps the shuffle
    return dataset


def peft_config(recipe: Recipe) -> Any:
    if not recipe.model.lora:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=recipe.model.lora_r,
        lora_alpha=recipe.model.lora_alpha,
        lora_dropout=recipe.model.lora_dropout,
        target_modules=recipe.model.lora_target_modules or "all-linear",
        task_type="CAUSAL_LM",
    )


def train(
    recipe: Recipe, output_dir: str | Path, *, resume: bool = False, model_path: str | None = None
) -> dict[str, Any]:
    """Run a recipe's training; returns the summary also written to ``summary.json``."""
    check_data(recipe)  # a missing column fails here, before anything is written or loaded
    output = Path(output_dir)
    output.mkdir(parents=True, exist_ok=True)
    checkpoint = last_complete_checkpoint(output) if resume else None
    if resume and checkpoint is None:
        print(f"no complete checkpoint in {output}: starting from the beginning")
    if not resume:
        for stale in ("metrics.jsonl", "traces.jsonl"):
            (output / stale).unlink(missing_ok=True)
    if model_path:
        recipe.model.name_or_path = model_path
    (output / "recipe.yaml").write_text(recipe_to_yaml(recipe))  # the run as it will be, --model included
    started = time.monotonic()
    model, tokenizer = load_model(recipe.model)
    if recipe.model.train_top_layers is not None:
        train_top_layers(model, recipe.model.train_top_layers)
    args = grpo_config(recipe, output)
    with (
        (output / "tool_servers.log").open("a") as errlog,
        RolloutPipeline.from_recipe(recipe, model, tokenizer, errlog=errlog, seed=args.seed) as pipeline,
    ):
        reward_funcs, args.reward_weights = build_reward_functions(recipe.rewards, pipeline.pool)
        trainer = MCPGRPOTrainer(
            model=model,
            reward_funcs=reward_funcs,
            args=args,
            train_dataset=training_dataset(recipe),
            processing_class=tokenizer,
            pipeline=pipeline,
            peft_config=peft_config(recipe),
            trace_path=output / "traces.jsonl",
            callbacks=[MetricsFile(output / "metrics.jsonl"), RunProgress()],
        )
        # Our bar replaces both of transformers' own (the bar, or raw log dicts printed when it is off).
        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
        trainable = trainer.model.num_parameters(only_trainable=True)  # under LoRA: the adapters
        trainer.train(resume_from_checkpoint=checkpoint)
        final = output / "final"
        trainer.save_model(str(final))
        tokenizer.save_pretrained(str(final))
    metrics = read_metrics(output / "metrics.jsonl")
    plot = plot_metrics(metrics, output / "training.png")
    summary = summarize(metrics, time.monotonic() - started, resumed_from=checkpoint)
    summary["trainable_parameters"] = trainable
    summary["plot"] = str(plot) if plot else None
    summary["final_model"] = str(output / "final")
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def summarize(metrics: list[dict[str, Any]], wall_s: float, resumed_from: str | None) -> dict[str, Any]:
    """First and last steps' numbers, so a run reads in one glance."""
    steps = [m for m in metrics if "reward" in m]

    def window(rows: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in rows if key in r]
        return sum(values) / len(values) if values else None

    head, tail = steps[:5], steps[-5:]
    keys = [
        "reward",
        "rewards/exact_match/mean",
        "rewards/f1/mean",
        "rollout/calls_per_trajectory",
        "rollout/answered",
    ]
    return {
        "steps": steps[-1]["step"] if steps else 0,
        "wall_s": round(wall_s, 1),
        "resumed_from": resumed_from,
        "first_5_steps": {k: window(head, k) for k in keys},
        "last_5_steps": {k: window(tail, k) for k in keys},
    }
