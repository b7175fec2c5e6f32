"""A stdio transport whose every read is bounded, for MCP servers that write what they like.

The SDK's ``stdio_client`` wedges a session on three things a server can write: a byte that is not UTF-8
(its reader dies, and its shielded drain keeps the session from ever seeing the end, so calls hang), a
reply it cannot parse (dropped, so the call waits out its timeout) and a very long line (assembled by
copying the whole buffer again for every chunk, so the replies behind it wait many seconds). ``stdio_server``
reads raw bytes and splits lines without copying, decodes each line on its own with replacement characters,
refuses a message over ``max_message_bytes``, and answers a request whose reply was unreadable or too large
with a JSON-RPC error at once. Any other death of its reader ends the stream, which fails the calls in flight
as "connection closed". The process is handled as the SDK does on POSIX (the pool's process handling is
POSIX-only): a session of its own, stdin closed first, its process group terminated after a grace period.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager, suppress
from typing import Any, TextIO

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.os.posix.utilities import terminate_posix_process_tree
from mcp.shared.message import SessionMessage
from mcp_types import jsonrpc_message_adapter
from mcp_types.jsonrpc import PARSE_ERROR, ErrorData, JSONRPCError

logger = logging.getLogger(__name__)

# Far above any reply a model can use (observations are cut to a few thousand characters) and above large
# tool listings, yet small enough that one runaway reply cannot take the client's memory or its time. A
# tool's text travels twice when it also declares an output schema (as text and as structured content).
MAX_MESSAGE_BYTES = 64 * 1024 * 1024

# Grace for a server to exit on its own once its stdin closes, as the MCP lifecycle asks; then SIGTERM,
# and SIGKILL after as long again.
_EXIT_GRACE_S = 2.0

# How much of a refused line is kept: enough to find the id among the message's top-level keys.
_HEAD_BYTES = 4096

_TOP_LEVEL_ID = re.compile(r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.)*")')


@asynccontextmanager
async def stdio_server(
    command: str,
    args: list[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    errlog: TextIO,
    name: str,
    max_message_bytes: int = MAX_MESSAGE_BYTES,
) -> AsyncIterator[tuple[MemoryObjectReceiveStream[Any], MemoryObjectSendStream[SessionMessage]]]:
    """Start ``command`` and yield the (read, write) streams an MCP ``Client`` takes as its transport."""
    process = await anyio.open_process(
        [command, *args], env=dict(env), cwd=cwd, stderr=errlog, start_new_session=True
    )
    incoming_send, incoming = anyio.create_memory_object_stream[Any](0)
    outgoing, outgoing_receive = anyio.create_memory_object_stream[SessionMessage](0)
    reader = _LineReader(name, max_message_bytes)
    async with anyio.create_task_group() as group:
        assert process.stdout is not None and process.stdin is not None  # opened with pipes
        group.start_soon(reader.run, process.stdout, incoming_send)
        group.start_soon(_write_messages, process.stdin, outgoing_receive, incoming_send)
        try:
            yield incoming, outgoing
        finally:
            with anyio.CancelScope(shield=True):
                # Closing our end of the incoming stream turns the reader into a drain, so a server
                # blocked on a full stdout pipe can still read its stdin's end and exit.
                incoming.close()
                outgoing.close()
                await _stop(process)
            group.cancel_scope.cancel()


async def _write_messages(
    stdin: ByteSendStream,
    messages: MemoryObjectReceiveStream[SessionMessage],
    incoming: MemoryObjectSendStream[Any],
) -> None:
    try:
        async with messages:
            async for message in messages:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                await stdin.send(data.encode())
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
        # The server stopped reading: end the session's stream too, or its calls would wait forever.
        await incoming.aclose()


async def _stop(process: Process) -> None:
    """Close stdin, wait out the grace for a clean exit, then terminate the server's process group."""
    if process.stdin is not None:
        await _close_quietly(process.stdin)
    with anyio.move_on_after(_EXIT_GRACE_S):
        while process.returncode is None:
            # Not `process.wait()`: it also waits for the pipes, which a leftover child can hold open.
            await anyio.sleep(0.01)
    if process.returncode is None:
        await terminate_posix_process_tree(process, _EXIT_GRACE_S)
    if process.stdout is not None:
        await _close_quietly(process.stdout)


async def _close_quietly(stream: ByteSendStream | ByteReceiveStream) -> None:
    with suppress(OSError, anyio.BrokenResourceError, anyio.ClosedResourceError):
        await stream.aclose()


