"""The tool pool against real MCP servers: stdio subprocesses, streamable HTTP on 127.0.0.1, in-process."""

from __future__ import annotations

import math
import os
import signal
import time

import anyio
import pytest
from conftest import ECHO_SERVER, ROOT, free_port, start_http_server, stop
from mcp.server.mcpserver import MCPServer
from mcp.types import ImageContent, TextContent

from mcp_rl.tools import BlockingToolPool, FailureKind, ToolPool, ToolPoolError
from mcp_rl.tools.server_config import ENTRY_KEYS, entry_schema, in_process, parse_mcp_servers, parse_server


def servers(**entries: object) -> list:
    return parse_mcp_servers({"mcpServers": entries})


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes.
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


async def test_stdio_calls_and_failure_kinds(echo_stdio):
    async with ToolPool(servers(echo=echo_stdio)) as pool:
        assert {"echo", "sleep", "hang", "fail", "pid"} <= {t.name for t in pool.tools}
        ok = await pool.call("echo", {"text": "héllo"})
        assert ok.ok and ok.text == "héllo"
        bad = await pool.call("echo", {"txt": "x"})
        assert bad.failure is FailureKind.BAD_ARGUMENTS and "text" in bad.text
        error = await pool.call("fail", {"message": "the index is offline"})
        assert error.failure is FailureKind.TOOL_ERROR and "the index is offline" in error.text
        unknown = await pool.call("nope", {})
        assert unknown.failure is FailureKind.UNKNOWN_TOOL and "echo" in unknown.text
        metrics = pool.metrics()
        assert metrics["tools/calls"] == 4 and metrics["tools/failures"] == 3
        assert metrics["tools/echo/failures/bad_arguments"] == 1
        assert metrics["tools/echo/latency_p95_s"] >= metrics["tools/echo/latency_p50_s"] >= 0


async def test_is_error_and_error_pattern_count_as_tool_failures(echo_stdio):
    # `fail` answers with isError: a failure whatever the config says. `echo` of "Error: ..." is a success
    # unless the server's errorPattern says such text is an error.
    plain, patterned = echo_stdio, {**echo_stdio, "errorPattern": "^Error: "}
    async with ToolPool(servers(plain=plain, patterned=patterned)) as pool:
        is_error = await pool.call("plain/fail", {"message": "disk full"})
        plain_text = await pool.call("plain/echo", {"text": "Error: disk full"})
        matched = await pool.call("patterned/echo", {"text": "Error: disk full"})
        unmatched = await pool.call("patterned/echo", {"text": "no Error: here"})
        metrics = pool.metrics()
    assert is_error.failure is FailureKind.TOOL_ERROR and "disk full" in is_error.text
    assert plain_text.ok and unmatched.ok
    assert matched.failure is FailureKind.TOOL_ERROR and matched.text == "Error: disk full"
    assert metrics["tools/plain-fail/failures/tool_error"] == 1
    assert metrics["tools/patterned-echo/failures/tool_error"] == 1
    assert "tools/plain-echo/failures/tool_error" not in metrics and metrics["tools/failures"] == 2


async def test_streamable_http(echo_http):
    url, _, _ = echo_http
    async with ToolPool(servers(remote={"url": url})) as pool:
        results = await pool.call_many([("echo", {"text": str(i)}) for i in range(50)])
        assert [r.text for r in results] == [str(i) for i in range(50)]


async def test_sigkill_mid_batch_reports_connection_lost_then_reconnects(echo_stdio):
    async with ToolPool(servers(echo=echo_stdio), ping_interval_s=0.5) as pool:
        pid = int((await pool.call("pid")).text)
        results: list = []

        async def batch() -> None:
            results.extend(await pool.call_many([("sleep", {"seconds": 5})] * 16, timeout_s=20))

        started = time.monotonic()
        async with anyio.create_task_group() as group:
            group.start_soon(batch)
            await anyio.sleep(0.5)
            os.kill(pid, signal.SIGKILL)
        assert time.monotonic() - started < 5, "in-flight calls must fail fast, not wait for their timeout"
        assert [r.failure for r in results] == [FailureKind.CONNECTION_LOST] * 16
        assert all("went away" in r.text or "Connection closed" in r.text for r in results)
        later = await pool.call("pid", timeout_s=30)
        assert later.ok and int(later.text) != pid
        assert pool.metrics()["servers/echo/reconnects"] >= 1


