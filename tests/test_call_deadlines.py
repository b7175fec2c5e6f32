"""A call comes back at its deadline even when telling the server about it cannot be done at once.

When a deadline cancels a call, the MCP client sends ``notifications/cancelled`` before the call may
return, shielded and for up to five seconds. A busy stdio server that reads nothing holds that write
behind every message queued ahead of it, so each call overran its timeout by seconds (the chaos
benchmark's largest overruns). The servers are real subprocesses over stdio; the assertions are on
outcomes and on "back well before the client's five-second bound", not on tight timings.
"""

from __future__ import annotations

import sys
import time

import anyio
from conftest import ROOT

from mcp_rl.tools import FailureKind, ToolPool, ToolResult
from mcp_rl.tools.cancellations import is_cancellation
from mcp_rl.tools.server_config import parse_mcp_servers

FAULTY = str(ROOT / "tests" / "servers" / "faulty.py")
TIMEOUT_S = 1.0
# Before the fix these calls took the timeout plus the client's five-second bound on the cancellation.
LATE_S = TIMEOUT_S + 2.5


async def test_calls_time_out_on_time_while_the_server_reads_nothing():
    servers = parse_mcp_servers(
        {"mcpServers": {"busy": {"command": sys.executable, "args": [FAULTY], "cwd": str(ROOT)}}}
    )
    results: list[ToolResult] = []
    latencies: list[float] = []

    async def call(text: str) -> None:
        started = time.perf_counter()
        results.append(await pool.call("echo", {"text": text}, timeout_s=TIMEOUT_S))
        latencies.append(time.perf_counter() - started)

    async with ToolPool(servers) as pool:
        async with anyio.create_task_group() as group:
            # The server's own event loop is blocked: it reads no more requests, and those queued behind
            # fill its stdin pipe, so every later write of the client (cancellations included) waits.
            group.start_soon(lambda: pool.call("block", {"seconds": 6.0}, timeout_s=TIMEOUT_S))
            await anyio.sleep(0.3)
            for index in range(40):
                group.start_soon(call, f"{index}:" + "x" * 32_000)
        after = await pool.call("echo", {"text": "still here"}, timeout_s=30)
    assert len(results) == 40
    assert {r.failure for r in results} == {FailureKind.TIMEOUT}
    assert max(latencies) < LATE_S, f"calls came back {max(latencies):.1f} s after they started"
    # The cancellations went out in the background, and the connection outlived the wait.
    assert after.ok and after.text == "still here"


def test_only_cancellations_are_sent_in_the_background():
    from mcp.shared.message import SessionMessage
    from mcp_types import JSONRPCNotification, JSONRPCRequest

    cancelled = JSONRPCNotification(jsonrpc="2.0", method="notifications/cancelled", params={"requestId": 3})
    progress = JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={})
    request = JSONRPCRequest(jsonrpc="2.0", id=3, method="tools/call", params={"name": "echo"})
    assert is_cancellation(SessionMessage(cancelled))
    assert not is_cancellation(SessionMessage(progress)) and not is_cancellation(SessionMessage(request))
    assert not is_cancellation(ValueError("a parse error the session skips"))
