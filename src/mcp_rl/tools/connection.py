"""One MCP server's connection, owned by a single supervisor task.

anyio requires a client context to be entered and left by the same task, so ``ServerConnection.supervise``
owns the client for the connection's whole life: it connects (stdio, streamable HTTP or in-process),
lists the tools once, pings an idle server, and reconnects with exponential backoff after a crash or a
dropped HTTP connection, cancelling the calls in flight so they come back as "connection lost" instead of
hanging. Callers share its session, which correlates any number of requests in flight.
"""

from __future__ import annotations

import contextlib
import logging
import math
import os
import signal
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client
from mcp.types import DiscoverResult, Tool
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_rl.tools.cancellations import cancelling_in_background
from mcp_rl.tools.http import streamable_http
from mcp_rl.tools.launch import launched
from mcp_rl.tools.listing import ToolListingFilter, skipping_invalid_tools
from mcp_rl.tools.results import ToolPoolError, describe_error
from mcp_rl.tools.server_config import ServerConfig
from mcp_rl.tools.server_logs import StderrCapture, TextSink
from mcp_rl.tools.stdio import stdio_server

logger = logging.getLogger(__name__)
# A health check that timed out is repeated once with this many times its limit before the connection counts
# as lost (an error ends it at once).
SECOND_CHANCE = 3


@dataclass(frozen=True)
class Handshake:
    """The ``mode`` a client connects with (the SDK's ``ConnectMode``) and, for a version pin, the server's
    ``DiscoverResult``: ``auto`` probes ``server/discover`` and falls back to ``initialize``."""

    mode: str = "auto"
    prior_discover: DiscoverResult | None = None

    @classmethod
    def learnt(cls, client: Client) -> Handshake:
        """What ``client``'s ``auto`` handshake found: a legacy server (whose failing ``server/discover``
        a mcp 1.x server answers with a page of validation errors in its log) or a modern one's version."""
        discovered = client.session.discover_result
        if discovered is None:
            return cls("legacy")
        return cls(client.session.protocol_version or "auto", discovered)


