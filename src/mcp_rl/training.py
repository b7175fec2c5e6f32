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
import math
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from mcp_rl.assembly import recipe_parser, tool_pool
from mcp_rl.configs import Recipe
from mcp_rl.data import load_qa
from mcp_rl.models import cpu_supports_bf16, load_model, train_top_layers
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
    dataset = load_qa(recipe.data.train, recipe.data.train_split, None).shuffle(seed=recipe.data.seed)
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


class MetricsFile(TrainerCallback):
    """Every log line as JSON, so a run can be plotted or compared without a tracking service."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        if state.is_world_process_zero and logs:
            with self.path.open("a") as out:
                out.write(json.dumps({"step": state.global_step, "time": time.time(), **logs}) + "\n")


class RunProgress(TrainerCallback):
    """One progress bar: step, reward, exact match, tool calls per second, ETA."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.started = time.monotonic()

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if state.is_world_process_zero:
            self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc="train", unit="step")

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        if self.bar is None or not logs or "reward" not in logs:
            return
        self.bar.n = state.global_step
        elapsed = max(1e-9, time.monotonic() - self.started)
        calls = logs.get("tools/calls", 0.0)
        self.bar.set_postfix(
            reward=f"{logs['reward']:.3f}",
            em=f"{logs.get('rewards/exact_match/mean', float('nan')):.3f}",
            calls_s=f"{calls / max(1e-9, logs.get('rollout/total_s', elapsed)):.1f}",
        )
        self.bar.refresh()

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.bar is not None:
            self.bar.n = state.global_step
            self.bar.close()


def read_metrics(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def trailing_mean(values: Sequence[float], window: int) -> list[float]:
    """Mean of the last ``window`` values at each point (fewer at the start); NaNs are skipped."""
    means = []
    for i in range(len(values)):
        recent = [v for v in values[max(0, i - window + 1) : i + 1] if not math.isnan(v)]
        means.append(sum(recent) / len(recent) if recent else math.nan)
    return means


def plot_metrics(metrics: list[dict[str, Any]], path: Path, window: int = 5) -> Path | None:
    """Reward per function and tool behaviour over steps, as a PNG: each step faint, a trailing mean solid.

    A step scores only a few questions, so single steps swing widely; the trailing mean is the trend.
    """
    rows = [m for m in metrics if "reward" in m]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [m["step"] for m in rows]
    reward_keys = sorted({k for m in rows for k in m if k.startswith("rewards/") and k.endswith("/mean")})
    panels = {
        "reward": [("reward", "total reward")] + [(k, k.split("/")[1]) for k in reward_keys],
        "behaviour": [
            ("rollout/calls_per_trajectory", "tool calls / episode"),
            ("rollout/answered", "answered"),
            ("rollout/parse_errors_per_trajectory", "parse errors / episode"),
        ],
    }
    figure, axes = plt.subplots(1, len(panels), figsize=(12, 4.5))
    for axis, (title, series) in zip(axes, panels.items(), strict=True):
        for key, label in series:
            values = [float(m.get(key, math.nan)) for m in rows]
            if all(math.isnan(v) for v in values):
                continue
            (line,) = axis.plot(steps, values, alpha=0.25, linewidth=1)
            axis.plot(steps, trailing_mean(values, window), color=line.get_color(), linewidth=2, label=label)
        axis.set_xlabel("step")
        axis.set_title(f"{title} (solid: mean of the last {window} steps)")
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


def train(
    recipe: Recipe, output_dir: str | Path, *, resume: bool = False, model_path: str | None = None
) -> dict[str, Any]:
    """Run a recipe's training; returns the summary also written to ``summary.json``."""
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
    (output / "recipe.yaml").write_text(recipe_to_yaml(recipe))
    started = time.monotonic()
    model, tokenizer = load_model(recipe.model)
    if recipe.model.train_top_layers is not None:
        train_top_layers(model, recipe.model.train_top_layers)
    errlog = (output / "tool_servers.log").open("a")
    pool = tool_pool(recipe, errlog).start()
    try:
        reward_funcs, weights = build_reward_functions(recipe.rewards, pool)
        args = grpo_config(recipe, output)
        args.reward_weights = weights
        trainer = MCPGRPOTrainer(
            model=model,
            reward_funcs=reward_funcs,
            args=args,
            train_dataset=training_dataset(recipe),
            processing_class=tokenizer,
            pool=pool,
            parser=recipe_parser(recipe),
            prompt=recipe.prompt,
            rollout=recipe.rollout,
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
    finally:
        pool.close()
        errlog.close()
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
