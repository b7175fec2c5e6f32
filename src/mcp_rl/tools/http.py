"""Streamable-HTTP connections whose abandoned calls are torn down, whatever the server does.

A 2025-era server ends a cancelled call by closing its reply; the MCP client only POSTs
``notifications/cancelled`` and keeps reading, and it writes that notification inline, after the messages
ahead of it. A server or proxy that stalls (before its headers, mid-JSON, mid-event-stream) and ignores
cancellation would keep every such connection open, and one notification it never answers would hold
all later writes. So ``streamable_http`` puts ``ExchangeClosingTransport`` under the client and a writer
over it: a cancellation closes that request's exchange at once (the connection goes, its pool slot is
freed), and the notification goes to the server in the background, bounded. A 2026-era client aborts
a cancelled request's POST itself; its cancellations pass through untouched.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import ssl
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, Self
from urllib.parse import urlsplit

import anyio
import anyio.abc
import httpx2
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.message import SessionMessage
from mcp_types import JSONRPCNotification
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_rl.tools.server_config import ServerConfig

logger = logging.getLogger(__name__)

CANCELLATION_SEND_TIMEOUT_S = 2.0
CANCELLATIONS_IN_FLIGHT = 8  # the client's connection limit leaves this many spare beyond the call cap
REMEMBERED_CANCELLATIONS = 4096  # cancelled ids kept, for requests whose POST starts only after it


class _Exchange:
    """One request's HTTP exchange: whether it was abandoned, and the wait to interrupt if so."""

    def __init__(self, request_id: int | str, request: httpx2.Request) -> None:
        self.request_id = request_id
        self.request = request
        # A 2026-era client aborts a cancelled request's POST itself (closing it is the cancellation).
        self.modern = request.headers.get(MCP_PROTOCOL_VERSION_HEADER) in MODERN_PROTOCOL_VERSIONS
        self.abandoned = False
        self.waiting: anyio.CancelScope | None = None

    def abandon(self) -> None:
        self.abandoned = True
        if self.waiting is not None:
            self.waiting.cancel()

    async def wait(self, step: Awaitable[Any]) -> tuple[bool, Any]:
        """``(True, result)`` of ``step``, or ``(False, None)`` when the exchange is abandoned meanwhile.

        Cancelled inside httpcore, an unfinished exchange closes its connection rather than reusing it.
        """
        if self.abandoned:
            with contextlib.suppress(Exception):
                step.close()  # type: ignore[attr-defined]  # a coroutine never awaited
            return False, None
        with anyio.CancelScope() as scope:
            self.waiting = scope
            try:
                return True, await step
            finally:
                self.waiting = None
        return False, None

    def error_body(self) -> bytes:
        """What the MCP client reads instead of the reply: an error for a request nobody waits for."""
        error = {"code": -32001, "message": "the request was cancelled and its HTTP exchange closed"}
        return json.dumps({"jsonrpc": "2.0", "id": self.request_id, "error": error}).encode()


