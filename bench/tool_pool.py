"""Throughput and latency of ``ToolPool`` against a bare ``mcp.Client``, over the same stdio echo server.

    python bench/tool_pool.py [--quick]

In one run, with two copies of ``bench/echo_server.py`` spawned the same way (``sys.executable`` plus the
script, our environment), it measures:

(a) calls/s through ``ToolPool.call_many`` with 256 calls in flight (batches of 256 ``echo`` calls);
(b) calls/s through a bare ``mcp.Client`` session (tools listed once first) with 256 calls in flight the
    same way (an anyio task group per batch of 256);
    (a) and (b) alternate which goes first from one repeat to the next; warm-up rounds are not timed;
(c) the wall time of 256 concurrent calls to a 100 ms async tool through the pool (and, for reference,
    through the bare client).

Progress goes to stderr; the last line on stdout is one JSON object. The targets (ratio >= 0.9,
256 x 100 ms <= 0.3 s) are reported, not enforced; the exit status is 1 only if a call failed.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from _common import finish, log, version  # bench/ is sys.path[0]
from mcp import Client, StdioServerParameters
from mcp.types import CallToolResult, TextContent

from mcp_rl.tools import ToolPool
from mcp_rl.tools.server_config import parse_mcp_servers

SERVER_SCRIPT = Path(__file__).resolve().with_name("echo_server.py")
IN_FLIGHT = 256
SLEEP_S = 0.1
TARGET_RATIO = 0.9
TARGET_CONCURRENT_S = 0.3

Call = tuple[str, dict[str, Any]]


@dataclass
class Sample:
    """One timed repeat of one side."""

    calls: int
    wall_s: float
    cpu_s: float
    failures: int

    @property
    def calls_per_s(self) -> float:
        return self.calls / self.wall_s


@dataclass
class Side:
    """A way of calling tools: the pool or the bare client, and what it measured."""

    name: str
    run_batch: Callable[[Sequence[Call]], Awaitable[int]]  # returns the number of failed calls
    samples: list[Sample] = field(default_factory=list)
    sleep_walls: list[float] = field(default_factory=list)
    sleep_failures: int = 0

    async def timed(self, batches: Sequence[Sequence[Call]]) -> Sample:
        failures = 0
        cpu, wall = time.process_time(), time.perf_counter()
        for batch in batches:
            failures += await self.run_batch(batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return Sample(sum(len(b) for b in batches), wall, cpu, failures)


def echo_batches(total: int, offset: int = 0) -> list[list[Call]]:
    calls = [("echo", {"text": f"call {offset + i}"}) for i in range(total)]
    return [calls[i : i + IN_FLIGHT] for i in range(0, total, IN_FLIGHT)]


def result_text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


def make_pool_side(pool: ToolPool) -> Side:
    async def run_batch(batch: Sequence[Call]) -> int:
        results = await pool.call_many(batch)
        return sum(not r.ok for r in results) + (len(batch) - len(results))

    return Side("pool", run_batch)


def make_raw_side(client: Client) -> Side:
    async def run_batch(batch: Sequence[Call]) -> int:
        failures = 0

        async def one(name: str, arguments: dict[str, Any]) -> None:
            nonlocal failures
            try:
                result = await client.call_tool(name, arguments)
            except Exception:
                failures += 1
                return
            failures += bool(result.is_error)

        async with anyio.create_task_group() as group:
            for name, arguments in batch:
                group.start_soon(one, name, arguments)
        return failures

    return Side("raw", run_batch)


async def check_answers(pool: ToolPool, client: Client) -> None:
    """Both sides must really echo (a benchmark of error replies would be meaningless)."""
    texts = [f"check {i} héllo" for i in range(8)]
    pool_results = await pool.call_many([("echo", {"text": t}) for t in texts])
    raw_results = [result_text(await client.call_tool("echo", {"text": t})) for t in texts]
    pool_texts = [r.text for r in pool_results]
    if pool_texts != texts or raw_results != texts:
        raise SystemExit(f"echo answers are wrong: pool={pool_texts!r} raw={raw_results!r}")


async def bench(args: argparse.Namespace) -> dict[str, Any]:
    repeats = args.repeats or (3 if args.quick else 5)
    calls_per_repeat = args.calls or IN_FLIGHT * (8 if args.quick else 32)
    calls_per_repeat = max(IN_FLIGHT, calls_per_repeat // IN_FLIGHT * IN_FLIGHT)
    sleep_repeats = args.sleep_repeats or (3 if args.quick else 7)
    warmup_calls = IN_FLIGHT * (2 if args.quick else 4)

    # Spawned the same way on both sides: this interpreter, the script, our environment.
    params = StdioServerParameters(command=sys.executable, args=[str(SERVER_SCRIPT)], env={**os.environ})
    configs = parse_mcp_servers({"mcpServers": {"echo": {"command": "python", "args": [str(SERVER_SCRIPT)]}}})
    assert configs[0].command == params.command and configs[0].args == params.args

    log(
        f"{'quick' if args.quick else 'full'} run: {repeats} repeats x {calls_per_repeat} echo calls "
        f"({IN_FLIGHT} in flight) per side; {sleep_repeats} x {IN_FLIGHT} concurrent {SLEEP_S:.1f} s sleeps"
    )
    started = time.perf_counter()
    async with ToolPool(configs) as pool, Client(params) as client:
        await client.list_tools()  # caches output schemas: no tools/list storm on the first 256 calls
        log(f"both servers up in {time.perf_counter() - started:.2f} s")
        await check_answers(pool, client)
        sides = {"pool": make_pool_side(pool), "raw": make_raw_side(client)}

        for side in sides.values():
            warm = await side.timed(echo_batches(warmup_calls))
            log(f"warm-up {side.name}: {warm.calls_per_s:7.0f} calls/s (not counted)")

        for repeat in range(repeats):
            order = ("pool", "raw") if repeat % 2 == 0 else ("raw", "pool")
            for name in order:
                side = sides[name]
                sample = await side.timed(echo_batches(calls_per_repeat, offset=repeat * calls_per_repeat))
                side.samples.append(sample)
                log(
                    f"repeat {repeat + 1}/{repeats} {name:>4}: {sample.calls_per_s:7.0f} calls/s "
                    f"({sample.calls} calls in {sample.wall_s:.2f} s, client CPU "
                    f"{1000 * sample.cpu_s / sample.calls:.3f} ms/call, failures {sample.failures})"
                )

        sleeps: list[Call] = [("sleep", {"seconds": SLEEP_S})] * IN_FLIGHT
        for side in sides.values():
            await side.run_batch(sleeps)  # warm-up
        for repeat in range(sleep_repeats):
            order = ("pool", "raw") if repeat % 2 == 0 else ("raw", "pool")
            for name in order:
                side = sides[name]
                wall = time.perf_counter()
                failures = await side.run_batch(sleeps)
                wall = time.perf_counter() - wall
                side.sleep_walls.append(wall)
                side.sleep_failures += failures
                log(
                    f"{IN_FLIGHT} x {SLEEP_S:.1f} s sleep {repeat + 1}/{sleep_repeats} {name:>4}: "
                    f"{wall:.3f} s" + (f" ({failures} failures)" if failures else "")
                )

    pool_side, raw_side = sides["pool"], sides["raw"]
    pool_rate = statistics.median(s.calls_per_s for s in pool_side.samples)
    raw_rate = statistics.median(s.calls_per_s for s in raw_side.samples)
    paired = [p.calls_per_s / r.calls_per_s for p, r in zip(pool_side.samples, raw_side.samples, strict=True)]

    def cpu_ms(side: Side) -> float:
        return 1000 * sum(s.cpu_s for s in side.samples) / sum(s.calls for s in side.samples)

    concurrent = statistics.median(pool_side.sleep_walls)
    raw_concurrent = statistics.median(raw_side.sleep_walls)
    return {
        "pool_calls_per_s": round(pool_rate, 1),
        "raw_calls_per_s": round(raw_rate, 1),
        "ratio": round(pool_rate / raw_rate, 3),
        "paired_ratio_median": round(statistics.median(paired), 3),
        "concurrent_256x100ms_s": round(concurrent, 4),
        "raw_concurrent_256x100ms_s": round(raw_concurrent, 4),
        "pool_client_cpu_ms_per_call": round(cpu_ms(pool_side), 4),
        "raw_client_cpu_ms_per_call": round(cpu_ms(raw_side), 4),
        "pool_samples_calls_per_s": [round(s.calls_per_s, 1) for s in pool_side.samples],
        "raw_samples_calls_per_s": [round(s.calls_per_s, 1) for s in raw_side.samples],
        "pool_concurrent_samples_s": [round(w, 4) for w in pool_side.sleep_walls],
        "failures": sum(s.failures for side in sides.values() for s in side.samples)
        + sum(side.sleep_failures for side in sides.values()),
        "repeats": repeats,
        "calls_per_repeat": calls_per_repeat,
        "in_flight": IN_FLIGHT,
        "sleep_repeats": sleep_repeats,
        "quick": bool(args.quick),
        "targets": {"ratio_min": TARGET_RATIO, "concurrent_256x100ms_s_max": TARGET_CONCURRENT_S},
        "meets_targets": {
            "ratio": pool_rate / raw_rate >= TARGET_RATIO,
            "concurrent_256x100ms": concurrent <= TARGET_CONCURRENT_S,
        },
        "python": platform.python_version(),
        "mcp": version("mcp"),
        "anyio": version("anyio"),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "elapsed_s": round(time.perf_counter() - started, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="Fewer, shorter repeats (under a minute).")
    parser.add_argument("--repeats", type=int, default=0, help="Timed repeats per side (default 3 / 5).")
    parser.add_argument("--calls", type=int, default=0, help="Echo calls per repeat (multiple of 256).")
    parser.add_argument("--sleep-repeats", type=int, default=0, help="Repeats of the 256 x 100 ms test.")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)

    result = anyio.run(bench, args)
    finish(
        result,
        f"pool {result['pool_calls_per_s']:.0f} calls/s, raw {result['raw_calls_per_s']:.0f} calls/s, "
        f"ratio {result['ratio']:.3f} (target >= {TARGET_RATIO}"
        f"{'' if result['meets_targets']['ratio'] else ', MISSED'}); "
        f"256 x 100 ms through the pool {result['concurrent_256x100ms_s']:.3f} s "
        f"(target <= {TARGET_CONCURRENT_S}"
        f"{'' if result['meets_targets']['concurrent_256x100ms'] else ', MISSED'})",
    )
    return 1 if result["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())
