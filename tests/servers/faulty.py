"""A fault-injecting MCP server for tests and the chaos benchmark (never shipped as a tool).

Each tool misbehaves in one way a real server can: it hangs, dies mid-call, closes its end of the
connection, blocks its own event loop, answers with huge, deeply nested, binary, surrogate-laden or
unknown-typed content, writes garbage or stray JSON-RPC to stdout, floods stderr, or spawns a child
of its own. Runs over stdio or streamable HTTP, or in-process through ``build_server``. ``--silent``
starts a process that never answers ``initialize``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations

from tool_servers.serving import add_transport_arguments, serve

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: make `servers` importable
from servers.echo import build_server as build_echo_server


def _nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"a": value}
    return value


def build_server(name: str = "faulty") -> MCPServer:
    # The echo server's tools (echo, sleep, hang, fail, pid) are the healthy baseline.
    server = build_echo_server(name)

    @server.tool(annotations=ToolAnnotations(readOnlyHint=True))
    async def lookup(text: str, seconds: float = 0.0) -> str:
        """A read-only call (safe to repeat): waits, then answers."""
        await anyio.sleep(seconds)
        return f"found {text}"

    @server.tool()
    async def write(text: str, seconds: float = 0.0) -> str:
        """A call with a side effect (not idempotent): waits, then 'writes' the text."""
        await anyio.sleep(seconds)
        return f"wrote {text}"

    @server.tool()
    async def crash(after_s: float = 0.0) -> str:
        """Die mid-call, without answering."""
        await anyio.sleep(after_s)
        os._exit(3)

    @server.tool()
    def close() -> str:
        """Close the server's end of a stdio connection (its stdin and stdout), then wait."""
        os.close(0)
        os.close(1)
        time.sleep(3600)
        return "unreachable"

    @server.tool()
    async def block(seconds: float) -> str:
        """Block the server's own event loop (a busy server): nothing else it serves moves meanwhile."""
        time.sleep(seconds)
        return f"blocked {seconds}"

    @server.tool()
    def huge(chars: int) -> str:
        """A reply of ``chars`` characters."""
        return "x" * chars

    @server.tool()
    def nested(depth: int) -> str:
        """Text that looks like JSON nested ``depth`` levels deep."""
        return "[" * depth + "]" * depth

    @server.tool()
    def nested_structured(depth: int) -> CallToolResult:
        """Structured content nested ``depth`` levels deep (only an in-process server can send it)."""
        return CallToolResult(content=[], structured_content={"result": _nested(depth)})

    @server.tool()
    def binary(kilobytes: int) -> CallToolResult:
        """An image of ``kilobytes`` KB of random base64, plus invalid base64."""
        import base64

        data = base64.b64encode(os.urandom(kilobytes * 1024)).decode()
        return CallToolResult(
            content=[
                ImageContent(type="image", data=data, mime_type="image/png"),
                ImageContent(type="image", data="not base64 at all!!", mime_type="image/png"),
            ]
        )

    @server.tool()
    def surrogate() -> str:
        """A reply holding a lone surrogate (not valid Unicode)."""
        return "caf\ud800 au lait"

    @server.tool()
    def unknown_blocks(count: int) -> CallToolResult:
        """``count`` content blocks of a type no client knows."""
        blocks = [TextContent.model_construct(type="widget", text="w" * 2000) for _ in range(count)]
        # Built unvalidated on purpose; pydantic would print a warning per block while sending them.
        warnings.filterwarnings("ignore", module="pydantic")
        return CallToolResult.model_construct(content=blocks, is_error=False)

    @server.tool()
    def garbage() -> str:
        """Write a line of garbage to stdout (the stdio transport's channel), then answer."""
        os.write(1, b"\x00\xff this is not JSON-RPC {{{\n")
        return "after garbage"

    @server.tool()
    def bad_jsonrpc() -> str:
        """Write JSON-RPC the client never asked for (an unknown id, a malformed message), then answer."""
        os.write(1, b'{"jsonrpc":"2.0","id":987654321,"result":{}}\n{"jsonrpc":"2.0","method":5}\n')
        return "after bad json-rpc"

    @server.tool()
    def stderr_flood(megabytes: int) -> str:
        """Write ``megabytes`` MB of log lines to stderr as fast as the pipe takes them, then answer."""
        line = b"flood " + b"." * 1017 + b"\n"  # 1 KB a line
        for _ in range(megabytes * 1024):
            os.write(2, line)
        return f"flooded {megabytes} MB"

    @server.tool()
    def spawn_child() -> int:
        """Start a long-lived child process of this server, in a session of its own (as a daemonizing
        helper does, out of reach of a process-group kill); return its pid."""
        child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        return child.pid

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)
    parser.add_argument("--name", default="faulty")
    parser.add_argument("--silent", action="store_true", help="never answer initialize")
    args = parser.parse_args()
    if args.silent:
        time.sleep(3600)
    serve(build_server(args.name), args)
