"""Stalled streamable-HTTP replies: a timed-out call's exchange is torn down, whatever the server does.

The server (``tests/servers/stalling_http.py``, a raw HTTP server in its own process) accepts each call
and stalls before its headers, mid-JSON or mid-event-stream, never closes, and ignores cancellation.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import time
from collections.abc import Iterator

import anyio
import httpx2
import pytest
from conftest import ROOT, free_port, stop, wait_for_port
from servers.stalling_http import STALLS, open_connections

from mcp_rl.tools import FailureKind, ToolPool
from mcp_rl.tools.http import CANCELLATION_SEND_TIMEOUT_S, ExchangeClosingTransport, environment_proxy
from mcp_rl.tools.server_config import parse_mcp_servers

# Marked here, not only by conftest after collection: that late mark would drop the parametrization.
pytestmark = pytest.mark.anyio
STALLING_SERVER = str(ROOT / "tests" / "servers" / "stalling_http.py")
TIMEOUT_S = 1.5
CALLS_PER_ROUND = 24
# Past the timeout, a call may take this long to come back on a busy machine; a call whose cancellation
# blocks the client's writes takes the SDK's 5 s write bound more.
OVERRUN_MARGIN_S = 2.0


def stalling_server(modern: bool) -> Iterator[int]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, STALLING_SERVER, "--port", str(port), *(["--modern"] if modern else [])], cwd=ROOT
    )
    try:
        wait_for_port(port)
        yield port
    finally:
        stop(process)


@pytest.fixture
def legacy_port() -> Iterator[int]:
    """A 2025-era stalling server (the MCP client POSTs cancellations to it and keeps reading)."""
    yield from stalling_server(modern=False)


@pytest.fixture
def modern_port() -> Iterator[int]:
    """A 2026-era stalling server (the MCP client aborts a cancelled request's POST itself)."""
    yield from stalling_server(modern=True)


def pool_for(port: int) -> ToolPool:
    url = f"http://127.0.0.1:{port}/mcp"
    return ToolPool(parse_mcp_servers({"mcpServers": {"stalling": {"url": url, "timeout": TIMEOUT_S}}}))


async def idle_connections(pool: ToolPool, port: int) -> int:
    """The connections the pool keeps to ``port`` after a healthy call (its keep-alive one)."""
    answer = await pool.call("echo", {"text": "baseline"})
    assert answer.ok, answer.text
    return open_connections(port)


async def connections_settle(port: int, baseline: int) -> int:
    """The client's open connections to ``port``, once at most ``baseline`` or after the background
    cancellations' bound (and a margin) has passed."""
    deadline = time.monotonic() + CANCELLATION_SEND_TIMEOUT_S + 5.0
    while open_connections(port) > baseline and time.monotonic() < deadline:
        await anyio.sleep(0.1)
    return open_connections(port)


async def stalled_round(pool: ToolPool, port: int, tools: list[str]) -> None:
    """Stalled calls at once: all time out on time; meanwhile each holds a connection of its own."""
    held = 0

    async def count_held() -> None:
        nonlocal held
        while True:
            held = max(held, open_connections(port))
            await anyio.sleep(0.05)

    async with anyio.create_task_group() as group:
        group.start_soon(count_held)
        results = await pool.call_many([(tool, {"text": "x"}) for tool in tools])
        group.cancel_scope.cancel()
    assert held >= len(tools) // 2, f"{held} connections open while {len(tools)} calls stalled"
    assert [r.failure for r in results] == [FailureKind.TIMEOUT] * len(tools), [r.text for r in results]
    worst = max(r.latency_s for r in results)
    assert worst < TIMEOUT_S + OVERRUN_MARGIN_S, f"a stalled call took {worst:.2f} s"


@pytest.mark.parametrize("stall", STALLS)
async def test_stalled_calls_are_torn_down_on_time(
    stall: str, legacy_port: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    async with pool_for(legacy_port) as pool:
        baseline = await idle_connections(pool, legacy_port)
        for _ in range(2):  # the second round shows nothing left over from the first blocks the next
            await stalled_round(pool, legacy_port, [stall] * CALLS_PER_ROUND)
            assert await connections_settle(legacy_port, baseline) <= baseline
        started = time.perf_counter()
        healthy = await pool.call("echo", {"text": "still here"})
        assert healthy.ok and healthy.text == "still here", healthy.text
        assert time.perf_counter() - started < TIMEOUT_S
        # The server was told as well (in the background, a few at a time), though it ignores it.
        told = await pool.call("cancellations")
        assert 1 <= int(told.text) <= 2 * CALLS_PER_ROUND, told.text
    assert open_connections(legacy_port) == 0
    # Neither the SDK's "transport write blocked" nor its "Error parsing JSON response" for a torn-down reply.
    assert [r.getMessage() for r in caplog.records if r.name.startswith("mcp")] == []


async def test_all_three_stalls_at_once_then_healthy_calls(legacy_port: int) -> None:
    async with pool_for(legacy_port) as pool:
        baseline = await idle_connections(pool, legacy_port)
        await stalled_round(pool, legacy_port, [STALLS[i % len(STALLS)] for i in range(3 * CALLS_PER_ROUND)])
        assert await connections_settle(legacy_port, baseline) <= baseline
        results = await pool.call_many([("echo", {"text": f"call {i}"}) for i in range(16)])
        assert [r.text for r in results] == [f"call {i}" for i in range(16)]


async def test_a_modern_server_s_stalls_are_torn_down_too(modern_port: int) -> None:
    async with pool_for(modern_port) as pool:
        baseline = await idle_connections(pool, modern_port)
        await stalled_round(pool, modern_port, [STALLS[i % len(STALLS)] for i in range(CALLS_PER_ROUND)])
        assert await connections_settle(modern_port, baseline) <= baseline
        healthy = await pool.call("echo", {"text": "modern"})
        assert healthy.ok and healthy.text == "modern"


async def test_a_call_cancelled_before_its_post_starts_is_never_sent(legacy_port: int) -> None:
    # The client may cancel a request whose POST task has not run yet; that POST must not go out and stall.
    url = f"http://127.0.0.1:{legacy_port}/mcp"
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "stall_headers"}}
    async with anyio.create_task_group() as group:
        transport = ExchangeClosingTransport(httpx2.AsyncHTTPTransport(), group)
        cancellation = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}}
        assert not transport.cancel(7, cancellation)  # nothing to close yet: the client sends it on
        with anyio.fail_after(TIMEOUT_S):
            response = await transport.handle_async_request(httpx2.Request("POST", url, json=call))
            body = json.loads(await response.aread())
        assert body["id"] == 7 and body["error"]["code"] == -32001, body
        assert open_connections(legacy_port) == 0
        await transport.aclose()
        group.cancel_scope.cancel()


def test_the_environment_s_proxy_still_applies(monkeypatch: pytest.MonkeyPatch) -> None:
    # Our own transport turns off httpx's proxy lookup; the client must look it up for itself.
    monkeypatch.setenv("https_proxy", "http://proxy.internal:3128")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")
    assert environment_proxy("https://tools.example.com/mcp") == "http://proxy.internal:3128"
    assert environment_proxy("http://127.0.0.1:8000/mcp") is None
