"""A stdio MCP ``search`` server with heavy-tailed latency, for ``bench/heavy_tail.py`` and the scheduling
tests: each call sleeps a lognormal time, and a share of calls hangs (until the pool's timeout ends them).

    python bench/latency_server.py [--seed 0] [--median-ms 100] [--p99-ratio 20] [--hang 0.01]
                                   [--hang-calls 0,5]

The n-th call to arrive takes the n-th draw of an RNG seeded with ``--seed``, so two runs that make the same
number of calls meet the same latencies and the same hangs, whichever episode makes each call.
"""

from __future__ import annotations

import argparse
import math
import random
from statistics import NormalDist

import anyio
from mcp.server.mcpserver import MCPServer

HANG_S = 3600.0  # longer than any pool timeout: the call ends when the client gives up
PASSAGE = "Doc 1(Title: Fox) The fox lives in Draskel."


def build_server(
    seed: int = 0,
    median_ms: float = 100.0,
    p99_ratio: float = 20.0,
    hang: float = 0.01,
    hang_calls: frozenset[int] = frozenset(),
) -> MCPServer:
    rng = random.Random(seed)
    mu = math.log(median_ms / 1000)
    sigma = math.log(p99_ratio) / NormalDist().inv_cdf(0.99)  # exp(mu + z99·sigma) = p99_ratio × median
    calls = 0
    server = MCPServer("latency")

    @server.tool()
    async def search(query: str) -> str:
        """Search the encyclopedia (slowly, sometimes very slowly)."""
        nonlocal calls
        index, calls = calls, calls + 1
        hangs = rng.random() < hang or index in hang_calls
        await anyio.sleep(HANG_S if hangs else rng.lognormvariate(mu, sigma))
        return f"{PASSAGE} ({query})"

    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=0, help="seed of the latency draws")
    parser.add_argument("--median-ms", type=float, default=100.0, help="median latency of a call")
    parser.add_argument("--p99-ratio", type=float, default=20.0, help="99th percentile / median")
    parser.add_argument("--hang", type=float, default=0.01, help="share of calls that never answer")
    parser.add_argument(
        "--hang-calls", default="", help="comma-separated call numbers (0 = the first) that never answer"
    )
    args = parser.parse_args()
    hang_calls = frozenset(int(n) for n in args.hang_calls.split(",") if n)
    build_server(args.seed, args.median_ms, args.p99_ratio, args.hang, hang_calls).run("stdio")


if __name__ == "__main__":
    main()