class _LineReader:
    """Turns a server's stdout into messages: one line each, bounded in size, never raising on content."""

    def __init__(self, server: str, max_message_bytes: int) -> None:
        self.server = server
        self.max_message_bytes = max_message_bytes
        self.parts: list[bytes] = []  # the current line so far, unless it is being refused
        self.size = 0
        self.refusing: bytes | None = None  # the head of an over-long line whose rest is skipped

    async def run(self, stdout: ByteReceiveStream, incoming: MemoryObjectSendStream[Any]) -> None:
        try:
            async with incoming:
                async for chunk in stdout:
                    for item in self.feed(chunk):
                        await incoming.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
            pass  # the session is gone or the pipe is closed: only the drain below remains
        except Exception:
            # Leaving `async with incoming` has ended the session's stream: its calls fail at once as
            # "connection closed" and the connection's supervisor starts the server again.
            logger.exception("MCP server %r: reading its stdout failed", self.server)
        await _drain(stdout)

    def feed(self, chunk: bytes) -> list[Any]:
        """The messages (or errors, for the session to skip) that ``chunk`` completes."""
        items: list[Any] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            item = self.end_line(chunk[start:end])
            if item is not None:
                items.append(item)
            start = end + 1
        rest = chunk[start:]
        if not rest:
            return items
        if self.refusing is not None:
            return items
        if self.size + len(rest) <= self.max_message_bytes:
            self.parts.append(rest)
            self.size += len(rest)
            return items
        # Refused as soon as it is known to be too long, not once it ends: the call fails now.
        head = b"".join([*self.parts, rest])[:_HEAD_BYTES]
        self.parts, self.size, self.refusing = [], 0, head
        answer = self.refusal(head, f"its reply is longer than {self.max_message_bytes} bytes")
        if answer is not None:
            items.append(answer)
        return items

    def end_line(self, tail: bytes) -> Any:
        if self.refusing is not None:
            self.refusing = None  # its refusal went out when it grew too long
            return None
        if self.size + len(tail) > self.max_message_bytes:
            head = b"".join([*self.parts, tail])[:_HEAD_BYTES]
            self.parts, self.size = [], 0
            return self.refusal(head, f"its reply is longer than {self.max_message_bytes} bytes")
        line = b"".join([*self.parts, tail]) if self.parts else tail
        self.parts, self.size = [], 0
        if not line.strip():
            return None
        text = line.decode("utf-8", errors="replace")
        try:
            return SessionMessage(jsonrpc_message_adapter.validate_json(text, by_name=False))
        except ValueError as error:
            reason = _one_line(error)
            answer = self.refusal(line[:_HEAD_BYTES], reason, whole=text)
            if answer is not None:
                return answer
            logger.warning(
                "MCP server %r wrote a non-JSON-RPC line, skipped (%s): %.200r", self.server, reason, text
            )
            return error  # the session skips it

    def refusal(self, head: bytes, reason: str, whole: str | None = None) -> SessionMessage | None:
        """An error reply to the request a refused line answered, when its id can be found."""
        request_id = _reply_id(head.decode("utf-8", errors="replace"), whole)
        if request_id is None:
            return None
        message = f"MCP server {self.server!r} sent a reply the client cannot read: {reason}"
        logger.warning("%s (request %r)", message, request_id)
        error = JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=PARSE_ERROR, message=message))
        return SessionMessage(error)


def _reply_id(head: str, whole: str | None) -> int | str | None:
    """The id of the reply that ``head`` starts (a request or notification of the server's has none).

    Found among the top-level keys before the first nested value, where servers put it; failing that, by
    a lenient parse of the whole line, which accepts lone surrogates and, within limits, deep nesting.
    """
    opening = head.find("{")
    if opening < 0:
        return None
    nested = [i for i in (head.find("{", opening + 1), head.find("[", opening + 1)) if i >= 0]
    top = head[opening : min(nested, default=len(head))]
    if '"method"' not in top and (match := _TOP_LEVEL_ID.search(top)) is not None:
        return _as_id(json.loads(match.group(1)))
    if whole is None:
        return None
    try:
        message = json.loads(whole)
    except (ValueError, RecursionError):
        return None
    if not isinstance(message, dict) or "method" in message:
        return None
    return _as_id(message.get("id"))


def _as_id(value: Any) -> int | str | None:
    return value if isinstance(value, int | str) and not isinstance(value, bool) else None


def _one_line(error: Exception) -> str:
    errors = getattr(error, "errors", None)
    if callable(errors):
        first = errors()[0]
        return str(first.get("msg", error))
    return " ".join(str(error).split())


async def _drain(stdout: ByteReceiveStream) -> None:
    """Read and discard the rest of stdout, so a server flushing its output can exit (until ``_stop``
    closes the pipe, or the transport's task group is cancelled)."""
    try:
        async for _ in stdout:
            pass
    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError):
        pass