class ServerConnection:
    """One server: its supervisor task, its live client and the calls in flight on it."""

    def __init__(
        self,
        config: ServerConfig,
        errlog: TextSink,
        ping_interval_s: float,
        handshake: Handshake | None = None,
    ) -> None:
        self.config = config
        # How this server negotiates its protocol version, once a connection has found out (or from an
        # earlier instance of the same per-episode server): later connections go straight to it.
        self.handshake = handshake or Handshake()
        self.listing = ToolListingFilter(config.name)  # tools the client would refuse, skipped
        self.errlog = errlog
        # The running process's stderr (a drained pipe), and what it said when it failed to start.
        self.stderr: StderrCapture | None = None
        self.start_stderr = ""
        self.ping_interval_s = ping_interval_s
        self.limiter = anyio.CapacityLimiter(config.max_concurrency)
        self.client: Client | None = None
        self.tools: list[Tool] = []
        self.ready = anyio.Event()
        self.lost = anyio.Event()
        self.inflight: set[anyio.CancelScope] = set()
        self.connections = 0
        self.last_error = "not connected yet"
        self.closing = False
        self.first_attempt_failed = anyio.Event()
        # The MCP client turns any HTTP error into "Server returned an error response"; the status itself
        # is what tells a user that the token (401/403) or the Host header (421) is wrong.
        self.http_status: int | None = None
        # Every process a stdio server starts inherits this tag in its environment; it is how the whole
        # tree is found and stopped, including children the server leaves behind when it exits normally.
        self.tag = f"{config.name}:{uuid.uuid4().hex}"

    @property
    def reconnects(self) -> int:
        return max(0, self.connections - 1)

    def _client(self) -> Client:
        config = self.config
        if config.server is not None:
            return Client(config.server)
        if config.url is not None:
            http = cancelling_in_background(self._http_transport())
            return Client(skipping_invalid_tools(http, self.listing))
        transport = stdio_server(
            config.command or "",
            config.args,
            # Servers inherit our environment (caches, offline flags, tokens the user exported) as a
            # shell-launched child would; the config's env wins.
            env={**os.environ, **config.env, _TAG_VARIABLE: self.tag},
            cwd=config.cwd,
            errlog=self._stderr_stream(),
            name=config.name,
        )
        return Client(
            skipping_invalid_tools(cancelling_in_background(transport), self.listing),
            mode=self.handshake.mode,
            prior_discover=self.handshake.prior_discover,
        )

    def _stderr_stream(self) -> TextIO:
        assert self.stderr is not None, "supervise opens the stderr pipe before starting a process"
        return self.stderr.stream

    @asynccontextmanager
    async def _http_transport(self) -> AsyncIterator[Any]:
        async with (
            launched(self.config, self._stderr_stream()) if self.config.command else contextlib.nullcontext(),
            streamable_http(self.config, on_response=self._note_http_status) as streams,
        ):
            yield streams

    async def _note_http_status(self, response: httpx2.Response) -> None:
        if response.status_code >= 400:
            self.http_status = response.status_code

    def _http_error_hint(self) -> str | None:
        status = self.http_status
        if status in (401, 403):
            return (
                f"HTTP {status}: the server rejected the credentials; check this server's 'headers' "
                "(e.g. Authorization: Bearer ${TOKEN}) and that the token is the one the server expects"
            )
        if status == 421:
            return (
                "HTTP 421: the server rejected the Host header (DNS-rebinding protection); connect through "
                "the address the server listens on (127.0.0.1 or localhost)"
            )
        return None  # other statuses (405 on the optional GET stream, say) explain nothing at start-up

    async def supervise(self) -> None:
        """Connect, serve, and reconnect with exponential backoff until the pool closes."""
        delay = 0.1
        while not self.closing:
            self.http_status = None
            deadline = anyio.current_time() + self.config.connect_timeout_s
            if self.config.command is not None and self.config.server is None:
                self.stderr = StderrCapture(self.config.name, self.errlog, self.config.redact)
            try:
                # One scope around the whole connection (anyio scopes must nest): its deadline bounds the
                # start and handshake, and is lifted once the tools are listed.
                async with anyio.create_task_group() as group:
                    watchdog = anyio.CancelScope()
                    group.start_soon(self._stop_unanswering_server, watchdog, deadline)
                    with anyio.CancelScope(deadline=deadline) as start:
                        try:
                            async with self._client() as client:
                                # Stdio only: an HTTP address may be served by another version tomorrow.
                                if self.handshake.mode == "auto" and self.config.transport == "stdio":
                                    self.handshake = Handshake.learnt(client)
                                self.tools = await _list_all_tools(client)
                                start.deadline = math.inf
                                watchdog.cancel()
                                self.client, self.lost = client, anyio.Event()
                                self.connections += 1
                                self.ready.set()
                                delay = 0.1
                                try:
                                    await self._watch(client)
                                finally:
                                    self._drop()
                        finally:
                            watchdog.cancel()
                            self._reap()
                if start.cancelled_caught:
                    self.last_error = f"no handshake within {self.config.connect_timeout_s:.0f} s"
            except Exception as error:  # ExceptionGroup included: a dead HTTP transport raises one
                # Transport errors quote the URL or command line, which may hold a `${VAR}` secret.
                self.last_error = self.config.redact(describe_error(error))
                hint = self._http_error_hint()
                if hint is not None:
                    self.last_error = f"{hint} ({self.last_error})"
            finally:
                await self._drain_stderr()
            self._drop()
            if self.connections == 0:
                # The pool reports a server that never started as a start error; no reconnect follows.
                self.first_attempt_failed.set()
                return
            if self.closing:
                return
            logger.warning(
                "MCP server %r: %s; reconnecting in %.1f s", self.config.name, self.last_error, delay
            )
            await anyio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def _drain_stderr(self) -> None:
        """Wait (briefly) until the ended process's stderr is all in the log; keep its telling lines if it
        never started."""
        if self.stderr is None:
            return
        capture, self.stderr = self.stderr, None
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(capture.wait, 2.0)
        if self.connections == 0:
            self.start_stderr = capture.summary()

    async def _stop_unanswering_server(self, watchdog: anyio.CancelScope, deadline: float) -> None:
        """At the start deadline, kill a stdio server that has not finished its handshake: the transport
        would otherwise grant it the 2 s grace for a clean exit that a server which never spoke won't use."""
        with watchdog:
            await anyio.sleep_until(deadline)
            self._reap()

    def _reap(self) -> None:
        if self.config.command is not None and self.config.server is None:
            _kill_tagged(self.tag)

    async def _watch(self, client: Client) -> None:
        """Return when the connection is lost: a call saw it die, or an idle health check went unanswered."""
        while True:
            with anyio.move_on_after(self.ping_interval_s):
                await self.lost.wait()
                return
            if self.inflight:
                # A busy server is not probed: its answer to the probe queues behind the replies it is
                # writing (a 50 MB one takes longer than the probe's limit), and the calls in flight are
                # health checks of their own: a dead connection fails them (a stdio reader that dies ends
                # the stream, see `stdio.py`), a hung one times them out.
                continue
            failure = await self._health_check(client)
            if failure is not None:
                self.last_error = f"health check failed: {failure}"
                return

    async def _health_check(self, client: Client) -> str | None:
        """Why the idle server failed its health check, or None. A probe that errors fails it at once; one
        that times out gets a second, longer chance first: on cores starved by training and a hundred other
        servers (load ~50 on 2 cores), answered probes timed out, and each restart added to the load."""
        limit = max(5.0, self.ping_interval_s)
        for chance_s in (limit, SECOND_CHANCE * limit):
            try:
                with anyio.fail_after(chance_s):
                    await probe(client)
                return None
            except TimeoutError:
                if self.lost.is_set():
                    return "connection lost"
            except Exception as error:
                return self.config.redact(describe_error(error))
        return f"no answer within {limit:.0f} s, then {SECOND_CHANCE * limit:.0f} s"

    def _drop(self) -> None:
        """Forget the client and cancel the calls in flight on it (they will report 'connection lost')."""
        self.client = None
        if self.ready.is_set():
            self.ready = anyio.Event()
        self.lost.set()
        for scope in self.inflight:
            scope.cancel()
        self.inflight = set()

    async def wait_started(self) -> None:
        """Until the first connection listed its tools, or the first attempt failed: then ``ToolPoolError``.

        A server that cannot start is a configuration problem: say so at once rather than retry forever.
        """
        async with anyio.create_task_group() as race:

            async def wait(event: anyio.Event) -> None:
                await event.wait()
                race.cancel_scope.cancel()

            race.start_soon(wait, self.ready)
            race.start_soon(wait, self.first_attempt_failed)
        if not self.ready.is_set():
            config = self.config
            said = f"; its stderr ended: {self.start_stderr}" if self.start_stderr else ""
            log = getattr(self.errlog, "path", None)  # a ServerLog: where the rest of it is
            said += f" (all of it in {log})" if said and log is not None else ""
            raise ToolPoolError(
                f"MCP server {config.name!r} ({config.describe()}) failed to start: {self.last_error}{said}"
            )

    async def wait_ready(self) -> Client:
        while self.client is None or self.lost.is_set():
            if self.closing:
                raise ToolPoolError("the tool pool is closed")
            await self.ready.wait()
            if self.client is None or self.lost.is_set():
                await anyio.sleep(0.01)
        return self.client


async def probe(client: Client) -> None:
    """A health check that costs the server next to nothing, whatever its tool count: ``ping``, or on a
    2026-07-28 connection (which has no ``ping``) a ``server/discover`` at the negotiated version."""
    version = client.protocol_version
    if version in MODERN_PROTOCOL_VERSIONS:
        await client.session.send_discover(version)
    else:
        await client.session.send_ping()


async def _list_all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


_TAG_VARIABLE = "MCP_RL_SERVER_TAG"


def _kill_tagged(tag: str) -> None:
    """SIGKILL every process of ours whose environment carries ``tag``: a stdio server and whatever it
    started, wherever they were reparented (a child outliving a server that exited on stdin close, say).
    Linux's /proc; elsewhere only the transport's own stop applies."""
    marker = f"{_TAG_VARIABLE}={tag}".encode()
    try:
        pids = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return
    own = os.getpid()
    for pid in pids:
        if pid == own:
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as environ:
                if marker not in environ.read().split(b"\0"):
                    continue
            os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):  # gone meanwhile, or another user's process
            continue
