"""A small MCP server for tests: instant, slow, hanging and failing tools. Runs over stdio or HTTP."""

from __future__ import annotations

import argparse
import os

import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from tool_servers.serving import add_transport_arguments, serve


def build_server(name: str = "echo") -> MCPServer:
    server = MCPServer(name)

    @server.tool()
    def echo(text: str) -> str:
        """Return the text unchanged."""
        return text

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Wait, then say how long."""
        await anyio.sleep(seconds)
        return f"slept {seconds}"

    @server.tool()
    async def hang() -> str:
        """Never answer."""
        await anyio.sleep_forever()
        return "unreachable"

    @server.tool()
    def fail(message: str) -> str:
        """Report a tool error with the given message."""
        raise ToolError(message)

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)
    parser.add_argument("--name", default="echo")
    args = parser.parse_args()
    serve(build_server(args.name), args)