async def reconnects_after(pool: ToolPool, pid: int, pause_s: float, watch_s: float) -> int:
    """Stop the idle server ``pid`` for ``pause_s`` (SIGSTOP, then SIGCONT), watch for ``watch_s`` in all,
    and return how often the pool reconnected meanwhile."""
    os.kill(pid, signal.SIGSTOP)
    try:
        started = time.monotonic()
        while time.monotonic() - started < watch_s:
            if time.monotonic() - started >= pause_s:
                os.kill(pid, signal.SIGCONT)
            if pool.metrics()["servers/echo/reconnects"]:
                break
            await anyio.sleep(0.2)
    finally:
        if process_alive(pid):
            os.kill(pid, signal.SIGCONT)
    return pool.metrics()["servers/echo/reconnects"]


async def test_an_idle_server_that_stops_answering_is_restarted(echo_stdio):
    async with ToolPool(servers(echo=echo_stdio), ping_interval_s=0.3) as pool:
        pid = int((await pool.call("pid")).text)
        # Never resumed: its health check times out, then its second, longer chance does too.
        assert await reconnects_after(pool, pid, pause_s=math.inf, watch_s=60) == 1
        later = await pool.call("pid", timeout_s=30)
    assert later.ok and int(later.text) != pid and not process_alive(pid)


async def test_a_server_that_answers_late_once_is_not_restarted(echo_stdio):
    # Starved cores (training beside ~100 server instances, load ~50 on 2 cores) let answered health checks
    # time out; every restart added to the load. A pause past the first check's 5 s limit is survived.
    async with ToolPool(servers(echo=echo_stdio), ping_interval_s=0.3) as pool:
        pid = int((await pool.call("pid")).text)
        assert await reconnects_after(pool, pid, pause_s=7, watch_s=10) == 0
        later = await pool.call("pid", timeout_s=10)
    assert later.ok and int(later.text) == pid


async def test_http_server_restart_is_survived():
    port = free_port()
    process = start_http_server([ECHO_SERVER], port)
    try:
        async with ToolPool(
            servers(remote={"url": f"http://127.0.0.1:{port}/mcp"}), ping_interval_s=0.3
        ) as pool:
            assert (await pool.call("echo", {"text": "a"})).ok
            results: list = []

            async def batch() -> None:
                results.extend(await pool.call_many([("sleep", {"seconds": 5})] * 8, timeout_s=8))

            async with anyio.create_task_group() as group:
                group.start_soon(batch)
                await anyio.sleep(0.5)
                process.kill()
                process.wait()
            assert all(not r.ok for r in results)
            assert {r.failure for r in results} <= {FailureKind.CONNECTION_LOST, FailureKind.TIMEOUT}
            process = start_http_server([ECHO_SERVER], port)
            later = await pool.call("echo", {"text": "back"}, timeout_s=30)
            assert later.ok and later.text == "back"
    finally:
        stop(process)


async def test_hanging_tool_times_out_while_others_flow(echo_stdio):
    async with ToolPool(servers(echo=echo_stdio)) as pool:
        finished: dict[str, float] = {}
        start = time.monotonic()

        async def hang() -> None:
            result = await pool.call("hang", timeout_s=1.5)
            assert result.failure is FailureKind.TIMEOUT and "1.5" in result.text
            finished["hang"] = time.monotonic() - start

        async def others() -> None:
            results = await pool.call_many([("echo", {"text": "x"})] * 32)
            assert all(r.ok for r in results)
            finished["others"] = time.monotonic() - start

        async with anyio.create_task_group() as group:
            group.start_soon(hang)
            group.start_soon(others)
        assert finished["others"] < finished["hang"]
        assert (await pool.call("echo", {"text": "still usable"})).ok


async def test_256_concurrent_100ms_calls_overlap(echo_stdio):
    async with ToolPool(servers(echo=echo_stdio)) as pool:
        start = time.monotonic()
        results = await pool.call_many([("sleep", {"seconds": 0.1})] * 256)
        elapsed = time.monotonic() - start
    assert all(r.ok for r in results)
    assert elapsed < 3.0, f"256 × 100 ms took {elapsed:.2f} s: calls are not concurrent"


async def test_concurrency_cap_per_server():
    server = MCPServer("counter")
    state = {"now": 0, "peak": 0}

    @server.tool()
    async def work() -> int:
        """Count calls in flight."""
        state["now"] += 1
        state["peak"] = max(state["peak"], state["now"])
        await anyio.sleep(0.05)
        state["now"] -= 1
        return state["peak"]

    async with ToolPool([in_process("counter", server, max_concurrency=3)]) as pool:
        results = await pool.call_many([("work", {})] * 20)
    assert all(r.ok for r in results)
    assert state["peak"] == 3


async def test_colliding_names_are_namespaced_and_resolvable(echo_stdio):
    other = {**echo_stdio, "args": [ECHO_SERVER, "--name", "other"]}
    async with ToolPool(servers(a=echo_stdio, b=other)) as pool:
        names = {t.name for t in pool.tools}
        assert {"a-echo", "b-echo"} <= names and "echo" not in names
        assert (await pool.call("b/echo", {"text": "via slash"})).text == "via slash"
        assert pool.resolve("a-echo").server == "a"


