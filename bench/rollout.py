"""Multi-turn rollout wall time: our ``RolloutEngine`` against TRL 1.16's built-in ``tools=`` loop.

    python bench/rollout.py [--quick] [--transport in-process|stdio]

The same batch is rolled out by both, with the same tiny model, prompts and greedy decoding:
N trajectories of one question (64; 16 with ``--quick``, since TRL alone needs N x 2 x 200 ms per repeat),
each making two tool calls (one per turn) and then answering, to a ``lookup`` tool that takes 200 ms.

(a) ours: ``RolloutEngine.rollout`` with the tool served by an MCP server through ``BlockingToolPool``
    (in-process ``MCPServer`` by default, or a stdio subprocess) and the ``tool_call`` parser;
(b) TRL: a ``GRPOTrainer(tools=[lookup])`` whose ``_generate(prompts)`` is called directly, the tool being an
    ``async def`` that sleeps 200 ms (TRL awaits the calls of one sample at a time);
(c) ideal: the same batched generation steps with nothing else (per turn, one ``model.generate`` of the
    turn's longest output over the turn's inputs) plus tool turns x latency.

The model (``bench/_rollout_model.py``) is warmed up until greedy decoding writes the Qwen-style
``<tool_call>{...}</tool_call>`` calls on both sides; both sides must generate identical model token ids
and make every call without failure, otherwise the run is invalid and the exit status is 1 (whether the
tool-reply tokens match too is reported as ``identical_completions``). Untimed warm-up rollouts go first;
the timed repeats (3 quick, 5 full) alternate which side goes first; medians are reported. Progress goes to
stderr; the last stdout line is one JSON object. The targets (speedup >= 10, ours / ideal <= 1.25) are
reported, not enforced.

Wall times on a shared machine swing with its load (``load_average_1m``); process CPU times swing much
less. ``overhead_vs_ideal_cpu_est`` is ours / ideal with each side's CPU time in place of its compute: what
the ratio would be on an idle machine, since tool waits cost no CPU (a cross-check, not the headline).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import _rollout_model as task  # bench/ is sys.path[0] when run as a script
from _common import finish, log, version

HELPER = Path(task.__file__).resolve()
ANIMAL = "fox"
TOOL_TURNS = 2
TARGET_SPEEDUP = 10.0
TARGET_OVERHEAD = 1.25
MAX_NEW_TOKENS = 64  # per turn (ours); the turns here are about 20 tokens
MAX_COMPLETION_TOKENS = 512  # per episode, model and tool tokens (both sides)


@dataclass
class Outcome:
    """What one rollout of the batch produced, in the terms both sides share."""

    completion_ids: list[list[int]]
    masks: list[list[int]]  # 1 = model token, 0 = tool-reply token
    calls: int
    failed_calls: int
    generate_s: float  # time inside batched generation
    trajectories: list[Any] = field(default_factory=list)  # ours only: kept for the ideal measurement

    @property
    def model_tokens(self) -> int:
        return sum(sum(mask) for mask in self.masks)

    @property
    def tool_tokens(self) -> int:
        return sum(len(mask) - sum(mask) for mask in self.masks)

    def model_ids(self) -> list[list[int]]:
        return [
            [t for t, m in zip(ids, mask, strict=True) if m]
            for ids, mask in zip(self.completion_ids, self.masks, strict=True)
        ]


@dataclass
class Side:
    name: str
    run: Callable[[int], Outcome]  # rolls out a batch of n trajectories
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)  # process CPU time, all threads (steadier on a busy box)
    outcomes: list[Outcome] = field(default_factory=list)


# -- our engine ----------------------------------------------------------------------------------------------
def server_config(transport: str, latency_s: float) -> Any:
    from mcp_rl.tools.server_config import in_process, parse_mcp_servers

    if transport == "in-process":
        return in_process("lookup", task.make_mcp_server(latency_s))
    entry = {"command": sys.executable, "args": [str(HELPER), "--latency", str(latency_s)]}
    return parse_mcp_servers({"mcpServers": {"lookup": entry}})[0]


def make_engine(model: Any, tokenizer: Any, pool: Any) -> Any:
    from mcp_rl.config.sections import PromptConfig, RolloutConfig
    from mcp_rl.env.environment import Environment
    from mcp_rl.env.parsers import build_parser
    from mcp_rl.generation.base import TransformersGenerator

    # Qwen's protocol as TRL runs it: the turn ends at <|im_end|> (no stop string), a turn without a call is
    # the answer, and the reply comes back as a user turn of <tool_response> blocks (Qwen2.5's rendering).
    parser = build_parser("tool_call", answer_tag=None, stop_at_call=False)
    config = RolloutConfig(
        max_turns=TOOL_TURNS + 1,
        max_new_tokens=MAX_NEW_TOKENS,
        max_completion_tokens=MAX_COMPLETION_TOKENS,
        observation_role="user",
        on_no_action="stop",
    )
    prompt = PromptConfig(system=task.SYSTEM, tools_in="template")
    generator = TransformersGenerator(model, tokenizer)
    return Environment(tokenizer, generator, pool=pool, parser=parser, prompt=prompt, rollout=config).engine


def ours_side(engine: Any) -> Side:
    def run(n: int) -> Outcome:
        trajectories = engine.rollout([task.prompt_messages(ANIMAL)] * n, greedy=True)
        return Outcome(
            [t.completion_ids for t in trajectories],
            [t.completion_mask for t in trajectories],
            sum(len(t.calls) for t in trajectories),
            sum(len(t.failed_calls) for t in trajectories),
            engine.last_stats["rollout/generate_s"],
            trajectories,
        )

    return Side("ours", run)


# -- TRL's built-in loop -------------------------------------------------------------------------------------
def make_trainer(model: Any, tokenizer: Any, tool: Callable[..., Any], output_dir: str) -> Any:
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    args = GRPOConfig(
        output_dir=output_dir,
        use_cpu=True,
        bf16=False,
        report_to="none",
        activation_checkpointing=False,
        save_strategy="no",
        max_completion_length=MAX_COMPLETION_TOKENS,
        # Greedy, as on our side (TRL samples by default; these override its GenerationConfig).
        generation_kwargs={
            "do_sample": False,
            "temperature": None,
            "top_p": None,
            "top_k": None,
            "min_p": None,
        },
    )

    def no_reward(completions: list[Any], **_: Any) -> list[float]:
        return [0.0] * len(completions)

    return GRPOTrainer(
        model=model,
        reward_funcs=no_reward,
        args=args,
        train_dataset=Dataset.from_dict({"prompt": [task.prompt_messages(ANIMAL)]}),
        processing_class=tokenizer,
        tools=[tool],
    )


def trl_side(trainer: Any, tool: Callable[..., Any]) -> Side:
    generate_s = [0.0]
    single_turn = trainer._generate_single_turn

    def timed_single_turn(*args: Any, **kwargs: Any) -> Any:
        tick = time.perf_counter()
        try:
            return single_turn(*args, **kwargs)
        finally:
            generate_s[0] += time.perf_counter() - tick

    trainer._generate_single_turn = timed_single_turn

    def run(n: int) -> Outcome:
        # `_generate_and_score_completions` builds these per batch before calling `_generate`.
        trainer._sync_tool_dicts = [{} for _ in range(n)]
        trainer._async_tool_dicts = [{tool.__name__: tool} for _ in range(n)]
        generate_s[0] = 0.0
        _, completion_ids, tool_mask, completions, *_ = trainer._generate([task.prompt_messages(ANIMAL)] * n)
        tool_messages = [m for completion in completions for m in completion if m["role"] == "tool"]
        failed = sum(str(m["content"]).startswith("{'error'") for m in tool_messages)
        return Outcome(
            [list(ids) for ids in completion_ids],
            [list(mask) for mask in tool_mask],
            len(tool_messages),
            failed,
            generate_s[0],
        )

    return Side("trl", run)


# -- the ideal -----------------------------------------------------------------------------------------------
def ideal_inputs(trajectories: Sequence[Any]) -> list[tuple[list[list[int]], int]]:
    """Per turn: the inputs the turn generated from, and its batched step count (its longest output)."""
    turns = []
    for k in range(max(len(t.turns) for t in trajectories)):
        inputs, steps = [], 0
        for t in trajectories:
            if len(t.turns) > k:
                start = sum(turn.generated_tokens + turn.observation_tokens for turn in t.turns[:k])
                inputs.append(t.prompt_ids + t.completion_ids[:start])
                steps = max(steps, t.turns[k].generated_tokens)
        turns.append((inputs, steps))
    return turns


def ideal_generate(
    model: Any, tokenizer: Any, turns: Sequence[tuple[list[list[int]], int]]
) -> tuple[float, float]:
    """Wall and CPU time of exactly the turns' batched generation steps and nothing else (no tools)."""
    import torch

    pad = tokenizer.pad_token_id
    started, cpu = time.perf_counter(), time.process_time()
    with torch.no_grad():
        for inputs, steps in turns:
            width = max(len(p) for p in inputs)
            input_ids = torch.full((len(inputs), width), pad, dtype=torch.long)
            attention_mask = torch.zeros((len(inputs), width), dtype=torch.long)
            for row, prompt in enumerate(inputs):
                input_ids[row, width - len(prompt) :] = torch.tensor(prompt)
                attention_mask[row, width - len(prompt) :] = 1
            model.generate(
                input_ids=input_ids,
                attention_mask=attention_mask,
                max_new_tokens=steps,
                min_new_tokens=steps,
                do_sample=False,
                temperature=None,
                top_p=None,
                top_k=None,
                pad_token_id=pad,
                eos_token_id=tokenizer.eos_token_id,
            )
    return time.perf_counter() - started, time.process_time() - cpu


