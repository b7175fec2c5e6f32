"""A stdio MCP server whose faults used to wedge a connection (issue 24), for tests and the chaos benchmark.

On top of ``faulty.py``'s tools (``huge`` among them): ``bad_byte`` writes a line that is not UTF-8 to the
stdio channel, ``latin1_reply`` answers with a reply holding such a byte, and ``unreadable`` answers its own
request with a JSON-RPC reply the client cannot parse (a lone-surrogate escape, or structured content nested
deeper than the client's parser allows) and then never sends a real one; ``close_stdout`` ends the stdio
channel while the process lives on, as a server whose writer died would. ``--tools N`` lists N more tools
(listed only: calling one is an unknown tool), for a listing that is costly to send and parse;
``listings_sent`` says how often the listing was asked for.

The SDK's stdio server points fd 1 at stderr while it serves, so stray prints miss the channel; these
tools write to a duplicate of the channel taken before that (``wire_fd``), as a server not built on the
SDK (or a C library writing to its inherited descriptor) would. Without one they answer with a tool error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Tool

from tool_servers.serving import add_transport_arguments, serve

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: make `servers` importable
from servers.faulty import build_server as build_faulty_server

# Deeper than the client's JSON parser accepts (its recursion limit is 200 levels).
UNPARSABLE_DEPTH = 250


def unreadable_reply(request_id: int | str, kind: str) -> bytes:
    """A JSON-RPC reply to ``request_id`` that is valid JSON to a lenient parser, but not to the client's."""
    if kind == "surrogate":  # json.dumps writes a lone surrogate as the escape "\\ud800"
        result = {"content": [{"type": "text", "text": "caf\ud800"}]}
    else:
        deep: Any = 0
        for _ in range(UNPARSABLE_DEPTH):
            deep = {"a": deep}
        result = {"content": [], "structuredContent": {"result": deep}}
    complete = {**result, "isError": False, "resultType": "complete"}
    reply = {"jsonrpc": "2.0", "id": request_id, "result": complete}
    return (json.dumps(reply) + "\n").encode()


def build_server(name: str = "wedging", extra_tools: int = 0, wire_fd: int | None = None) -> MCPServer:
    server = build_faulty_server(name)

    def write_to_wire(data: bytes) -> None:
        if wire_fd is None:
            raise ToolError("this tool writes to the stdio channel: run the server over stdio")
        os.write(wire_fd, data)

    @server.tool()
    async def bad_byte() -> str:
        """Write one line holding a byte that is not UTF-8 to the stdio channel, then answer."""
        write_to_wire(b"\xff\n")
        return "after bad byte"

    @server.tool()
    async def latin1_reply(ctx: Context) -> str:
        """Answer this call with a raw reply whose text holds a Latin-1 byte (not UTF-8), then never again."""
        request_id = json.dumps(ctx.request_context.request_id)
        text = b'"caf\xe9 au lait"'
        content = b'"content":[{"type":"text","text":%s}],"structuredContent":{"result":%s}' % (text, text)
        result = b'{%s,"isError":false,"resultType":"complete"}' % content
        write_to_wire(b'{"jsonrpc":"2.0","id":%s,"result":%s}\n' % (request_id.encode(), result))
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool()
    async def unreadable(ctx: Context, kind: Literal["surrogate", "deep"] = "surrogate") -> str:
        """Answer this call with a reply the client cannot parse, then never answer it properly."""
        write_to_wire(unreadable_reply(ctx.request_context.request_id, kind))
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool()
    async def close_stdout() -> str:
        """Close every descriptor of this process that writes to the stdio channel, and keep running: the
        client's reader sees the channel end while the process lives on (as when a server's writer dies)."""
        if wire_fd is None:
            raise ToolError("this tool closes the stdio channel: run the server over stdio")
        channel = os.readlink(f"/proc/self/fd/{wire_fd}")
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/self/fd/{fd}") == channel:
                    os.close(int(fd))
        await anyio.sleep_forever()
        return "unreachable"

    # Listed only, not registered: registering thousands of functions takes minutes.
    extras = [
        Tool(name=f"extra_{index:05d}", description=f"Listed tool {index}.", input_schema=_EXTRA_SCHEMA)
        for index in range(extra_tools)
    ]
    own_tools = server.list_tools
    listings = 0

    async def counted_listing() -> list[Tool]:
        nonlocal listings
        listings += 1
        return [*await own_tools(), *extras]

    server.list_tools = counted_listing  # type: ignore[method-assign]

    @server.tool()
    def listings_sent() -> int:
        """How many times this server has sent its tool listing."""
        return listings

    return server


_EXTRA_SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)
    parser.add_argument("--name", default="wedging")
    parser.add_argument("--tools", type=int, default=0, help="extra trivial tools to list")
    args = parser.parse_args()
    wire = os.dup(1) if args.transport == "stdio" else None  # before the SDK diverts fd 1
    serve(build_server(args.name, args.tools, wire), args)
