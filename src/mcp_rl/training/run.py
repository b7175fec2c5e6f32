"""``mcp-rl train``: a recipe → Environment (servers, rubric), model, dataset, trainer; checkpoints, logs,
traces, plot.

Everything a run writes lands in its output folder:

    checkpoint-N/        atomic checkpoints (resume with --resume)
    final/               the trained model and tokenizer
    metrics.jsonl        one line per logged step (TRL's metrics, rewards, tool counters)
    traces.jsonl         every rollout: turns, calls, observations, rewards
    summary.json         the run in numbers;  training.png: reward and exact match over steps
    recipe.yaml          the resolved recipe;  tool_servers.log: the servers' stderr (capped, rotated)
"""

from __future__ import annotations

import contextlib
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from mcp_rl.config.recipe import recipe_to_yaml
from mcp_rl.config.sections import Recipe
from mcp_rl.env.data import check_data, load_split
from mcp_rl.env.environment import Environment
from mcp_rl.env.prompt_cost import measure_prompt_cost
from mcp_rl.errors import ConfigError, DataError
from mcp_rl.generation.models import cpu_supports_bf16, load_model, train_top_layers
from mcp_rl.tools.server_logs import command_server_log
from mcp_rl.training.callbacks import MetricsFile, RunProgress
from mcp_rl.training.checkpoints import (
    OptimizerStateInNewestOnly,
    last_complete_checkpoint,
    remove_incomplete_checkpoints,
    run_checkpoints,
)
from mcp_rl.training.plots import plot_metrics, read_metrics
from mcp_rl.training.probes import DriftProbes, probe_demonstrations
from mcp_rl.training.sft import completed_batches, load_warm_start
from mcp_rl.training.trainer import MCPGRPOTrainer
from mcp_rl.training.warm_start import played_demonstrations, warm_start


