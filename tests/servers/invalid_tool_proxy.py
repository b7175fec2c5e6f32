"""A stdio relay in front of tests/servers/echo.py that adds tools a client must refuse to every tool listing.

SDK servers will not send an invalid tool, but servers in the wild do; this puts one on the wire for the
client to deal with: one with an input schema that is not an object, one without a name.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

ECHO = Path(__file__).with_name("echo.py")
INVALID = [
    {"name": "broken", "description": "schema is a string", "inputSchema": "not a schema"},
    {"description": "no name", "inputSchema": {"type": "object"}},
]


def with_invalid_tools(line: bytes) -> bytes:
    try:
        message = json.loads(line)
    except ValueError:
        return line
    result = message.get("result") if isinstance(message, dict) else None
    if isinstance(result, dict) and isinstance(result.get("tools"), list):
        result["tools"] = [*result["tools"], *INVALID]
        return (json.dumps(message) + "\n").encode()
    return line


def main() -> None:
    server = subprocess.Popen(
        [sys.executable, str(ECHO)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ECHO.parents[2]
    )
    assert server.stdin is not None and server.stdout is not None

    def to_server() -> None:
        for line in sys.stdin.buffer:
            server.stdin.write(line)
            server.stdin.flush()
        server.stdin.close()

    threading.Thread(target=to_server, daemon=True).start()
    for line in server.stdout:
        sys.stdout.buffer.write(with_invalid_tools(line))
        sys.stdout.buffer.flush()
    server.wait()


if __name__ == "__main__":
    main()
