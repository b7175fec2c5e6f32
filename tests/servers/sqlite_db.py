"""A small stateful MCP server for tests and benchmarks: one SQLite database file, one ``sql`` tool.

    python tests/servers/sqlite_db.py --db PATH        # stdio

State lives in the file, so a per-episode instance started on a copy of a seed database sees only what its
own episode wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from tool_servers.serving import add_transport_arguments, serve


def build_server(db_path: str) -> MCPServer:
    server = MCPServer("sqlite-db")
    connection = sqlite3.connect(db_path, isolation_level=None, check_same_thread=False)

    @server.tool()
    def sql(query: str) -> str:
        """Run one SQL statement: a SELECT gives its rows as a JSON list, others the rows changed."""
        try:
            cursor = connection.execute(query)
        except sqlite3.Error as error:
            raise ToolError(f"SQL error: {error}") from None
        if cursor.description is None:
            return f"ok, {cursor.rowcount} row(s) changed"
        return json.dumps(cursor.fetchall())

    @server.tool()
    def pid() -> int:
        """The server's process id."""
        return os.getpid()

    return server


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)
    parser.add_argument("--db", required=True)
    args = parser.parse_args()
    serve(build_server(args.db), args)
