"""Attention state the default generator holds over one calculator rollout of Q questions x 8 samples (the
untrained default model, turn scheduling as the recipe), and the process's resident memory.

    OMP_NUM_THREADS=1 python docs/measurements/held-prefix/held.py 16
"""

import json
import resource
import sys
import time

import torch

from mcp_rl.config.recipe import load_recipe
from mcp_rl.env.environment import Environment
from mcp_rl.generation.cached import CachedTransformersGenerator
from mcp_rl.generation.models import load_model, pick_dtype
from mcp_rl.training.run import training_dataset

SAMPLES = 8


def rss_mib() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * 4096 / 2**20


def main(questions: int) -> None:
    recipe = load_recipe("calculator", [], check_trainer=False)
    model, tokenizer = load_model(recipe.model, dtype=pick_dtype("auto"))
    generator = CachedTransformersGenerator(model.eval(), tokenizer, logprobs=True)
    generate, peak = generator.generate, [0]

    def watched(prompts, sampling):
        generations = generate(prompts, sampling)
        held = generator.held_bytes()
        peak[0] = max(peak[0], held)
        mib = held / 2**20
        print(f"call: {len(prompts)} prompts, held {mib:.0f} MiB, RSS {rss_mib():.0f} MiB", flush=True)
        return generations

    generator.generate = watched
    rows = [dict(row) for row in training_dataset(recipe).select(range(questions))]
    with Environment.from_recipe(recipe, rewards=False) as environment:
        environment.use_model(model, tokenizer, generator=generator)
        torch.manual_seed(0)
        started = time.perf_counter()
        prompts = [environment.engine.prompts.messages(row) for row in rows for _ in range(SAMPLES)]
        environment.engine.rollout(prompts, rows=[row for row in rows for _ in range(SAMPLES)])
        print(f"rollout {time.perf_counter() - started:.1f} s", flush=True)
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(json.dumps({"questions": questions, "peak_held_mib": round(peak[0] / 2**20), "maxrss_mib": maxrss}))


if __name__ == "__main__":
    main(int(sys.argv[1]))
