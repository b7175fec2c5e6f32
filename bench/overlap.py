"""Rollouts overlapping training (``grpo.overlap``): training steps per minute of the ``search`` recipe with
the generator in the trainer's process, in a second process, and in a second process rolling the next
batch out while the current one trains, in one run; with the recipe's local search server and with a slow
one.

    python bench/overlap.py [--steps 8] [--tools fast,slow] [--generator-threads 1]

Each side is ``mcp-rl train --recipe search`` for ``--steps`` steps in a fresh output folder (SmolLM2-135M,
the recipe's batch of 4 questions × 4 samples); its pace is the seconds between the ends of step 2 and of
the last step (``metrics.jsonl``'s ``time``), so model loading, server start and the first, unoverlapped
batch are left out. ``slow`` replaces the search server by ``bench/latency_server.py`` (lognormal latency,
median ``--median-ms``, p99 20× the median, ``--hang`` of the calls hanging until a 10 s timeout): its
passages answer nothing, so the rewards say little, but the steps cost what they cost. Progress on
stderr; the last line is one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import finish, log, version

ROOT = Path(__file__).resolve().parents[1]
SIDES = {
    "in_process": [],
    "process": ["rollout.backend=process"],
    "overlap": ["rollout.backend=process", "grpo.overlap=true"],
}


def slow_tool(args: argparse.Namespace) -> list[str]:
    server = {
        "command": sys.executable,
        "args": [
            str(ROOT / "bench" / "latency_server.py"),
            "--median-ms",
            str(args.median_ms),
            "--hang",
            str(args.hang),
        ],
        "timeout": 10,
    }
    return [f"tools.mcpServers={json.dumps({'search': server})}"]


def run_side(args: argparse.Namespace, side: str, tools: str, folder: Path) -> dict[str, Any]:
    output = folder / f"{side}-{tools}"
    settings = [
        f"trainer.max_steps={args.steps}",
        f"trainer.save_steps={args.steps + 1}",
        f"rollout.generator_threads={args.generator_threads}",
        *SIDES[side],
        *(slow_tool(args) if tools == "slow" else []),
    ]
    command = [sys.executable, "-m", "mcp_rl.cli", "train", "--recipe", "search", "-o", str(output)]
    for setting in settings:
        command += ["--set", setting]
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=args.timeout)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{side}/{tools} failed ({done.returncode}):\n{done.stderr[-3000:]}")
    steps = [json.loads(line) for line in (output / "metrics.jsonl").read_text().splitlines()]
    steps = [s for s in steps if s.get("step", 0) >= 2 and "loss" in s]
    pace = (steps[-1]["time"] - steps[0]["time"]) / (steps[-1]["step"] - steps[0]["step"])
    result = {
        "seconds_per_step": round(pace, 2),
        "wall_s": round(wall, 1),
        "reward": round(sum(s["reward"] for s in steps) / len(steps), 3),
        "rollout_s": round(sum(s.get("rollout/total_s", 0.0) for s in steps) / len(steps), 2),
    }
    log(f"{side:>10} / {tools}: {result}")
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--tools", default="fast,slow", help="fast (the recipe's server), slow, or both")
    parser.add_argument("--sides", default=",".join(SIDES), help=f"any of {', '.join(SIDES)}")
    parser.add_argument("--generator-threads", type=int, default=1, help="the generator process's threads")
    parser.add_argument("--median-ms", type=float, default=100.0)
    parser.add_argument("--hang", type=float, default=0.01, help="share of slow calls that never answer")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds one side may take")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-rl-overlap-") as folder:
        for tools in args.tools.split(","):
            results[tools] = {
                side: run_side(args, side, tools, Path(folder)) for side in args.sides.split(",")
            }
    speedups = {
        tools: round(sides["overlap"]["seconds_per_step"] / sides["in_process"]["seconds_per_step"], 2)
        for tools, sides in results.items()
        if {"overlap", "in_process"} <= sides.keys()
    }
    result = {
        "bench": "overlap",
        "steps_per_minute_ratio": {tools: round(1 / ratio, 2) for tools, ratio in speedups.items()},
        "sides": results,
        "steps": args.steps,
        "generator_threads": args.generator_threads,
        "cpu": platform.processor() or platform.machine(),
        "cores": os.cpu_count(),
        "torch": version("torch"),
        "trl": version("trl"),
    }
    lines = ", ".join(
        f"{tools}: {ratio}× in-process steps/min" for tools, ratio in result["steps_per_minute_ratio"].items()
    )
    finish(result, f"overlap {lines}")


if __name__ == "__main__":
    main()
