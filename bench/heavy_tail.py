"""Rollouts against a heavy-tailed tool: scheduling by turn (every turn waits for the batch's slowest call)
against scheduling by episode, and both against the per-episode ideal, in one run.

    python bench/heavy_tail.py [--model tiny|smollm2-135m] [--repeats 2] [--hang 0.01]

The tool is ``bench/latency_server.py`` over stdio: each call sleeps a lognormal time (median 100 ms, p99
20x the median) and 1% of calls never answer, so the pool's 10 s timeout ends them. Each side of a repeat
gets its own server started with the same seed, so both meet the same latencies and hangs in the order
their calls arrive. The batch: 16 prompts x 4 samples = 64 episodes of at most 4 turns.

The model: ``tiny`` (default; the tests' ~100k-parameter Llama taught to search then answer, built in code,
a few minutes in all on 2 cores) or a model name such as ``smollm2-135m`` with the ``search`` recipe's
prompt. Greedy by default, so both sides write the same tokens and make the same calls (``--sample`` for
the recipe's temperature; then the sides' episodes differ a little).

Per-episode ideal, per side: the slowest episode's own time, its generation (the generate calls it was part
of) plus its tools (per turn, its slowest call), as if it had waited for no other episode. Each side is set
against its own ideal, because which episode meets which latency depends on the order calls arrive in.
``waited_s``: per episode, the time it ended minus its own time, the longest wait among episodes with no
timed-out call. The tiny model is taught to search ``--max-turns`` - 1 times, then answer. Progress on
stderr; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch
from _common import finish, log, version

from mcp_rl.config.sections import ModelConfig, RolloutConfig
from mcp_rl.env.environment import Environment, build_generator, recipe_parser
from mcp_rl.tools import BlockingToolPool, FailureKind
from mcp_rl.tools.server_config import parse_mcp_servers

ROOT = Path(__file__).resolve().parents[1]
TARGET_RATIO = 1.25  # episode scheduling's wall time over the per-episode ideal
TIMEOUT = str(FailureKind.TIMEOUT)


def latency_pool(args: argparse.Namespace, seed: int) -> BlockingToolPool:
    options = ["--seed", str(seed), "--median-ms", str(args.median_ms), "--p99-ratio", str(args.p99_ratio)]
    entry = {
        "command": sys.executable,
        "args": [str(ROOT / "bench" / "latency_server.py"), *options, "--hang", str(args.hang)],
        "timeout": args.timeout,
    }
    return BlockingToolPool(parse_mcp_servers({"search": entry})).start()


HOPS = ["one", "two", "three", "four", "five", "six", "seven", "eight"]


def chain_searching_model(searches: int) -> tuple[Any, Any]:
    """The tests' tiny Llama taught to search ``searches`` times, then answer: each query names the hop
    (``one``, ``two``, ...) and the server echoes it, so the next action follows from the last observation."""
    from latency_server import PASSAGE
    from tiny import TEST_QUESTIONS, TEST_SYSTEM, warm_up
    from tiny_models import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    conversations = []
    for question in TEST_QUESTIONS:
        turns = [{"role": "system", "content": TEST_SYSTEM}, {"role": "user", "content": question}]
        for hop in HOPS[:searches]:
            turns.append({"role": "assistant", "content": f"<search> {hop} </search>"})
            turns.append({"role": "user", "content": f"<information>{PASSAGE} ({hop})</information>"})
        turns.append({"role": "assistant", "content": "<answer> Draskel </answer>"})
        conversations.append(turns)
    warm_up(model, tokenizer, conversations, steps=200)
    return model, tokenizer


class Setup:
    """The model and how an Environment on it is built: the tests' tiny searcher, or a recipe's prompt."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        if args.model == "tiny":
            sys.path.insert(0, str(ROOT / "tests"))
            from tiny import TEST_QUESTIONS, tiny_prompt_config

            self.model, self.tokenizer = chain_searching_model(args.max_turns - 1)
            self.recipe = None
            self.prompt = tiny_prompt_config()
            self.rollout = RolloutConfig(max_turns=args.max_turns, max_new_tokens=16)
            self.questions = [TEST_QUESTIONS[i % len(TEST_QUESTIONS)] for i in range(args.prompts)]
        else:
            from mcp_rl.config.recipe import load_recipe
            from mcp_rl.env.data import load_qa
            from mcp_rl.generation.models import load_model

            self.recipe = load_recipe("search", [f"rollout.max_turns={args.max_turns}"], check_trainer=False)
            self.model, self.tokenizer = load_model(ModelConfig(name_or_path=args.model))
            self.prompt = self.recipe.prompt
            self.rollout = self.recipe.rollout
            self.questions = [row["question"] for row in load_qa("fictional", "train", limit=args.prompts)]
        self.model.eval()

    def environment(self, pool: BlockingToolPool, scheduling: str) -> Environment:
        rollout = self.rollout.model_copy(update={"scheduling": scheduling})
        generator = build_generator(rollout, self.model, self.tokenizer)
        parser = "search_r1" if self.recipe is None else recipe_parser(self.recipe)
        return Environment(
            self.tokenizer, generator, pool=pool, parser=parser, prompt=self.prompt, rollout=rollout
        )


def timed_out(trajectory: Any) -> bool:
    return any(call.failure == TIMEOUT for call in trajectory.calls)


