"""A raw streamable-HTTP MCP server whose tool calls stall, as a wedged server or proxy does.

It speaks just enough HTTP/1.1 (keep-alive, Content-Length bodies) and JSON-RPC to pass the handshake as a
2025-era server (no ``server/discover``), list its tools and answer ``echo``. A call to ``stall_headers``
never gets a status line; ``stall_json`` gets headers and half of a JSON body; ``stall_sse`` gets an event
stream holding half an event. None of them is ever finished or closed, and ``notifications/cancelled`` is
accepted (``cancellations`` counts them) and never answered: the server ignores cancellation, so only
the client can end the exchange. ``--modern`` makes it a 2026-era server instead.

``open_connections(port)`` counts this process's established TCP connections to a port, from the
client's side (Linux's /proc).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

STALLS = ("stall_headers", "stall_json", "stall_sse")
LEGACY_VERSION = "2025-06-18"
MODERN_VERSION = "2026-07-28"
_STATUS_TEXT = {200: "OK", 202: "Accepted", 400: "Bad Request", 405: "Method Not Allowed"}


def _tool(name: str, description: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    return {"name": name, "description": description, "inputSchema": schema}


TOOLS = [
    _tool("echo", "Answers with the text it was given."),
    _tool("cancellations", "How many cancellations the server has received (and ignored)."),
    _tool("stall_headers", "Accepts the call and never sends a status line."),
    _tool("stall_json", "Sends headers and half of a JSON reply, then nothing."),
    _tool("stall_sse", "Opens an event stream, sends half an event, then nothing."),
]


def _head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} {_STATUS_TEXT[status]}", *(f"{k}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def _json_reply(body: dict[str, Any] | None, status: int = 200) -> bytes:
    data = json.dumps(body).encode() if body is not None else b""
    headers = {"content-length": str(len(data)), "mcp-session-id": "stalling"}
    if body is not None:
        headers["content-type"] = "application/json"
    return _head(status, headers) + data


async def _stall(reader: asyncio.StreamReader) -> None:
    """Send nothing more, ever: wait for the client to close the connection, then drop it too."""
    while await reader.read(65536):
        pass
    raise ConnectionResetError("the client closed the connection")


class StallingServer:
    """The server's state: its era, and the cancellations it has received (and ignored)."""

    def __init__(self, modern: bool) -> None:
        self.modern = modern
        self.cancellations = 0

    def result(self, request_id: Any, result: dict[str, Any]) -> bytes:
        if self.modern:  # 2026-era results say how long they may be cached, and that they are whole
            result = {"resultType": "complete", "ttlMs": 0, "cacheScope": "private", **result}
        return _json_reply({"jsonrpc": "2.0", "id": request_id, "result": result})

    def text(self, request_id: Any, text: str) -> bytes:
        return self.result(request_id, {"content": [{"type": "text", "text": text}], "isError": False})

    async def answer(
        self, message: dict[str, Any], reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        method, request_id = message.get("method"), message.get("id")
        if "id" not in message:  # a notification: a cancellation is swallowed, the rest acknowledged
            if method == "notifications/cancelled":
                self.cancellations += 1
                await _stall(reader)
            writer.write(_json_reply(None, 202))
        elif method == "initialize":
            info, caps = {"name": "stalling", "version": "1"}, {"tools": {}}
            handshake = {"protocolVersion": LEGACY_VERSION, "capabilities": caps, "serverInfo": info}
            writer.write(self.result(request_id, handshake))
        elif method == "server/discover" and self.modern:
            discovered = {"supportedVersions": [MODERN_VERSION], "capabilities": {"tools": {}}}
            writer.write(self.result(request_id, discovered))
        elif method == "tools/list":
            writer.write(self.result(request_id, {"tools": TOOLS}))
        elif method == "ping":
            writer.write(self.result(request_id, {}))
        elif method == "tools/call":
            await self.call(message["params"], request_id, reader, writer)
        else:  # server/discover included: a 2025-era server does not know it
            error = {"code": -32601, "message": f"method not found: {method}"}
            writer.write(_json_reply({"jsonrpc": "2.0", "id": request_id, "error": error}))

    async def call(
        self,
        params: dict[str, Any],
        request_id: Any,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> None:
        name = params["name"]
        if name == "echo":
            writer.write(self.text(request_id, str(params.get("arguments", {}).get("text", ""))))
            return
        if name == "cancellations":
            writer.write(self.text(request_id, str(self.cancellations)))
            return
        reply = json.dumps({"jsonrpc": "2.0", "id": request_id, "result": {"content": []}}).encode()
        if name == "stall_json":
            head = {"content-type": "application/json", "content-length": str(len(reply))}
            writer.write(_head(200, head) + reply[: len(reply) // 2])
        elif name == "stall_sse":
            head = {"content-type": "text/event-stream", "transfer-encoding": "chunked"}
            event = b"event: message\ndata: " + reply[: len(reply) // 2]
            writer.write(_head(200, head) + f"{len(event):x}\r\n".encode() + event + b"\r\n")
        await writer.drain()
        await _stall(reader)

    async def serve_connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    return
                headers: dict[str, str] = {}
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    key, _, value = line.decode("latin-1").partition(":")
                    headers[key.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                verb = request_line.split(b" ", 1)[0]
                if verb == b"POST":
                    await self.answer(json.loads(body), reader, writer)
                elif verb == b"DELETE":
                    writer.write(_json_reply(None, 200))
                else:  # no server-initiated stream
                    writer.write(_json_reply(None, 405))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            return
        finally:
            writer.close()


async def serve(port: int, modern: bool) -> None:
    server = await asyncio.start_server(StallingServer(modern).serve_connection, "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def open_connections(port: int) -> int:
    """This process's established TCP connections to ``port`` on any address (Linux's /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # closed meanwhile
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            with open(table) as rows:
                next(rows)
                for row in rows:
                    fields = row.split()
                    remote_port = int(fields[2].rsplit(":", 1)[1], 16)
                    established = fields[3] == "01"
                    count += established and remote_port == port and fields[9] in inodes
        except FileNotFoundError:
            continue
    return count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--transport", choices=["http"], default="http", help="HTTP only")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--modern", action="store_true", help="a 2026-era server (server/discover)")
    args = parser.parse_args()
    asyncio.run(serve(args.port, args.modern))


if __name__ == "__main__":
    main()