def grpo_config(recipe: Recipe, output_dir: Path) -> Any:
    """``GRPOConfig`` from the recipe's ``trainer`` section, over defaults that suit the machine."""
    from trl import GRPOConfig

    on_gpu = torch.cuda.is_available()
    defaults: dict[str, Any] = {
        "output_dir": str(output_dir),
        "use_cpu": not on_gpu,
        # TRL defaults to bf16, which fails on a CPU without it; with AVX512-BF16/AMX autocast is faster.
        "bf16": on_gpu or cpu_supports_bf16(),
        "activation_checkpointing": False,  # transformers' new name for gradient_checkpointing
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
    if "gradient_checkpointing" in recipe.trainer:  # the old name still works in a recipe, without a warning
        settings["activation_checkpointing"] = settings.pop("gradient_checkpointing")
    try:
        return GRPOConfig(**settings)
    except ValueError as error:  # TRL's own validation (batch sizes that do not divide, ...)
        raise ConfigError(f"trainer: {error}") from None


def splits_of(split: str | list[str] | None) -> list[str | None]:
    return list(split) if isinstance(split, list) else [split]


def training_dataset(
    recipe: Recipe,
    *,
    seed: int | None = None,
    curriculum: bool | None = None,
    split: str | list[str] | None = None,
) -> Any:
    """Train questions (of ``split``, or the rows of a list of splits pooled, else ``data.train_split``),
    shuffled with the recipe's seed (or ``seed``), balanced by ``data.balance_by``; single-hop first when
    ``data.curriculum`` (or ``curriculum``) is on."""
    from datasets import concatenate_datasets

    parts = [load_split(recipe, "train", part) for part in splits_of(split)]
    try:
        pooled = concatenate_datasets(parts)
    except ValueError as error:  # the splits' columns differ
        raise DataError(f"the splits {split} cannot be pooled: {error}") from None
    dataset = pooled.shuffle(seed=recipe.data.seed if seed is None else seed)
    if recipe.data.balance_by is not None:
        dataset = balanced(dataset, recipe.data.balance_by)
    if recipe.data.train_limit is not None:
        dataset = dataset.select(range(min(recipe.data.train_limit, len(dataset))))
    if (recipe.data.curriculum if curriculum is None else curriculum) and "hops" in dataset.column_names:
        hops = dataset["hops"]
        dataset = dataset.select(sorted(range(len(hops)), key=hops.__getitem__))  # stable: keeps the shuffle
    return dataset


def balanced(dataset: Any, column: str) -> Any:
    """As many rows of each value of ``column`` as the rarest value has, the values taking turns."""
    if column not in dataset.column_names:
        raise DataError(
            f"data.balance_by: the training data has no column {column!r} "
            f"(columns: {', '.join(dataset.column_names)})"
        )
    groups: dict[str, list[int]] = {}
    for index, value in enumerate(dataset[column]):
        groups.setdefault(json.dumps(value, sort_keys=True, default=str), []).append(index)
    size = min(len(indices) for indices in groups.values())
    # Taken in turns, so that any first N rows (a warm start's, a short run's) are balanced too.
    return dataset.select([indices[i] for i in range(size) for indices in groups.values()])


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


def recipe_trainer(
    recipe: Recipe,
    args: Any,
    model: Any,
    environment: Environment,
    *,
    train_dataset: Any = None,
    **kwargs: Any,
) -> MCPGRPOTrainer:
    """The recipe's trainer: its training questions (unless ``train_dataset`` is given), the Environment's
    episodes and rubric, LoRA adapters when asked."""
    return MCPGRPOTrainer(
        model=model,
        args=args,
        train_dataset=training_dataset(recipe) if train_dataset is None else train_dataset,
        processing_class=environment.tokenizer,
        environment=environment,
        peft_config=peft_config(recipe),
        lean_scoring=recipe.model.lean_scoring,
        grpo=recipe.grpo,
        **kwargs,
    )


def train(
    recipe: Recipe, output_dir: str | Path, *, resume: bool = False, model_path: str | None = None
) -> dict[str, Any]:
    """Run a recipe's training; returns the summary also written to ``summary.json``.

    Everything the recipe names is checked before anything is written: the data and its columns, the
    corpus, TRL's own validation of the trainer settings, the model, the servers (started) and the
    rewards (built). Only then does the output folder get its files; a folder this call created is
    removed again if the set-up fails, so a bad recipe leaves nothing behind.
    """
    output = Path(output_dir)
    if output.exists() and not output.is_dir():
        raise ConfigError(f"--output-dir {output}: is a file; give a folder for the run's outputs")
    if model_path:
        recipe.model.name_or_path = model_path
    check_data(recipe)
    if recipe.warm_start.demonstrations and recipe.warm_start.split is not None:
        try:
            for split in splits_of(recipe.warm_start.split):
                check_data(recipe, split=split)
        except DataError as error:
            raise DataError(f"warm_start.split: {error}") from None
    check_corpus(recipe)
    args = grpo_config(recipe, output)
    checkpoint = last_complete_checkpoint(output) if resume else None
    started = time.monotonic()
    with contextlib.ExitStack() as stack:
        with _removed_on_failure(output):  # a folder made here is taken back if the set-up fails
            output.mkdir(parents=True, exist_ok=True)
            errlog = stack.enter_context(command_server_log("train", run_folder=output))
            # Servers and rewards before the model: their mistakes are found in seconds, not after a load.
            environment = stack.enter_context(Environment.from_recipe(recipe, errlog=errlog))
            model, tokenizer = load_model(recipe.model)
            if recipe.model.train_top_layers is not None:
                train_top_layers(model, recipe.model.train_top_layers)
            environment.use_model(model, tokenizer, seed=args.seed)
            trainer = recipe_trainer(
                recipe,
                args,
                model,
                environment,
                trace_path=output / "traces.jsonl",
                callbacks=[MetricsFile(output / "metrics.jsonl"), RunProgress()],
            )
        prepare_output(output, recipe, resume=resume, checkpoint=checkpoint)
        if args.max_steps < 0:
            print(
                f"trainer.max_steps is {args.max_steps}: training runs trainer.num_train_epochs "
                f"({args.num_train_epochs:g}) epochs over the training data"
            )
        # Our bar replaces both of transformers' own (the bar, or raw log dicts printed when it is off).
        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
        trainer.add_callback(OptimizerStateInNewestOnly())  # after CheckpointMarker: the newest is complete
        trainable = trainer.model.num_parameters(only_trainable=True)  # under LoRA: the adapters
        # Before any training, the warm start included: what a step's prompt costs.
        first_row = dict(trainer.train_dataset[0])
        cost = measure_prompt_cost(
            recipe, environment.parser, environment.tools, first_row, tokenizer=tokenizer
        )
        print(cost.line())
        if recipe.warm_start.demonstrations and checkpoint is None:  # a checkpoint already holds its weights
            run_warm_start(recipe, trainer, environment, output, resume=resume)
            trainer.reset_reference()  # TRL built it from the model before the warm start
        elif recipe.warm_start.demonstrations:  # resuming GRPO: the KL reference is still the warm start
            if load_warm_start(trainer.model, output / "warm_start") is not None:
                trainer.reset_reference()  # then train() loads the checkpoint's weights over the policy
            elif trainer.beta > 0:
                folder = output / "warm_start"
                print(f"no finished warm start in {folder}: the KL reference is the untrained model")
        if recipe.grpo.sft_coef and recipe.warm_start.demonstrations:
            rows = list(warm_start_rows(recipe))[: recipe.warm_start.episodes]
            trainer.mix_in_demonstrations(played_demonstrations(recipe.warm_start, environment, rows))
        add_probes(recipe, trainer, environment)
        trainer.train(resume_from_checkpoint=checkpoint)
        final = output / "final"
        trainer.save_model(str(final))
        tokenizer.save_pretrained(str(final))
    metrics = read_metrics(output / "metrics.jsonl")
    plot = plot_metrics(metrics, output / "training.png")
    summary = summarize(metrics, time.monotonic() - started, resumed_from=checkpoint)
    summary["trainable_parameters"] = trainable
    summary["checkpoints"] = run_checkpoints(output)  # bytes by part: weights, optimizer (newest only), other
    summary["plot"] = str(plot) if plot else None
    summary["final_model"] = str(output / "final")
    (output / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def run_warm_start(
    recipe: Recipe, trainer: MCPGRPOTrainer, environment: Environment, output: Path, *, resume: bool = False
) -> None:
    """The recipe's supervised warm start on the trainer's model (under LoRA: its adapters), logged as step 0,
    in ``<run>/warm_start/`` (checkpoints, then ``final/``), so that ``--resume`` continues or skips it."""
    stats = warm_start(
        recipe,
        trainer.model,
        environment,
        warm_start_rows(recipe),
        output_dir=output / "warm_start",
        callbacks=[MetricsFile(output / "metrics.jsonl")],
        resume=resume,
        bf16=trainer.args.bf16,  # the two trainers share one accelerate state: they must agree
    )
    if trainer.accelerator.is_main_process:
        with (output / "metrics.jsonl").open("a") as log:
            log.write(json.dumps({"step": 0, "time": time.time(), **stats}) + "\n")
    kept, played = stats["warm_start/kept"], stats["warm_start/played"]
    print(
        f"warm start: {kept:.0f} of {played:.0f} demonstrations kept, "
        f"loss {stats['warm_start/first_loss']:.3f} → {stats['warm_start/last_loss']:.3f} "
        f"in {stats['warm_start/wall_s']:.0f} s"
    )


def warm_start_rows(recipe: Recipe) -> Any:
    """The rows the warm start demonstrates, in its order (a random draw with ``warm_start.seed``); the
    probes take theirs from past its ``episodes``."""
    config = recipe.warm_start
    return training_dataset(recipe, seed=config.seed, curriculum=False, split=config.split)


def add_probes(recipe: Recipe, trainer: MCPGRPOTrainer, environment: Environment) -> None:
    """The drift probes ``recipe.probes`` asks for, with the policy as it is now (warm-started) as their
    reference. On a resume the reference is the checkpoint's policy."""
    probes = recipe.probes
    episodes: list[Any] = []
    if probes.demonstrations and recipe.warm_start.demonstrations:
        episodes = probe_demonstrations(recipe, environment, warm_start_rows(recipe))
    if episodes or probes.update_norm:
        trainer.add_callback(
            DriftProbes(
                trainer.step_metrics,
                trainer.model,
                episodes,
                environment.tokenizer.pad_token_id,
                tokenizer=environment.tokenizer,
                update_norm=probes.update_norm,
            )
        )


def check_corpus(recipe: Recipe) -> None:
    """A corpus the recipe names must exist here (its server would only say "Connection closed")."""
    corpus = recipe.data.corpus
    if corpus is not None and not Path(corpus).exists():
        raise DataError(
            f"data.corpus: {corpus} does not exist; give a corpus file or a built-in dataset name"
        )


def prepare_output(output: Path, recipe: Recipe, *, resume: bool, checkpoint: str | None) -> None:
    """The run folder's files, once everything is checked: the resolved recipe, logs fit for a resume."""
    if resume and checkpoint is None:
        print(f"no complete checkpoint in {output}: starting from the beginning")
    if resume:
        remove_incomplete_checkpoints(output)
    if checkpoint is None:  # a resumed warm start keeps the batches it will not train again
        done = completed_batches(output / "warm_start") if resume else 0
        _keep_warm_start_batches(output / "metrics.jsonl", done)
        (output / "traces.jsonl").unlink(missing_ok=True)
    else:  # the steps after the checkpoint run again: drop what their first run logged
        step = int(Path(checkpoint).name.split("-")[-1])
        for name in ("metrics.jsonl", "traces.jsonl"):
            _keep_steps_up_to(output / name, step)
    (output / "recipe.yaml").write_text(recipe_to_yaml(recipe))  # the run as it will be, --model included


def _keep_warm_start_batches(path: Path, done: int) -> None:
    if not path.exists():
        return
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = [line for line in lines if json.loads(line).get("warm_start/batch", float("inf")) <= done]
    path.write_text("".join(line + "\n" for line in kept))


def _keep_steps_up_to(path: Path, step: int) -> None:
    if not path.exists():
        return
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    path.write_text("".join(line + "\n" for line in lines if json.loads(line)["step"] <= step))


@contextlib.contextmanager
def _removed_on_failure(output: Path) -> Iterator[None]:
    """Remove ``output`` if it did not exist before and the block raises: a failed set-up leaves nothing."""
    created = not output.exists()
    try:
        yield
    except BaseException:
        if created:
            shutil.rmtree(output, ignore_errors=True)
        raise


def summarize(metrics: list[dict[str, Any]], wall_s: float, resumed_from: str | None) -> dict[str, Any]:
    """First and last steps' numbers, so a run reads in one glance."""
    steps = [m for m in metrics if "reward" in m]

    def window(rows: list[dict[str, Any]], key: str) -> float | None:
        values = [r[key] for r in rows if key in r]
        return sum(values) / len(values) if values else None

    head, tail = steps[:5], steps[-5:]
    reward_keys = sorted({k for m in steps for k in m if k.startswith("rewards/") and k.endswith("/mean")})
    keys = ["reward", *reward_keys, "rollout/calls_per_trajectory", "rollout/answered"]
    return {
        "steps": steps[-1]["step"] if steps else 0,
        "wall_s": round(wall_s, 1),
        "resumed_from": resumed_from,
        "first_5_steps": {k: window(head, k) for k in keys},
        "last_5_steps": {k: window(tail, k) for k in keys},
    }
