"""A per-episode MCP server for fault tests: the echo server's tools, and ``search``, which answers with the
seed its episode's ``setup`` copied.

    python tests/servers/seeded_search.py --dir EPISODE_DIR [--starts FOLDER --crash-at N]

With ``--starts``, every start takes the next number (a file created there, atomically), and the start that
takes number N exits at once, before the handshake: one instance of many fails to start, as a server with
a bad seed or a busy port would.
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

from echo import build_server as build_echo_server
from mcp.server.mcpserver import MCPServer

from tool_servers.serving import add_transport_arguments, serve

SEED_FILE = "seed.txt"


def take_start_number(folder: Path) -> int:
    for number in itertools.count():
        try:
            os.close(os.open(folder / f"start-{number}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            continue
        return number
    raise AssertionError("unreachable")


def build_server(episode_dir: Path) -> MCPServer:
    server = build_echo_server("seeded-search")  # `pid` among its tools: tests check what is left running

    @server.tool()
    def search(query: str) -> str:
        """Search this episode's seed (its text comes back whatever the query)."""
        seed = episode_dir / SEED_FILE
        return seed.read_text() if seed.is_file() else "no seed"

    return server


def main() -> None:
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)
    parser.add_argument("--dir", type=Path, required=True)
    parser.add_argument("--starts", type=Path)
    parser.add_argument("--crash-at", type=int)
    args = parser.parse_args()
    if args.starts is not None and take_start_number(args.starts) == args.crash_at:
        sys.exit(3)
    serve(build_server(args.dir), args)


if __name__ == "__main__":
    main()
