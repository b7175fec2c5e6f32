"""The pool against a hostile server and a hostile model: every fault is one counted failure of one call.

The servers are real (``tests/servers/faulty.py`` as a stdio subprocess, over HTTP on 127.0.0.1, and
in-process); each test first reproduces a defect of issue 11, then asserts the behaviour that replaced it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager

import anyio
import pytest
from conftest import ROOT, free_port, start_http_server, stop
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult
from servers.faulty import _nested, build_server

from mcp_rl.tools import FailureKind, ToolPool, ToolPoolError
from mcp_rl.tools.observation import render_result
from mcp_rl.tools.server_config import in_process, parse_mcp_servers

FAULTY = str(ROOT / "tests" / "servers" / "faulty.py")


def faulty_stdio(name: str = "faulty", **extra: object) -> list:
    entry = {"command": sys.executable, "args": [FAULTY], "cwd": str(ROOT), **extra}
    return parse_mcp_servers({"mcpServers": {name: entry}})


@contextmanager
def faulty_remote(transport: str) -> Iterator[list]:
    """The fault server as a stdio subprocess, or over streamable HTTP on 127.0.0.1."""
    if transport == "stdio":
        yield faulty_stdio()
        return
    port = free_port()
    process = start_http_server([FAULTY], port)
    try:
        yield parse_mcp_servers({"mcpServers": {"faulty": {"url": f"http://127.0.0.1:{port}/mcp"}}})
    finally:
        stop(process)


async def test_deeply_nested_results_never_raise():
    # Defect 1: '[' * 100000 made the renderer raise RecursionError out of `call` and `call_many`.
    async with ToolPool([in_process("faulty", build_server())], observation_chars=200) as pool:
        results = await pool.call_many([("nested", {"depth": 100_000})] + [("echo", {"text": "fine"})] * 4)
    deep, *healthy = results
    assert deep.ok and deep.text.startswith("[" * 200) and "truncated" in deep.text
    assert [r.text for r in healthy] == ["fine"] * 4
    # Structured content too deep for the JSON encoder (an in-process server sends objects, not JSON).
    result = CallToolResult.model_construct(content=[], structured_content={"result": _nested(100_000)})
    assert render_result(result, 200) == "[structured content that cannot be shown as JSON: RecursionError]"


async def test_unsendable_arguments_fail_alone():
    # Defect 2: a lone surrogate in one call's arguments made the transport raise, dropping every call in
    # flight on the connection and restarting the server (stdio and HTTP alike).
    sleeps = [("sleep", {"seconds": 0.5})] * 20
    bad, fine = ("echo", {"text": "caf\ud800"}), ("echo", {"text": "café"})
    for transport in ("stdio", "http"):
        with faulty_remote(transport) as servers:
            async with ToolPool(servers) as pool:
                *slept, surrogate, ok = await pool.call_many([*sleeps, bad, fine])
                assert [r.text for r in slept] == ["slept 0.5"] * 20 and ok.text == "café"
                assert surrogate.failure is FailureKind.BAD_ARGUMENTS and "surrogate" in surrogate.text
                deep = await pool.call("echo", {"text": _nested(5000)})
                assert deep.failure is FailureKind.BAD_ARGUMENTS
                assert pool.metrics()["servers/faulty/reconnects"] == 0


async def test_lone_surrogate_in_a_result_is_repaired():
    # The reverse of defect 2: a tool's lone surrogate reached the tokenizer, which raises on it.
    async with ToolPool([in_process("faulty", build_server())]) as pool:
        result = await pool.call("surrogate")
    assert result.ok and result.text == "caf\ufffd au lait"
    result.text.encode("utf-8")


async def test_failure_text_honours_the_observation_budget():
    # Defect 4: the error text of a result the client cannot parse was not cut to the budget.
    async with ToolPool([in_process("faulty", build_server())], observation_chars=120) as pool:
        blocks = await pool.call("unknown_blocks", {"count": 1000})
        unknown = await pool.call("no_such_tool_" + "x" * 500)
    for result in (blocks, unknown):
        assert result.failure is not None
        head, _, marker = result.text.partition("…")
        assert len(head) == 120 and "truncated" in marker


async def test_a_busy_connection_is_not_health_checked_to_death():
    # Defect 3: the health check pinged with a 5 s limit while calls were in flight, so a server busy for
    # longer than that (here: its event loop blocked for 6 s) was declared dead with every call on it.
    async with ToolPool(faulty_stdio(), ping_interval_s=0.2) as pool:
        results = await pool.call_many([("block", {"seconds": 6})] + [("echo", {"text": "queued"})] * 5)
        assert [r.text for r in results] == ["blocked 6.0"] + ["queued"] * 5
        assert pool.metrics()["servers/faulty/reconnects"] == 0


async def test_namespaced_names_never_collide():
    # Defect 11: server "a" + tool "b-c" and server "a-b" + tool "c" both became "a-b-c"; one tool was
    # unreachable, even as "a/b-c".
    def server_with(tool_name: str, answer: str) -> MCPServer:
        server = MCPServer(answer)
        server.add_tool(lambda: answer, name=tool_name, description=f"answers {answer}")
        return server

    configs = [
        in_process("a", server_with("b-c", "a:b-c")),
        in_process("x", server_with("b-c", "x:b-c")),
        in_process("a-b", server_with("c", "a-b:c")),
        in_process("y", server_with("c", "y:c")),
    ]
    async with ToolPool(configs) as pool:
        names = [t.name for t in pool.tools]
        assert len(names) == len(set(names)) == 4
        for server, tool in [("a", "b-c"), ("x", "b-c"), ("a-b", "c"), ("y", "c")]:
            assert (await pool.call(f"{server}/{tool}")).text == f"{server}:{tool}"
            spec = next(t for t in pool.tools if (t.server, t.remote_name) == (server, tool))
            assert (await pool.call(spec.name)).text == f"{server}:{tool}"


def process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split()[2] != "Z"  # a zombie is gone for our purposes
    except FileNotFoundError:
        return False


async def test_a_stdio_servers_own_children_are_stopped_with_it():
    # Defect 9: a server exiting normally on stdin close left its own child running.
    async with ToolPool(faulty_stdio()) as pool:
        server_pid = int((await pool.call("pid")).text)
        child_pid = int((await pool.call("spawn_child")).text)
        assert process_alive(child_pid)
    with anyio.move_on_after(5):
        while process_alive(child_pid) or process_alive(server_pid):
            await anyio.sleep(0.05)
    assert not process_alive(server_pid) and not process_alive(child_pid)


async def test_a_server_that_never_answers_fails_at_its_connect_timeout(caplog):
    # Defect 10: a server that never answered `initialize` failed only after the connect timeout + 2 s,
    # with a "reconnecting in 0.1 s" warning although no reconnect followed.
    with pytest.raises(ToolPoolError, match=r"'silent' .* failed to start: no handshake within 1 s") as error:
        async with ToolPool(faulty_stdio("silent", args=[FAULTY, "--silent"], connectTimeout=1)):
            pass
    assert "\n" not in str(error.value)
    assert not [r for r in caplog.records if "reconnecting" in r.getMessage()]


async def test_calls_queued_behind_hung_ones_time_out():
    # A call waiting for a slot of the concurrency cap (all taken by hung calls) waited for a slot first and
    # only then for its own timeout.
    pool = ToolPool([in_process("faulty", build_server(), max_concurrency=2)])
    async with pool, anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(pool.call, "hang", None)
        await anyio.sleep(0.2)  # let both take their slots (they take them before their first await)
        queued = await pool.call("echo", {"text": "x"}, timeout_s=0.5)
        group.cancel_scope.cancel()
    assert queued.failure is FailureKind.TIMEOUT and "no free slot" in queued.text


async def test_expanded_secrets_never_show(monkeypatch, caplog):
    # Defect 8: `${K}` expanded into a URL or an argument showed in the config's repr, in the start error
    # and in a log warning (headers and env were already safe).
    secret = "sup3r-s3cret-value"
    monkeypatch.setenv("K", secret)
    port = free_port()  # nothing listens there: the start fails at once
    entries = {
        "query": {"url": f"http://127.0.0.1:{port}/mcp?key=${{K}}", "connectTimeout": 5},
        "userinfo": {"url": f"http://user:${{K}}@127.0.0.1:{port}/mcp", "connectTimeout": 5},
        "literal": {"url": f"http://user:written-out@127.0.0.1:{port}/mcp", "connectTimeout": 5},
        "argument": {
            "command": sys.executable,
            "args": ["-c", "import sys; sys.exit(3)", "--api-key", "${K}"],
        },
    }
    for name, entry in entries.items():
        (config,) = parse_mcp_servers({"mcpServers": {name: entry}})
        assert secret not in repr(config) and "written-out" not in repr(config)
        with pytest.raises(ToolPoolError) as error:
            async with ToolPool([config]):
                pass
        assert name in str(error.value) and "***" in str(error.value)
        assert secret not in str(error.value) and "written-out" not in str(error.value)
    with pytest.raises(ValueError, match=r"must start with http") as error:
        parse_mcp_servers({"mcpServers": {"s": {"url": "ftp://${K}@host"}}})
    assert secret not in str(error.value)
    assert secret not in caplog.text


async def test_only_idempotent_calls_are_retried_after_a_lost_connection():
    # A call lost in flight may have run: it is sent again only to a tool declared read-only/idempotent.
    async with ToolPool(faulty_stdio(retries=2)) as pool:
        lookup, write, crash = await pool.call_many(
            [("lookup", {"text": "a", "seconds": 1}), ("write", {"text": "b", "seconds": 1}), ("crash", {})],
            timeout_s=30,
        )
        assert crash.failure is FailureKind.CONNECTION_LOST
        assert write.failure is FailureKind.CONNECTION_LOST and write.attempts == 1
        assert lookup.ok and lookup.text == "found a" and lookup.attempts == 2
        assert pool.resolve("lookup").idempotent and not pool.resolve("write").idempotent


async def test_reconnect_counters_are_per_reset_like_call_counters():
    # Issue 11, item 12: reconnects were cumulative while the call counters beside them were per step.
    async with ToolPool(faulty_stdio()) as pool:
        assert (await pool.call("crash")).failure is FailureKind.CONNECTION_LOST
        assert (await pool.call("echo", {"text": "back"}, timeout_s=30)).text == "back"
        step = pool.metrics(reset=True)
        assert step["servers/faulty/reconnects"] == 1 and step["tools/calls"] == 2
        assert (await pool.call("echo", {"text": "again"})).ok
        later = pool.metrics()
        assert later["servers/faulty/reconnects"] == 0 and later["tools/calls"] == 1


async def test_a_tool_with_an_invalid_schema_is_skipped_and_the_rest_kept(caplog):
    """One bad tool in a server's listing: that tool is left out, with its name and why in one line; the
    server's other tools work (before, the whole server was refused with a multi-line pydantic error)."""
    import logging

    from mcp_rl.tools import ToolPool
    from mcp_rl.tools.server_config import parse_mcp_servers

    caplog.set_level(logging.WARNING, logger="mcp_rl.tools.listing")
    proxy = str(ROOT / "tests" / "servers" / "invalid_tool_proxy.py")
    entry = {"command": sys.executable, "args": [proxy], "cwd": str(ROOT)}
    async with ToolPool(parse_mcp_servers({"wild": entry}), ping_interval_s=60) as pool:
        names = {tool.name for tool in pool.tools}
        result = await pool.call("echo", {"text": "still here"})
    assert {"echo", "pid"} <= names and "broken" not in names
    assert result.ok and result.text == "still here"
    skipped = [r.getMessage() for r in caplog.records if "skipped" in r.getMessage()]
    assert any("tool broken skipped, inputSchema" in message for message in skipped), skipped
    assert any("name: Field required" in message for message in skipped), skipped
    assert all("\n" not in message for message in skipped)