# -- checks --------------------------------------------------------------------------------------------------
def problems(n: int, ours: Outcome, trl: Outcome) -> list[str]:
    found = []
    for name, outcome in (("ours", ours), ("trl", trl)):
        if outcome.calls != TOOL_TURNS * n or outcome.failed_calls:
            found.append(
                f"{name}: {outcome.calls} calls ({outcome.failed_calls} failed), expected {TOOL_TURNS * n} ok"
            )
    if ours.model_ids() != trl.model_ids():
        found.append("the two sides' model tokens differ")
    return found


def describe(outcome: Outcome, n: int) -> str:
    return (
        f"{outcome.model_tokens / n:.0f} model + {outcome.tool_tokens / n:.0f} tool-reply tokens and "
        f"{outcome.calls / n:.1f} calls per trajectory"
    )


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else float("nan")


def measure(
    sides: dict[str, Side], n: int, repeats: int, model: Any, tokenizer: Any
) -> tuple[list[float], list[float]]:
    """Untimed warm-up rollouts, then timed repeats that alternate the sides' order. Each repeat also times
    the ideal on that repeat's inputs (so it sees the same machine load); returns its wall and CPU times."""
    warm_n = min(n, 8)
    for side in sides.values():
        tick = time.perf_counter()
        side.run(warm_n)
        log(f"warm-up {side.name} ({warm_n} trajectories, not timed): {time.perf_counter() - tick:.2f} s")
    ideal_walls: list[float] = []
    ideal_cpus: list[float] = []
    for repeat in range(repeats):
        for name in ("ours", "trl") if repeat % 2 == 0 else ("trl", "ours"):
            side = sides[name]
            tick, cpu = time.perf_counter(), time.process_time()
            outcome = side.run(n)
            side.walls.append(time.perf_counter() - tick)
            side.cpus.append(time.process_time() - cpu)
            side.outcomes.append(outcome)
            log(
                f"repeat {repeat + 1}/{repeats} {name:>5}: {side.walls[-1]:6.2f} s, "
                f"CPU {side.cpus[-1]:5.2f} s (generation {outcome.generate_s:.2f} s; {describe(outcome, n)})"
            )
        turns = ideal_inputs(sides["ours"].outcomes[-1].trajectories)
        if repeat == 0:
            ideal_generate(model, tokenizer, turns)  # warm-up, not timed
        wall, cpu = ideal_generate(model, tokenizer, turns)
        ideal_walls.append(wall)
        ideal_cpus.append(cpu)
        log(
            f"repeat {repeat + 1}/{repeats} ideal: {wall:6.2f} s, CPU {cpu:5.2f} s of generation only "
            f"({len(turns)} batched generate calls of {[steps for _, steps in turns]} steps)"
        )
    return ideal_walls, ideal_cpus