def run_side(setup: Setup, scheduling: str, seed: int) -> dict[str, Any]:
    args = setup.args
    pool = latency_pool(args, seed)
    try:
        environment = setup.environment(pool, scheduling)
        messages = [environment.messages({"question": q}) for q in setup.questions]
        torch.manual_seed(seed)
        started = time.perf_counter()
        trajectories = environment.engine.rollout(
            messages, num_generations=args.samples, greedy=not args.sample
        )
        wall = time.perf_counter() - started
    finally:
        pool.close()
    own = [t.info["generate_s"] + t.info["tools_s"] for t in trajectories]
    waits = [t.info["ended_s"] - o for t, o in zip(trajectories, own, strict=True) if not timed_out(t)]
    calls = [c for t in trajectories for c in t.calls]
    side = {
        "wall_s": wall,
        "ideal_s": max(own),
        "generate_s": environment.engine.last_stats["rollout/generate_s"],
        "waited_s": max(waits, default=0.0),
        "calls": len(calls),
        "timeouts": sum(c.failure == TIMEOUT for c in calls),
        "turns_mean": sum(len(t.turns) for t in trajectories) / len(trajectories),
        "answered": sum(t.answer is not None for t in trajectories) / len(trajectories),
        # Which episode meets a timeout depends on arrival order (and changes what it reads next).
        "tokens": [None if timed_out(t) else t.completion_ids for t in trajectories],
    }
    log(
        f"{scheduling:>7} (seed {seed}): wall {wall:.2f} s, ideal {side['ideal_s']:.2f} s, generate "
        f"{side['generate_s']:.2f} s, {side['calls']} calls ({side['timeouts']} timed out), longest wait of "
        f"an episode without a timeout {side['waited_s']:.2f} s"
    )
    return side


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default="tiny", help="tiny (built in code) or a model name/path")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--samples", type=int, default=4, help="episodes per prompt")
    parser.add_argument("--max-turns", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=2, help="timed repeats, a new seed each")
    parser.add_argument("--median-ms", type=float, default=100.0)
    parser.add_argument("--p99-ratio", type=float, default=20.0)
    parser.add_argument("--hang", type=float, default=0.01, help="share of calls that never answer")
    parser.add_argument("--timeout", type=float, default=10.0, help="the pool's per-call timeout, s")
    parser.add_argument("--sample", action="store_true", help="sample (recipe temperature) instead of greedy")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (default 1: shared cores)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    started = time.perf_counter()
    setup = Setup(args)
    log(f"model {args.model} loaded in {time.perf_counter() - started:.1f} s")
    warm = argparse.Namespace(**{**vars(args), "hang": 0.0})
    pool = latency_pool(warm, seed=-1)
    try:  # untimed: the first forward passes and the server's first call
        environment = setup.environment(pool, "episode")
        environment.engine.rollout([environment.messages({"question": setup.questions[0]})], greedy=True)
    finally:
        pool.close()

    sides: dict[str, list[dict[str, Any]]] = {"turn": [], "episode": []}
    for repeat in range(args.repeats):
        order = ("turn", "episode") if repeat % 2 == 0 else ("episode", "turn")
        for scheduling in order:
            sides[scheduling].append(run_side(setup, scheduling, seed=repeat))
    same_tokens = all(  # greedy: an episode without timeouts writes the same tokens either way
        a is None or b is None or a == b
        for t, e in zip(sides["turn"], sides["episode"], strict=True)
        for a, b in zip(t["tokens"], e["tokens"], strict=True)
    )
    ratios = {name: [run["wall_s"] / run["ideal_s"] for run in runs] for name, runs in sides.items()}
    episode_ratio = statistics.median(ratios["episode"])
    result: dict[str, Any] = {
        "bench": "heavy_tail",
        "turn_over_ideal": round(statistics.median(ratios["turn"]), 2),
        "episode_over_ideal": round(episode_ratio, 2),
        "target_episode_over_ideal": TARGET_RATIO,
        "meets_target": episode_ratio <= TARGET_RATIO,
        "speedup": round(
            statistics.median(
                t["wall_s"] / e["wall_s"] for t, e in zip(sides["turn"], sides["episode"], strict=True)
            ),
            2,
        ),
        "same_tokens_without_timeouts": same_tokens if not args.sample else None,
    }
    for name, runs in sides.items():
        for key in ("wall_s", "ideal_s", "generate_s", "waited_s", "turns_mean", "answered"):
            result[f"{name}_{key}"] = [round(run[key], 2) for run in runs]
        result[f"{name}_calls"] = [run["calls"] for run in runs]
        result[f"{name}_timeouts"] = [run["timeouts"] for run in runs]
    result.update(
        {
            "episodes": args.prompts * args.samples,
            "max_turns": args.max_turns,
            "model": args.model,
            "greedy": not args.sample,
            "median_ms": args.median_ms,
            "p99_ratio": args.p99_ratio,
            "hang": args.hang,
            "timeout_s": args.timeout,
            "gather": setup.rollout.gather,
            "threads": args.threads,
            "cpus": len(os.sched_getaffinity(0)),
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "versions": {p: version(p) for p in ("torch", "transformers", "mcp")},
            "python": platform.python_version(),
            "total_s": round(time.perf_counter() - started, 1),
        }
    )
    finish(
        result,
        f"turn {result['turn_over_ideal']}x the per-episode ideal, episode {result['episode_over_ideal']}x "
        f"(target <= {TARGET_RATIO}); episode scheduling {result['speedup']}x faster",
    )


if __name__ == "__main__":
    main()