class _ClosingStream(httpx2.AsyncByteStream):
    """A reply body that ends when its exchange is abandoned. A JSON reply is handed on whole (the MCP
    client reads it whole anyway), so an abandoned one becomes the exchange's error instead of half a
    document the client would log as a parse failure."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, exchange: _Exchange, whole_json: bool, done: Callable[[], None]
    ) -> None:
        self.inner, self.exchange, self.whole_json, self.done = inner, exchange, whole_json, done

    async def __aiter__(self) -> AsyncIterator[bytes]:
        chunks = aiter(self.inner)
        held: list[bytes] = []
        while True:
            going, chunk = await self.exchange.wait(anext(chunks, None))
            if not going:
                await self.aclose()
                if self.whole_json:
                    yield self.exchange.error_body()
                return
            if chunk is None:
                break
            if self.whole_json:
                held.append(chunk)
            else:
                yield chunk
        if held:
            yield b"".join(held)

    async def aclose(self) -> None:
        self.done()
        await self.inner.aclose()


class ExchangeClosingTransport(httpx2.AsyncBaseTransport):
    """Wraps the real transport; see the module's docstring. Background sends run in ``group``."""

    def __init__(self, inner: httpx2.AsyncBaseTransport, group: anyio.abc.TaskGroup) -> None:
        self.inner = inner
        self.group = group
        self.exchanges: dict[int | str, _Exchange] = {}
        self.cancelled: dict[int | str, None] = {}  # oldest first
        self.cancellations = anyio.CapacityLimiter(CANCELLATIONS_IN_FLIGHT)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        message = _json_rpc(request)
        if message.get("method") == "notifications/cancelled":
            cancelled = (message.get("params") or {}).get("requestId")
            if isinstance(cancelled, int | str):
                self._abandon(cancelled)
            self._send_cancellation_soon(request)
            return httpx2.Response(202, request=request)
        request_id = message.get("id")
        if "method" not in message or not isinstance(request_id, int | str):
            return await self.inner.handle_async_request(request)
        exchange = self.exchanges[request_id] = _Exchange(request_id, request)
        if request_id in self.cancelled:  # cancelled before its POST even started: never send it
            exchange.abandon()

        def done() -> None:
            if self.exchanges.get(request_id) is exchange:
                del self.exchanges[request_id]

        try:
            going, response = await exchange.wait(self.inner.handle_async_request(request))
        except BaseException:
            done()
            raise
        if not going:
            done()
            headers = {"content-type": "application/json"}
            return httpx2.Response(200, headers=headers, content=exchange.error_body(), request=request)
        whole_json = response.headers.get("content-type", "").lower().startswith("application/json")
        stream = _ClosingStream(response.stream, exchange, whole_json, done)
        return httpx2.Response(
            response.status_code,
            headers=response.headers,
            stream=stream,
            extensions=response.extensions,
            request=request,
        )

    def cancel(self, request_id: int | str, notification: dict[str, Any]) -> bool:
        """Close a 2025-era request's exchange and send ``notification`` (its cancellation) in the
        background. False when there is nothing to do here: no such exchange, or a 2026-era one."""
        exchange = self.exchanges.get(request_id)
        if exchange is None:
            self._abandon(request_id)  # its POST may not have started yet
            return False
        if exchange.modern:
            return False
        exchange.abandon()
        sent = exchange.request
        headers = {k: v for k, v in sent.headers.items() if k.lower() != "content-length"}
        self._send_cancellation_soon(httpx2.Request("POST", sent.url, headers=headers, json=notification))
        return True

    def _abandon(self, request_id: int | str) -> None:
        """Abandon the request's exchange, now or, if its POST has not started yet, when it does."""
        exchange = self.exchanges.get(request_id)
        if exchange is not None:
            exchange.abandon()
            return
        self.cancelled[request_id] = None
        if len(self.cancelled) > REMEMBERED_CANCELLATIONS:
            del self.cancelled[next(iter(self.cancelled))]

    def _send_cancellation_soon(self, request: httpx2.Request) -> None:
        """Tell the server too, as the protocol asks, without letting a server that never answers the
        notification hold the client's writes (or more than a few connections)."""
        try:
            self.cancellations.acquire_on_behalf_of_nowait(request)
        except anyio.WouldBlock:
            logger.debug("cancellation not sent to the server: %d sends in flight", CANCELLATIONS_IN_FLIGHT)
            return
        self.group.start_soon(self._send_cancellation, request)

    async def _send_cancellation(self, request: httpx2.Request) -> None:
        try:
            with anyio.move_on_after(CANCELLATION_SEND_TIMEOUT_S):
                response = await self.inner.handle_async_request(request)
                await response.aclose()
        except Exception as error:  # the call has failed already; the server just will not hear of it
            logger.debug("cancellation not delivered: %s", error)
        finally:
            self.cancellations.release_on_behalf_of(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


class ForwardingWriter:
    """A write stream in front of the MCP client's ``inner`` one: closing it closes that one; subclasses
    choose what ``send`` does with each message."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    async def send(self, item: Any) -> None:
        await self.inner.send(item)

    def close(self) -> None:
        self.inner.close()

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


class _CancellingWriter(ForwardingWriter):
    """The MCP client's write stream. A cancellation of a 2025-era request is carried out here, at once:
    the client's transport would send it only after the messages ahead of it, one at a time."""

    def __init__(self, inner: Any, transport: ExchangeClosingTransport) -> None:
        super().__init__(inner)
        self.transport = transport

    async def send(self, item: Any) -> None:
        message = item.message if isinstance(item, SessionMessage) else None
        if isinstance(message, JSONRPCNotification) and message.method == "notifications/cancelled":
            request_id = (message.params or {}).get("requestId")
            notification = message.model_dump(by_alias=True, mode="json", exclude_unset=True)
            if isinstance(request_id, int | str) and self.transport.cancel(request_id, notification):
                return
        await self.inner.send(item)


def _json_rpc(request: httpx2.Request) -> dict[str, Any]:
    """The JSON-RPC message a POST carries, or ``{}`` (another verb, a batch, a streamed body)."""
    if request.method != "POST":
        return {}
    try:
        message = json.loads(request.content)
    except (httpx2.RequestNotRead, ValueError):
        return {}
    return message if isinstance(message, dict) else {}


@functools.cache
def shared_ssl_context() -> ssl.SSLContext:
    """The TLS settings httpx would build for each transport, built once: loading the CA bundle takes tens
    of milliseconds of the event loop, and every reconnect of an HTTP server makes a new transport."""
    return httpx2.create_ssl_context()


def environment_proxy(url: str) -> str | None:
    """The proxy the environment names for ``url``: passing our own transport turns off httpx's lookup."""
    parts = urlsplit(url)
    if parts.hostname is None or urllib.request.proxy_bypass(parts.hostname):
        return None
    return urllib.request.getproxies().get(parts.scheme)


@asynccontextmanager
async def streamable_http(
    config: ServerConfig, on_response: Callable[[httpx2.Response], Awaitable[None]]
) -> AsyncIterator[tuple[Any, Any]]:
    """The MCP client's streams to ``config.url`` over streamable HTTP; ``on_response`` sees every
    HTTP response."""
    # Explicit limits: httpx defaults (a 30 s pool timeout, 100 connections) would cap concurrency and turn
    # a slow tool into a confusing transport error.
    limits = httpx2.Limits(
        max_connections=config.max_concurrency + CANCELLATIONS_IN_FLIGHT, max_keepalive_connections=64
    )
    inner = httpx2.AsyncHTTPTransport(
        verify=shared_ssl_context(), limits=limits, proxy=environment_proxy(config.url or "")
    )
    async with anyio.create_task_group() as group:
        transport = ExchangeClosingTransport(inner, group)
        async with (
            httpx2.AsyncClient(
                headers=config.headers,
                timeout=httpx2.Timeout(config.connect_timeout_s, read=None),
                transport=transport,
                event_hooks={"response": [on_response]},
            ) as client,
            streamable_http_client(config.url or "", http_client=client) as (read, write),
        ):
            yield read, _CancellingWriter(write, transport)
        group.cancel_scope.cancel()
