"""Cancellation notifications sent in the background, so that a call ends at its deadline.

When a call's deadline cancels it, the MCP client sends ``notifications/cancelled`` before the call can
return, shielded and for up to several seconds: behind every message queued ahead of it (a busy stdio
server that is not reading its stdin, a stalled HTTP server). The call then overran its timeout by that
long. ``cancelling_in_background`` wraps a transport so that such a notification is handed to a task of
its own and the call returns at once; the notification still goes out, after the messages ahead of it,
within ``CANCELLATION_SEND_TIMEOUT_S``, and at most ``CANCELLATIONS_IN_FLIGHT`` wait at a time (the rest
are dropped: a server that reads nothing will not read them either).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio
import anyio.abc
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification

from mcp_rl.tools.http import CANCELLATION_SEND_TIMEOUT_S, ForwardingWriter

logger = logging.getLogger(__name__)

CANCELLATIONS_IN_FLIGHT = 256  # one per call a server may hold at the default concurrency cap


def is_cancellation(item: Any) -> bool:
    message = item.message if isinstance(item, SessionMessage) else None
    return isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled"


class BackgroundCancellingWriter(ForwardingWriter):
    """The MCP client's write stream: every message is sent as it comes, except cancellations, which
    are sent by a task in ``group`` while the caller goes on."""

    def __init__(self, inner: Any, group: anyio.abc.TaskGroup) -> None:
        super().__init__(inner)
        self.group = group
        self.waiting = anyio.CapacityLimiter(CANCELLATIONS_IN_FLIGHT)

    async def send(self, item: Any) -> None:
        if not is_cancellation(item):
            await self.inner.send(item)
            return
        borrower = object()  # a message is not hashable
        try:
            self.waiting.acquire_on_behalf_of_nowait(borrower)
        except anyio.WouldBlock:
            logger.debug("cancellation dropped: %d already wait to be sent", CANCELLATIONS_IN_FLIGHT)
            return
        self.group.start_soon(self._send_cancellation, item, borrower)

    async def _send_cancellation(self, item: Any, borrower: object) -> None:
        try:
            with anyio.move_on_after(CANCELLATION_SEND_TIMEOUT_S):
                await self.inner.send(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the connection is gone: its server has nothing left to cancel
        finally:
            self.waiting.release_on_behalf_of(borrower)


@asynccontextmanager
async def cancelling_in_background(
    transport: AbstractAsyncContextManager[tuple[Any, Any]],
) -> AsyncIterator[tuple[Any, Any]]:
    """``transport``'s streams, its write stream a ``BackgroundCancellingWriter``."""
    async with transport as (read, write), anyio.create_task_group() as group:
        try:
            yield read, BackgroundCancellingWriter(write, group)
        finally:
            group.cancel_scope.cancel()
