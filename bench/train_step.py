"""Seconds per GRPO step of the default recipe as it was (plain transformers generation, TRL's training
forward) and as it is (the generator that reuses attention state, the lean training forward of
``mcp_rl.training.lean_forward``), in one training run.

    python bench/train_step.py [--quick]

The ``search`` recipe as ``mcp-rl train`` builds it (SmolLM2-135M-Instruct, the top 12 layers trained, the
real BM25 search server over stdio, the recipe's rewards), through ``MCPGRPOTrainer``. The first step is a
warm-up and is not counted; then come pairs of steps, one with each generator (the same trainer, model and
servers; the order swapped from pair to pair; "old" also switches ``LeanScoring`` off), and both steps of
a pair roll out the same questions, so both sides see the same load, the same questions and the same policy
drift. Per step: wall seconds, process CPU seconds (less sensitive to other processes on a shared machine),
and the seconds the rollout spent generating, calling tools and in total; the rest of a step is TRL's
scoring, forward and backward.

``--quick`` (under two minutes on two quiet cores): one question × 4 samples a step (4 completions, one
micro-batch) and 2 counted steps per side; the full run keeps the recipe's 4 questions × 4 samples
(16 completions, 4 micro-batches of 4) with 3 counted steps per side.

Progress goes to stderr; the last line on stdout is one JSON object. The target (step_speedup >= 2) is
reported, not enforced.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from typing import Any

import torch
from _common import finish, log, version
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback, ProgressCallback

from mcp_rl.config.recipe import load_recipe
from mcp_rl.env.environment import Environment
from mcp_rl.generation.base import Generator, TransformersGenerator
from mcp_rl.generation.cached import CachedTransformersGenerator
from mcp_rl.generation.models import load_model, train_top_layers
from mcp_rl.training.run import grpo_config, recipe_trainer, training_dataset

TARGET_STEP_SPEEDUP = 2.0


class AlternatingGenerators(TrainerCallback):
    """Before each step, hands the Environment the generator whose turn it is (and, for "old", switches the
    lean training forward off); after it, records the step."""

    def __init__(self, environment: Environment, generators: dict[str, Generator], schedule: list[str]):
        self.trainer: Any = None
        self.environment = environment
        self.generators = generators
        self.schedule = schedule  # the generator of each step; the first step is the warm-up
        self.steps: dict[str, list[dict[str, float]]] = {name: [] for name in generators}
        self.current = schedule[0]
        self.started = self.started_cpu = 0.0

    def on_step_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self.current = self.schedule[state.global_step]
        self.environment.use_generator(self.generators[self.current])
        if self.trainer is not None and self.trainer.lean_scoring is not None:
            self.trainer.lean_scoring.enabled = self.current != "old"
        self.started, self.started_cpu = time.perf_counter(), time.process_time()

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        stats = self.environment.engine.last_stats
        step = {
            "step_s": time.perf_counter() - self.started,
            "cpu_s": time.process_time() - self.started_cpu,
            "generate_s": stats["rollout/generate_s"],
            "tools_s": stats["rollout/tools_s"],
            "rollout_s": stats["rollout/total_s"],
        }
        warm = state.global_step <= 1
        log(
            f"step {state.global_step} {self.current:>5}{' (warm-up)' if warm else ''}: "
            f"{step['step_s']:.1f} s "
            f"(cpu {step['cpu_s']:.1f} s), generating {step['generate_s']:.1f} s"
        )
        if not warm:
            self.steps[self.current].append(step)


def paired_schedule(names: list[str], pairs: int) -> list[str]:
    """A warm-up step, then pairs of steps, one per generator, the order swapped from pair to pair."""
    return [names[-1]] + [name for pair in range(pairs) for name in (names if pair % 2 == 0 else names[::-1])]


def paired_questions(dataset: Any, questions_per_step: int, pairs: int) -> Any:
    """The training questions in step order with each pair's questions twice: both steps of a pair roll
    out the same questions (episode length depends on the question far more than on one optimizer step)."""
    blocks = [list(range(b * questions_per_step, (b + 1) * questions_per_step)) for b in range(pairs + 1)]
    return dataset.select(blocks[0] + [i for block in blocks[1:] for i in block * 2])


def median(steps: list[dict[str, float]], key: str) -> float:
    return statistics.median(step[key] for step in steps)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1 question × 4 samples a step, 2 steps a side")
    parser.add_argument("--steps", type=int, default=None, help="counted steps per side (default 3; quick 2)")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads. Default: every CPU, or 1 when other processes already keep the CPUs busy "
        "(1-minute load average >= 1), where OpenMP threads wait on each other",
    )
    args = parser.parse_args()
    cpus = len(os.sched_getaffinity(0))
    load_before = os.getloadavg()[0]
    threads = min(args.threads or (cpus if load_before < 1.0 else 1), cpus)
    torch.set_num_threads(threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    steps_per_side = args.steps or (2 if args.quick else 3)
    started = time.perf_counter()
    log(f"{threads} thread(s) ({cpus} CPUs, load average {load_before:.2f})")

    overrides = [
        f"trainer.max_steps={1 + 2 * steps_per_side}",
        "trainer.save_strategy='no'",
        "trainer.shuffle_dataset=false",
    ]
    if args.quick:
        overrides += ["trainer.gradient_accumulation_steps=1"]
    recipe = load_recipe("search", overrides)
    with (
        tempfile.TemporaryDirectory(prefix="train-step-") as output,
        Environment.from_recipe(recipe) as environment,
    ):
        grpo_args = grpo_config(recipe, output)
        model, tokenizer = load_model(recipe.model)
        if recipe.model.train_top_layers is not None:
            train_top_layers(model, recipe.model.train_top_layers)
        generators: dict[str, Generator] = {
            "old": TransformersGenerator(model, tokenizer, recipe.rollout.batch_size),
            "new": CachedTransformersGenerator(model, tokenizer, recipe.rollout.batch_size),
        }
        environment.use_model(model, tokenizer, generator=generators["old"])
        clock = AlternatingGenerators(
            environment, generators, paired_schedule(list(generators), steps_per_side)
        )
        questions_per_step = (
            grpo_args.per_device_train_batch_size * grpo_args.gradient_accumulation_steps
        ) // grpo_args.num_generations
        trainer = recipe_trainer(
            recipe,
            grpo_args,
            model,
            environment,
            train_dataset=paired_questions(training_dataset(recipe), questions_per_step, steps_per_side),
            callbacks=[clock],
            close_environment=False,
        )
        clock.trainer = trainer
        trainer.remove_callback(ProgressCallback)
        trainer.remove_callback(PrinterCallback)
        trainer.train()

    old, new = clock.steps["old"], clock.steps["new"]
    result: dict[str, Any] = {
        "bench": "train_step",
        "old_step_s": round(median(old, "step_s"), 2),
        "new_step_s": round(median(new, "step_s"), 2),
        "step_speedup": round(median(old, "step_s") / median(new, "step_s"), 2),
        "target_step_speedup": TARGET_STEP_SPEEDUP,
        "meets_target": median(old, "step_s") / median(new, "step_s") >= TARGET_STEP_SPEEDUP,
        "old_generate_share": round(median(old, "generate_s") / median(old, "step_s"), 3),
        "new_generate_share": round(median(new, "generate_s") / median(new, "step_s"), 3),
        "cpu_step_speedup": round(median(old, "cpu_s") / median(new, "cpu_s"), 2),
        # What is left of a step once the rollout is done: TRL's rewards, forward and backward.
        "old_train_s": round(statistics.median(s["step_s"] - s["rollout_s"] for s in old), 2),
        "new_train_s": round(statistics.median(s["step_s"] - s["rollout_s"] for s in new), 2),
    }
    for name, steps in clock.steps.items():
        result.update(
            {
                f"{name}_each_{key}": [round(step[key], 2) for step in steps]
                for key in ("step_s", "cpu_s", "generate_s", "tools_s", "rollout_s")
            }
        )
        result[f"{name}_each_train_s"] = [round(step["step_s"] - step["rollout_s"], 2) for step in steps]
    result.update(
        {
            "completions_per_step": grpo_args.per_device_train_batch_size
            * grpo_args.gradient_accumulation_steps,
            "micro_batch": grpo_args.per_device_train_batch_size,
            "max_turns": recipe.rollout.max_turns,
            "max_new_tokens": recipe.rollout.max_new_tokens,
            "threads": threads,
            "cpus": cpus,
            "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "versions": {p: version(p) for p in ("torch", "transformers", "trl")},
            "total_s": round(time.perf_counter() - started, 1),
        }
    )
    finish(
        result,
        f"step: {result['old_step_s']} s plain → {result['new_step_s']} s reusing "
        f"({result['step_speedup']}x; generating {result['old_generate_share']:.0%} → "
        f"{result['new_generate_share']:.0%} of a step)",
    )


if __name__ == "__main__":
    main()
