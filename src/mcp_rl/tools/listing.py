"""Tool listings as servers send them: a tool the client cannot accept is skipped, not the whole server.

The MCP client validates a ``tools/list`` result as one object, so one tool with an invalid input schema
(a server in the wild sends what it likes) makes the listing, and so the server, unusable.
``skipping_invalid_tools`` sits between the transport and the client session: it checks each listed tool on
its own, with the same
validation the client applies for the negotiated protocol version, and removes those that fail, saying which
and why in one line each. The other tools work as usual.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
from mcp.shared.message import SessionMessage
from mcp.types import Tool
from mcp_types import methods
from mcp_types.jsonrpc import JSONRPCResponse
from pydantic import ValidationError

logger = logging.getLogger(__name__)


class ToolListingFilter:
    """Removes from each ``tools/list`` result the tools the client would refuse; remembers them."""

    def __init__(self, server: str) -> None:
        self.server = server
        self.version: str | None = None
        self.skipped: dict[str, str] = {}

    def __call__(self, message: Any) -> None:
        inner = getattr(message, "message", None)
        if not isinstance(inner, JSONRPCResponse):
            return
        result = inner.result
        if isinstance(result.get("protocolVersion"), str):  # the handshake: what the listing is checked as
            self.version = result["protocolVersion"]
            return
        tools = result.get("tools")
        if not isinstance(tools, list):
            return
        kept = []
        for index, tool in enumerate(tools):
            problem = self.problem(tool)
            if problem is None:
                kept.append(tool)
                continue
            name = tool.get("name") if isinstance(tool, dict) else None
            label = str(name) if isinstance(name, str) and name else f"#{index}"
            self.skipped[label] = problem
            logger.warning("MCP server %r: tool %s skipped, %s", self.server, label, problem)
        if len(kept) < len(tools):
            result["tools"] = kept

    def problem(self, tool: Any) -> str | None:
        """Why the client would refuse this one tool (one line), or None."""
        try:
            self._validate(tool)
        except ValidationError as error:
            return _one_line(error)
        return None

    def _validate(self, tool: Any) -> None:
        if self.version is not None:
            try:
                methods.validate_server_result("tools/list", self.version, {"tools": [tool]})
                return
            except ValidationError:
                raise
            except (KeyError, ValueError):  # a version these types do not know: the version-free model
                pass
        Tool.model_validate(tool, by_name=False)


def _one_line(error: ValidationError) -> str:
    first = error.errors()[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if part not in ("tools", 0))
    return f"{where or 'tool'}: {first.get('msg', error)}"


@asynccontextmanager
async def skipping_invalid_tools(
    transport: AbstractAsyncContextManager[tuple[Any, Any]], listing: ToolListingFilter
) -> AsyncIterator[tuple[Any, Any]]:
    """``transport``'s streams, with invalid tools taken out of every tool listing on the way in."""
    async with transport as (read, write):
        send, receive = anyio.create_memory_object_stream[Any](0)

        async def relay() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, SessionMessage):
                        listing(item)
                    await send.send(item)

        async with anyio.create_task_group() as group:
            group.start_soon(relay)
            try:
                yield receive, write
            finally:
                group.cancel_scope.cancel()
