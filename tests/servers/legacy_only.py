"""A stdio MCP server that only speaks the initialize handshake, as servers built on the 1.x SDK do: it
answers `server/discover` with an error. Each discover it is sent adds a line to the file named by
``--probes``, so a test can count how many instances were probed."""

from __future__ import annotations

import argparse
import json
import sys


def reply(message_id: object, result: dict | None = None, error: dict | None = None) -> None:
    body = {"jsonrpc": "2.0", "id": message_id, **({"error": error} if error else {"result": result})}
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--probes", required=True)
    probes = parser.parse_args().probes
    tool = {
        "name": "shout",
        "description": "The text in capitals.",
        "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    }
    for line in sys.stdin:
        message = json.loads(line)
        method, message_id = message.get("method"), message.get("id")
        if message_id is None:
            continue  # notifications (initialized, cancelled) need no answer
        if method == "server/discover":
            with open(probes, "a") as out:
                out.write("discover\n")
            reply(message_id, error={"code": -32602, "message": "Invalid request parameters"})
        elif method == "initialize":
            info = {"name": "legacy-only", "version": "1.0"}
            version = message["params"]["protocolVersion"]
            reply(message_id, {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info})
        elif method == "tools/list":
            reply(message_id, {"tools": [tool]})
        elif method == "tools/call":
            text = message["params"]["arguments"]["text"].upper()
            reply(message_id, {"content": [{"type": "text", "text": text}], "isError": False})
        elif method == "ping":
            reply(message_id, {})
        else:
            reply(message_id, error={"code": -32601, "message": f"Method not found: {method}"})


if __name__ == "__main__":
    main()
