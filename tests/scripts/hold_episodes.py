"""Open a pool with per-episode servers, open some episodes, print them, and wait to be killed.

    python tests/scripts/hold_episodes.py SERVERS.json N

Prints one JSON line, ``{"folders": [...], "pids": [...]}`` (each episode's folder and server process),
then sleeps: the test stops it with a signal and checks what it left behind.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers


def main(servers_file: str, episodes: int) -> None:
    servers = parse_mcp_servers(json.loads(Path(servers_file).read_text()))
    with BlockingToolPool(servers) as pool:
        opened = pool.open_episodes(episodes)
        pids = [int(tools.call("pid").text) for tools in opened]
        print(json.dumps({"folders": [str(tools.dir) for tools in opened], "pids": pids}), flush=True)
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
