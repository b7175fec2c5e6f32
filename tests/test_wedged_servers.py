"""Servers whose output used to wedge their connection (issue 24): every read is now bounded in time and size.

The servers are real subprocesses over stdio (``tests/servers/wedging.py``, which writes straight to the
stdio channel as a server not built on the SDK can). Each test names the defect it reproduces; the
assertions are on outcomes (kinds, counts, "finished long before its timeout"), not on tight timings.
"""

from __future__ import annotations

import logging
import sys

import anyio
from conftest import ECHO_SERVER, ROOT
from mcp import Client
from servers.wedging import build_server

from mcp_rl.tools import FailureKind, ToolPool, ToolResult
from mcp_rl.tools.connection import probe
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.tools.stdio import MAX_MESSAGE_BYTES

WEDGING = str(ROOT / "tests" / "servers" / "wedging.py")


def wedging_stdio(*args: str, name: str = "wedging") -> list:
    entry = {"command": sys.executable, "args": [WEDGING, *args], "cwd": str(ROOT)}
    return parse_mcp_servers({"mcpServers": {name: entry}})


async def test_a_line_that_is_not_utf8_costs_no_call_even_under_load(caplog):
    # Item 1: one `\xff` line killed the SDK's stdout reader; with 8 workers busy, every later call on the
    # server timed out (72 of 72), and the health check, skipped while calls are in flight, never noticed.
    caplog.set_level(logging.WARNING, logger="mcp_rl.tools.stdio")
    results: list[ToolResult] = []

    async def worker(pool: ToolPool) -> None:
        for _ in range(8):
            results.append(await pool.call("sleep", {"seconds": 0.05}, timeout_s=10))

    async with ToolPool(wedging_stdio(), ping_interval_s=0.5) as pool:
        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(worker, pool)
            await anyio.sleep(0.1)
            bad = await pool.call("bad_byte", timeout_s=10)
        later = await pool.call("echo", {"text": "still here"}, timeout_s=10)
        # Such a byte inside a reply costs only itself: it reads as U+FFFD and the rest arrives.
        latin1 = await pool.call("latin1_reply", timeout_s=10)
        metrics = pool.metrics()
    assert bad.ok and bad.text == "after bad byte" and later.text == "still here"
    assert latin1.ok and latin1.text == "caf\ufffd au lait"
    assert len(results) == 64 and [r.failure for r in results if not r.ok] == []
    assert metrics["tools/failures"] == 0 and metrics["servers/wedging/reconnects"] == 0
    # The line did reach the client (and was skipped), so the test exercised the reader.
    assert any("non-JSON-RPC line" in record.getMessage() for record in caplog.records)


async def test_an_unreadable_reply_fails_its_call_at_once():
    # Item 6a: a reply the client cannot parse (a lone-surrogate escape; structured content nested past the
    # parser's limit) was dropped, so its call waited out the whole timeout while the others went on.
    timeout_s = 60.0
    calls = [("unreadable", {"kind": "surrogate"}), ("unreadable", {"kind": "deep"})]
    async with ToolPool(wedging_stdio()) as pool:
        *unreadable, slept = await pool.call_many([*calls, ("sleep", {"seconds": 0.3})], timeout_s=timeout_s)
        metrics = pool.metrics()
    for result in unreadable:
        assert result.failure is FailureKind.TOOL_ERROR and "cannot read" in result.text
        assert result.latency_s < timeout_s / 2  # failed on arrival, not at the deadline
    assert "hex escape" in unreadable[0].text and "recursion limit" in unreadable[1].text
    assert slept.text == "slept 0.3"
    assert metrics["tools/unreadable/failures/tool_error"] == 2 and metrics["servers/wedging/reconnects"] == 0


async def test_a_huge_reply_is_bounded_and_the_server_stays_usable():
    # Item 6b: after a 50 MB reply timed out the server stayed unusable for ~19 s (7 timeouts in a row): the
    # SDK's reader copied the whole line again for every chunk of it, and the replies behind it waited.
    async with ToolPool(wedging_stdio()) as pool:
        # Over the cap (a `-> str` tool's text travels twice, as text and as structured content): refused as
        # soon as it is known to be too long, without reading it into memory.
        refused = await pool.call("huge", {"chars": MAX_MESSAGE_BYTES // 2 + 1}, timeout_s=120)
        first = [await pool.call("echo", {"text": f"after {i}"}, timeout_s=5) for i in range(3)]
        # Under the cap but past its call's timeout: read and dropped without holding up the calls behind it.
        late = await pool.call("huge", {"chars": MAX_MESSAGE_BYTES // 8}, timeout_s=0.05)
        then = [await pool.call("echo", {"text": f"then {i}"}, timeout_s=5) for i in range(7)]
        metrics = pool.metrics()
    assert refused.failure is FailureKind.TOOL_ERROR and refused.latency_s < 60
    assert f"longer than {MAX_MESSAGE_BYTES} bytes" in refused.text
    assert late.failure is FailureKind.TIMEOUT
    assert [r.text for r in first] == [f"after {i}" for i in range(3)]
    assert [r.text for r in then] == [f"then {i}" for i in range(7)]
    assert metrics["servers/wedging/reconnects"] == 0


async def test_health_checks_ping_instead_of_listing_thousands_of_tools():
    # Item 6c: every idle health check re-listed all of a server's tools (20,000 here blocked the shared
    # event loop for ~2 s, and a call to another server overran its timeout).
    servers = wedging_stdio("--tools", "3000", name="big") + parse_mcp_servers(
        {"mcpServers": {"small": {"command": sys.executable, "args": [ECHO_SERVER], "cwd": str(ROOT)}}}
    )
    async with ToolPool(servers, ping_interval_s=0.2) as pool:
        assert sum(tool.server == "big" for tool in pool.tools) > 3000
        others: list[ToolResult] = []
        with anyio.move_on_after(3.0):  # many health-check intervals of the idle big server
            while True:
                others.append(await pool.call("small/echo", {"text": "hi"}, timeout_s=10))
                await anyio.sleep(0.05)
        sent = await pool.call("listings_sent")
        metrics = pool.metrics()
    assert sent.text == "1"  # the listing at the start, and no other
    assert metrics["servers/big/reconnects"] == 0  # so the probes were answered
    assert others and all(r.ok for r in others)


async def test_the_health_probe_works_in_both_protocol_eras():
    # `ping` is gone from the 2026-07-28 protocol, where `server/discover` stands in for it.
    versions = []
    for mode in ("auto", "legacy"):
        async with Client(build_server(), mode=mode) as client:
            await probe(client)
            versions.append(client.protocol_version)
    assert versions == ["2026-07-28", "2025-11-25"]