def bench(args: argparse.Namespace) -> dict[str, Any]:
    import torch

    from mcp_rl.tools import BlockingToolPool

    started = time.perf_counter()
    n = args.trajectories or (16 if args.quick else 64)
    repeats = args.repeats or (3 if args.quick else 5)
    torch.set_num_threads(args.threads)
    log(
        f"{'quick' if args.quick else 'full'} run: {n} trajectories x {TOOL_TURNS} tool turns, "
        f"{args.latency * 1000:.0f} ms tool ({args.transport}), {repeats} timed repeats per side, "
        f"torch threads {args.threads}"
    )
    tool = task.make_python_tool(args.latency)
    with BlockingToolPool([server_config(args.transport, args.latency)]) as pool:
        # The warm-up episodes are rendered as each side renders its prompt (tool schemas differ in wording).
        texts = task.render_episodes([task.openai_tools(pool.tools), [tool]], [ANIMAL])
        tokenizer = task.make_tokenizer(texts)
        model = task.make_model(tokenizer)
        tick = time.perf_counter()
        steps, margin = task.warm_up(model, tokenizer, texts)
        took = time.perf_counter() - tick
        log(f"model warmed up: {steps} steps in {took:.1f} s (smallest logit margin {margin:.2f})")

        engine = make_engine(model, tokenizer, pool)
        with tempfile.TemporaryDirectory() as output_dir:
            tick = time.perf_counter()
            trainer = make_trainer(model, tokenizer, tool, output_dir)
            parser_set = getattr(tokenizer, "response_template", None) is not None
            log(
                f"GRPOTrainer(tools=[lookup]) built in {time.perf_counter() - tick:.1f} s; response parser "
                f"set: {parser_set}, training template swapped in: {trainer.chat_template is not None}"
            )
            sides = {"ours": ours_side(engine), "trl": trl_side(trainer, tool)}

            ideal_walls, ideal_cpus = measure(sides, n, repeats, model, tokenizer)

    trajectories = sides["ours"].outcomes[-1].trajectories
    turns = ideal_inputs(trajectories)
    tool_turns = sum(
        any(len(t.turns) > k and t.turns[k].calls for t in trajectories) for k in range(len(turns))
    )
    ours, trl = sides["ours"], sides["trl"]
    found = [p for o, t in zip(ours.outcomes, trl.outcomes, strict=True) for p in problems(n, o, t)]
    first_ours, first_trl = ours.outcomes[0], trl.outcomes[0]
    identical = all(
        o.completion_ids == first_ours.completion_ids and t.completion_ids == first_ours.completion_ids
        for o, t in zip(ours.outcomes, trl.outcomes, strict=True)
    )
    ours_s, trl_s = median(ours.walls), median(trl.walls)
    ideal_generate_s = median(ideal_walls)
    waits = tool_turns * args.latency  # a turn's calls can all overlap: one latency per tool turn
    ideal_s = ideal_generate_s + waits
    speedup, overhead = trl_s / ours_s, ours_s / ideal_s
    overhead_cpu = (median(ours.cpus) + waits) / (median(ideal_cpus) + waits)
    return {
        "ours_s": round(ours_s, 3),
        "trl_builtin_s": round(trl_s, 3),
        "speedup": round(speedup, 2),
        "ideal_s": round(ideal_s, 3),
        "overhead_vs_ideal": round(overhead, 3),
        "overhead_vs_ideal_cpu_est": round(overhead_cpu, 3),
        "trajectories": n,
        "tool_turns": tool_turns,
        "tool_latency_s": args.latency,
        "model_tokens_ours": first_ours.model_tokens,
        "model_tokens_trl": first_trl.model_tokens,
        "tool_tokens_ours": first_ours.tool_tokens,
        "tool_tokens_trl": first_trl.tool_tokens,
        "tool_calls_ours": first_ours.calls,
        "tool_calls_trl": first_trl.calls,
        "failed_calls": sum(o.failed_calls for side in sides.values() for o in side.outcomes),
        "identical_completions": identical,
        "valid": not found,
        "problems": sorted(set(found)),
        "ours_generate_s": round(median([o.generate_s for o in ours.outcomes]), 3),
        "trl_generate_s": round(median([o.generate_s for o in trl.outcomes]), 3),
        "ideal_generate_s": round(ideal_generate_s, 3),
        "ideal_steps_per_turn": [steps for _, steps in turns],
        "ours_cpu_s": round(median(ours.cpus), 3),
        "trl_cpu_s": round(median(trl.cpus), 3),
        "ideal_generate_cpu_s": round(median(ideal_cpus), 3),
        "ours_runs_s": [round(w, 3) for w in ours.walls],
        "trl_runs_s": [round(w, 3) for w in trl.walls],
        "ideal_generate_runs_s": [round(w, 3) for w in ideal_walls],
        "repeats": repeats,
        "quick": bool(args.quick),
        "transport": args.transport,
        "torch_threads": args.threads,
        "warm_up_steps": steps,
        "targets": {"speedup_min": TARGET_SPEEDUP, "overhead_vs_ideal_max": TARGET_OVERHEAD},
        "meets_targets": {
            "speedup": speedup >= TARGET_SPEEDUP,
            "overhead_vs_ideal": overhead <= TARGET_OVERHEAD,
        },
        "trl": version("trl"),
        "transformers": version("transformers"),
        "torch": version("torch"),
        "mcp": version("mcp"),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="16 trajectories, 3 repeats (under a minute).")
    parser.add_argument("--trajectories", type=int, default=0, help="Batch size (default 64, quick 16).")
    parser.add_argument("--repeats", type=int, default=0, help="Timed repeats per side (default 5, quick 3).")
    parser.add_argument("--latency", type=float, default=0.2, help="Seconds each tool call takes.")
    parser.add_argument("--transport", choices=["in-process", "stdio"], default="in-process")
    parser.add_argument(
        "--threads",
        type=int,
        default=1,
        help="torch intra-op threads, the same for all sides (1: tiny matmuls gain nothing from more, and "
        "spinning threads lose badly on a shared machine).",
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    # transformers 5.24 renamed gradient to activation checkpointing; TRL 1.16 still asks for the old name.
    warnings.filterwarnings("ignore", message=".*gradient_checkpointing.*deprecated", category=FutureWarning)
    result = bench(args)
    finish(
        result,
        f"ours {result['ours_s']:.2f} s, TRL built-in {result['trl_builtin_s']:.2f} s: speedup "
        f"{result['speedup']:.1f}x (target >= {TARGET_SPEEDUP:.0f}"
        f"{'' if result['meets_targets']['speedup'] else ', MISSED'}); ideal {result['ideal_s']:.2f} s, "
        f"ours/ideal {result['overhead_vs_ideal']:.3f} (target <= {TARGET_OVERHEAD}"
        f"{'' if result['meets_targets']['overhead_vs_ideal'] else ', MISSED'})"
        + ("" if result["valid"] else f"; INVALID: {'; '.join(result['problems'])}"),
    )
    return 0 if result["valid"] else 1


if __name__ == "__main__":
    sys.exit(main())