async def test_observation_rendering_and_budget():
    server = MCPServer("render")

    @server.tool()
    def record() -> dict[str, object]:
        """A structured result."""
        return {"name": "Draskel", "population": 1200}

    @server.tool()
    def picture() -> list[object]:
        """Text plus an image."""
        return [
            TextContent(type="text", text="a map"),
            ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
        ]

    @server.tool()
    def long() -> str:
        """A long text."""
        return "x" * 500

    async with ToolPool([in_process("render", server)], observation_chars=100) as pool:
        structured = await pool.call("record")
        assert structured.text == '{"name":"Draskel","population":1200}'
        assert structured.structured == {"name": "Draskel", "population": 1200}
        assert (await pool.call("picture")).text == "a map\n[image: image/png, 5 B]"
        long = await pool.call("long")
        assert long.text.startswith("x" * 100) and long.text.endswith("[truncated 400 characters]")


async def test_third_party_server_from_pypi():
    async with ToolPool(servers(time={"command": "mcp-server-time"})) as pool:
        result = await pool.call("get_current_time", {"timezone": "UTC"})
    assert result.ok and '"timezone":"UTC"' in result.text


def test_failed_start_is_a_clear_error():
    bad = servers(
        broken={"command": "python", "args": ["-c", "import sys; sys.exit(3)"], "connectTimeout": 5}
    )
    with pytest.raises(ToolPoolError, match="broken"):
        BlockingToolPool(bad).start()


def test_blocking_facade_and_clean_shutdown(echo_stdio):
    with BlockingToolPool(servers(echo=echo_stdio, second={**echo_stdio})) as pool:
        pids = [int(pool.call(f"{name}/pid").text) for name in ("echo", "second")]
        assert all(process_alive(pid) for pid in pids)
        results = pool.call_many([("echo/echo", {"text": "sync"})] * 8)
        assert [r.text for r in results] == ["sync"] * 8
    deadline = time.monotonic() + 5
    while any(process_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(process_alive(pid) for pid in pids), "a stdio server survived the pool's shutdown"


def test_config_parsing(monkeypatch, tmp_path):
    monkeypatch.setenv("SEARCH_TOKEN", "s3cret")
    parsed = parse_mcp_servers(
        {
            "mcpServers": {
                "local": {
                    "command": "python",
                    "args": ["-m", "x"],
                    "env": {"A": "${SEARCH_TOKEN}"},
                    "timeout": 5,
                },
                "remote": {
                    "type": "http",
                    "url": "http://127.0.0.1:1/mcp",
                    "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"},
                },
                "off": {"command": "nothing", "disabled": True},
            }
        }
    )
    assert [s.name for s in parsed] == ["local", "remote"]
    assert parsed[0].env == {"A": "s3cret"} and parsed[0].timeout_s == 5
    assert parsed[1].headers["Authorization"] == "Bearer s3cret"
    assert "s3cret" not in repr(parsed[1])
    for entry, message in [
        ({"cwd": "/tmp"}, "give 'command' \\(stdio\\), 'url'"),
        ({"url": "ftp://a"}, "must start with http"),
        ({"command": "x", "args": "-m x"}, "args must be a list"),
        ({"command": "x", "timeout": "soon"}, "timeout must be a float"),
        ({"command": "x", "colour": "red"}, "unknown field"),
        ({"url": "http://a", "headers": {"X": "${NOT_SET_ANYWHERE}"}}, "NOT_SET_ANYWHERE is not set"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_mcp_servers({"mcpServers": {"s": entry}})
    assert ROOT.exists()


def test_an_entry_takes_the_keys_clients_write_with_help_on_each_and_numbers_as_text():
    schema = entry_schema()
    assert list(schema["properties"]) == list(ENTRY_KEYS)
    assert {"command", "url", "timeout", "maxConcurrency", "includeTools", "scope"} <= set(ENTRY_KEYS)
    assert all(field.get("description") for field in schema["properties"].values())
    assert schema["additionalProperties"] is False
    # A port in args or a number in env is passed on as the text written; desktop-client keys are accepted.
    config = parse_server(
        "s", {"command": "python", "args": ["--port", 8000], "env": {"N": 3}, "type": "stdio"}
    )
    assert config.args == ["--port", "8000"] and config.env == {"N": "3"}
    with pytest.raises(
        ValueError, match=r"^mcpServers\.s: unknown field\(s\) \['timeout_s'\]; known fields: command"
    ):
        parse_server("s", {"command": "python", "timeout_s": 3})  # the Python name is not an entry key
