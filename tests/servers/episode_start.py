"""The echo server as a per-episode instance that may fail to start, for the chaos benchmark.

    python tests/servers/episode_start.py --dir EPISODE_DIR

It exits with an error before its handshake when ``EPISODE_DIR/start.txt`` says ``fail`` (the file a
``setup`` step copies from the episode's dataset row, ``{start}``); otherwise, and without the file (the
instance that only lists the tools), it serves the echo server's tools over stdio.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tool_servers.serving import add_transport_arguments, serve

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run as a script: make `servers` importable
from servers.echo import build_server


def main() -> None:
    parser = argparse.ArgumentParser()
    add_transport_arguments(parser)
    parser.add_argument("--dir", type=Path, required=True)
    args = parser.parse_args()
    start = args.dir / "start.txt"
    if start.is_file() and start.read_text().strip() == "fail":
        sys.exit("episode_start: this episode's start.txt says fail")
    serve(build_server("episode"), args)


if __name__ == "__main__":
    main()
