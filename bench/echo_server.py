"""The benchmark's stdio MCP server: an instant ``echo`` and an async ``sleep``, like the test echo server.

Kept apart from ``tests/`` so the benchmark runs from a bare checkout: ``python bench/echo_server.py``.
"""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer


def build_server(name: str = "bench-echo") -> MCPServer:
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

    return server


if __name__ == "__main__":
    build_server().run("stdio")
