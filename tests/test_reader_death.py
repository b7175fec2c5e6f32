"""A stdio channel that ends while its server lives on (issue 24, item 1): the calls in flight fail at once as
"connection lost", busy or not, and the server is started again; no call waits out its timeout.

The server is a real subprocess (``tests/servers/wedging.py``) that closes every descriptor writing to the
channel and keeps running, so the only sign of trouble is the client's reader reaching the end.
"""

from __future__ import annotations

import anyio
from test_wedged_servers import wedging_stdio

from mcp_rl.tools import FailureKind, ToolPool, ToolResult

TIMEOUT_S = 30.0


async def test_a_channel_that_ends_under_load_fails_its_calls_at_once_and_reconnects():
    in_flight: list[ToolResult] = []

    async def worker(pool: ToolPool) -> None:
        in_flight.append(await pool.call("sleep", {"seconds": 5}, timeout_s=TIMEOUT_S))

    # A long ping interval: the health check must not be what notices (it never runs while calls are out).
    async with ToolPool(wedging_stdio(), ping_interval_s=60) as pool:
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(worker, pool)
            await anyio.sleep(0.5)  # the eight calls are out
            closing = await pool.call("close_stdout", timeout_s=TIMEOUT_S)
        later = await pool.call("echo", {"text": "back"}, timeout_s=TIMEOUT_S)
        metrics = pool.metrics()
    assert closing.failure is FailureKind.CONNECTION_LOST, closing
    assert len(in_flight) == 8 and {r.failure for r in in_flight} == {FailureKind.CONNECTION_LOST}
    # Failed when the channel ended, not at the deadline.
    assert all(r.latency_s < TIMEOUT_S / 2 for r in [closing, *in_flight])
    assert later.ok and later.text == "back"
    assert metrics["servers/wedging/reconnects"] >= 1
