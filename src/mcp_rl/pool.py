"""ToolPool: many MCP servers, many concurrent tool calls, failures that come back as results.

Every connection is owned by one supervisor task (anyio requires a client context to be entered and left
by the same task); callers from anywhere in a rollout batch share its session, which correlates any
number of requests in flight. The supervisor lists tools once after connecting, pings an idle server,
and reconnects with backoff after a crash or a dropped HTTP connection, cancelling the calls that were in
flight so they come back as "connection lost" instead of hanging.

``ToolPool`` is the async core; ``BlockingToolPool`` runs it on a background event loop for synchronous
callers such as the trainer.
"""

from __future__ import annotations

import logging
import math
import os
import sys
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TextIO, TypeVar

import anyio
import anyio.from_thread
import httpx2
import jsonschema
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Tool
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND

from mcp_rl.observation import render_result, truncate
from mcp_rl.server_config import ServerConfig

logger = logging.getLogger(__name__)
T = TypeVar("T")


class FailureKind(StrEnum):
    """Why a call produced no tool output; the values are what logs and observations say."""

    TIMEOUT = "timeout"
    CONNECTION_LOST = "connection lost"
    UNAVAILABLE = "server unavailable"
    TOOL_ERROR = "tool error"
    BAD_ARGUMENTS = "bad arguments"
    UNKNOWN_TOOL = "unknown tool"


class ToolPoolError(RuntimeError):
    """The pool cannot be used at all (a server failed to start, or the pool is closed)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: a pool-unique name, plus where it really lives."""

    name: str
    server: str
    remote_name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None

    def as_dict(self) -> dict[str, Any]:
        """MCP's shape, for prompts and parsers."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def as_openai(self) -> dict[str, Any]:
        """The function-calling shape chat templates take through ``tools=``."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


@dataclass
class ToolResult:
    """The outcome of one call. ``text`` is always the observation the model reads, failures included."""

    tool: str
    arguments: dict[str, Any]
    text: str
    failure: FailureKind | None = None
    latency_s: float = 0.0
    attempts: int = 1
    structured: Any = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def failed(tool: str, arguments: dict[str, Any], kind: FailureKind, detail: str, **extra: Any) -> ToolResult:
    return ToolResult(tool=tool, arguments=arguments, text=f"Error ({kind}): {detail}", failure=kind, **extra)


@dataclass
class _Stats:
    calls: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=8192))


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _describe(error: BaseException) -> str:
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(_describe(e) for e in error.exceptions)
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__


class _Connection:
    """One server: its supervisor task, its live client and the calls in flight on it."""

    def __init__(self, config: ServerConfig, errlog: TextIO, ping_interval_s: float) -> None:
        self.config = config
        self.errlog = errlog
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

    @property
    def reconnects(self) -> int:
        return max(0, self.connections - 1)

    def _client(self) -> Client:
        config = self.config
        if config.server is not None:
            return Client(config.server)
        if config.url is not None:
            return Client(self._http_transport())
        params = StdioServerParameters(
            command=config.command or "",
            args=config.args,
            # Servers inherit our environment (caches, offline flags, tokens the user exported) as a
            # shell-launched child would; the config's env wins.
            env={**os.environ, **config.env},
            cwd=config.cwd,
        )
        return Client(stdio_client(params, errlog=self.errlog))

    @asynccontextmanager
    async def _http_transport(self) -> AsyncIterator[Any]:
        # An explicit client: httpx defaults (a 30 s pool timeout, 100 connections) would cap concurrency
        # and turn a slow tool into a confusing transport error.
        limits = httpx2.Limits(max_connections=self.config.max_concurrency + 8, max_keepalive_connections=64)
        timeout = httpx2.Timeout(self.config.connect_timeout_s, read=None)
        async with (
            httpx2.AsyncClient(
                headers=self.config.headers,
                timeout=timeout,
                limits=limits,
                event_hooks={"response": [self._note_http_status]},
            ) as http,
            streamable_http_client(self.config.url or "", http_client=http) as streams,
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
            try:
                # One scope around the whole connection (anyio scopes must nest): its deadline bounds the
                # start and handshake, and is lifted once the tools are listed.
                with anyio.CancelScope(
                    deadline=anyio.current_time() + self.config.connect_timeout_s
                ) as start:
                    async with self._client() as client:
                        self.tools = await _list_all_tools(client)
                        start.deadline = math.inf
                        self.client, self.lost = client, anyio.Event()
                        self.connections += 1
                        self.ready.set()
                        delay = 0.1
                        try:
                            await self._watch(client)
                        finally:
                            self._drop()
                if start.cancelled_caught:
                    self.last_error = f"no handshake within {self.config.connect_timeout_s:.0f} s"
            except Exception as error:  # ExceptionGroup included: a dead HTTP transport raises one
                self.last_error = _describe(error)
                hint = self._http_error_hint()
                if hint is not None:
                    self.last_error = f"{hint} ({self.last_error})"
            self._drop()
            if self.connections == 0:
                self.first_attempt_failed.set()
            if self.closing:
                return
            logger.warning(
                "MCP server %r: %s; reconnecting in %.1f s", self.config.name, self.last_error, delay
            )
            await anyio.sleep(delay)
            delay = min(delay * 2, 5.0)

    async def _watch(self, client: Client) -> None:
        """Return when the connection is lost: a call saw it die, or an idle health check went unanswered."""
        while True:
            with anyio.move_on_after(self.ping_interval_s):
                await self.lost.wait()
                return
            try:
                with anyio.fail_after(max(5.0, self.ping_interval_s)):
                    # `ping` is gone from the 2026-07-28 protocol; an uncached listing works on all of them.
                    await client.list_tools(cache_mode="bypass")
            except Exception as error:
                self.last_error = f"health check failed: {_describe(error)}"
                return

    def _drop(self) -> None:
        """Forget the client and cancel the calls in flight on it (they will report 'connection lost')."""
        self.client = None
        if self.ready.is_set():
            self.ready = anyio.Event()
        self.lost.set()
        for scope in self.inflight:
            scope.cancel()
        self.inflight = set()

    async def wait_ready(self) -> Client:
        while self.client is None or self.lost.is_set():
            if self.closing:
                raise ToolPoolError("the tool pool is closed")
            await self.ready.wait()
            if self.client is None or self.lost.is_set():
                await anyio.sleep(0.01)
        return self.client


async def _list_all_tools(client: Client) -> list[Tool]:
    tools: list[Tool] = []
    cursor: str | None = None
    while True:
        page = await client.list_tools(cursor=cursor)
        tools.extend(page.tools)
        cursor = page.next_cursor
        if not cursor:
            return tools


def _classify_error_result(text: str) -> FailureKind:
    lowered = text.lower()
    if "unknown tool" in lowered or "tool not found" in lowered:
        return FailureKind.UNKNOWN_TOOL
    if "validation error" in lowered or "invalid arguments" in lowered:
        return FailureKind.BAD_ARGUMENTS
    return FailureKind.TOOL_ERROR


class ToolPool:
    """Concurrent tool calls across many MCP servers, with caps, timeouts, retries and reconnection.

    Use as ``async with ToolPool(servers) as pool: await pool.call_many([...])``. Calls never raise for a
    tool's or a server's failure: they return a ``ToolResult`` whose ``failure`` says why.
    """

    def __init__(
        self,
        servers: Iterable[ServerConfig],
        *,
        observation_chars: int | None = 4000,
        ping_interval_s: float = 5.0,
        errlog: TextIO | None = None,
    ) -> None:
        servers = list(servers)
        names = [s.name for s in servers]
        if len(set(names)) != len(names):
            raise ToolPoolError(f"server names must be unique, got {names}")
        self.observation_chars = observation_chars
        self._connections = {s.name: _Connection(s, errlog or sys.stderr, ping_interval_s) for s in servers}
        self._tools: dict[str, ToolSpec] = {}
        self._validators: dict[str, Any] = {}
        self._stats: dict[str, _Stats] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

    # -- lifetime -------------------------------------------------------------------------------------
    async def __aenter__(self) -> ToolPool:
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        try:
            for connection in self._connections.values():
                self._task_group.start_soon(connection.supervise, name=f"mcp-server:{connection.config.name}")
            async with anyio.create_task_group() as waiting:
                for connection in self._connections.values():
                    waiting.start_soon(self._await_first_connection, connection)
        except BaseException as error:
            await self.aclose()
            if isinstance(error, BaseExceptionGroup):
                first = error.exceptions[0]
                raise (first if isinstance(first, ToolPoolError) else error) from None
            raise
        self._index_tools()
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def _await_first_connection(self, connection: _Connection) -> None:
        # A server that cannot start is a configuration problem: say so at once rather than retry forever.
        async with anyio.create_task_group() as race:

            async def wait(event: anyio.Event) -> None:
                await event.wait()
                race.cancel_scope.cancel()

            race.start_soon(wait, connection.ready)
            race.start_soon(wait, connection.first_attempt_failed)
        if not connection.ready.is_set():
            config = connection.config
            target = (
                config.url or " ".join([config.command or "", *config.args]).strip() or "in-process server"
            )
            raise ToolPoolError(
                f"MCP server {config.name!r} ({target}) failed to start: {connection.last_error}"
            )

    async def aclose(self) -> None:
        """Close every connection; stdio servers are stopped (their whole process tree)."""
        if self._task_group is None:
            return
        for connection in self._connections.values():
            connection.closing = True
        self._task_group.cancel_scope.cancel()
        task_group, self._task_group = self._task_group, None
        try:
            await task_group.__aexit__(None, None, None)
        except Exception as error:  # a transport's teardown error must not mask the caller's own
            logger.debug("error while closing the tool pool: %s", _describe(error))

    # -- tools ----------------------------------------------------------------------------------------
    def _index_tools(self) -> None:
        owners: Counter[str] = Counter(
            tool.name for connection in self._connections.values() for tool in connection.tools
        )
        self._tools = {}
        for connection in self._connections.values():
            for tool in connection.tools:
                # Collisions are namespaced the way RL-Factory users know: "<server>-<tool>".
                name = tool.name if owners[tool.name] == 1 else f"{connection.config.name}-{tool.name}"
                self._tools[name] = ToolSpec(
                    name=name,
                    server=connection.config.name,
                    remote_name=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema or {"type": "object"}),
                    output_schema=dict(tool.output_schema) if tool.output_schema else None,
                )
                self._validators[name] = _validator(self._tools[name].input_schema)

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self._tools.values())

    @property
    def servers(self) -> list[str]:
        return list(self._connections)

    def resolve(self, name: str) -> ToolSpec | None:
        """A tool by pool name, ``server/tool`` or ``server-tool``."""
        if name in self._tools:
            return self._tools[name]
        for sep in ("/", "-", "."):
            server, _, remote = name.partition(sep)
            if remote:
                for spec in self._tools.values():
                    if spec.server == server and spec.remote_name == remote:
                        return spec
        return None

    # -- calls ----------------------------------------------------------------------------------------
    async def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> ToolResult:
        """Call one tool. Never raises for the tool's or the server's failures."""
        arguments = dict(arguments or {})
        spec = self.resolve(name)
        if spec is None:
            available = ", ".join(sorted(self._tools)) or "none"
            result = failed(
                name, arguments, FailureKind.UNKNOWN_TOOL, f"no tool named {name!r}; available: {available}"
            )
            self._record(name, result)
            return result
        problem = _argument_problem(self._validators.get(spec.name), arguments)
        if problem is not None:
            result = failed(spec.name, arguments, FailureKind.BAD_ARGUMENTS, f"{spec.name}: {problem}")
            self._record(spec.name, result)
            return result
        connection = self._connections[spec.server]
        timeout_s = connection.config.timeout_s if timeout_s is None else timeout_s
        started = time.perf_counter()
        result = await self._call_with_retries(connection, spec, arguments, timeout_s)
        result.latency_s = time.perf_counter() - started
        self._record(spec.name, result)
        return result

    async def call_many(
        self, calls: Sequence[tuple[str, Mapping[str, Any] | None]], *, timeout_s: float | None = None
    ) -> list[ToolResult]:
        """Call all ``(name, arguments)`` pairs concurrently; results come back in the same order."""
        results: list[ToolResult | None] = [None] * len(calls)

        async def run(index: int, name: str, arguments: Mapping[str, Any] | None) -> None:
            results[index] = await self.call(name, arguments, timeout_s=timeout_s)

        async with anyio.create_task_group() as group:
            for index, (name, arguments) in enumerate(calls):
                group.start_soon(run, index, name, arguments)
        return [r for r in results if r is not None]

    async def _call_with_retries(
        self, connection: _Connection, spec: ToolSpec, arguments: dict[str, Any], timeout_s: float
    ) -> ToolResult:
        attempts = 0
        deadline = anyio.current_time() + timeout_s
        # The limiter's context manager costs two checkpoints per call even when the cap is far away.
        try:
            connection.limiter.acquire_nowait()
        except anyio.WouldBlock:
            await connection.limiter.acquire()
        try:
            while True:
                attempts += 1
                client = connection.client
                if client is None or connection.lost.is_set():
                    client = None
                    with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                        client = await connection.wait_ready()
                if client is None:
                    return failed(
                        spec.name,
                        arguments,
                        FailureKind.UNAVAILABLE,
                        f"server {spec.server!r} is not connected ({connection.last_error})",
                        attempts=attempts,
                    )
                result = await self._call_once(connection, client, spec, arguments, deadline)
                result.attempts = attempts
                retry = (
                    result.failure is FailureKind.CONNECTION_LOST and attempts <= connection.config.retries
                )
                if not (retry and connection.config.retry_lost_calls):
                    return result
        finally:
            connection.limiter.release()

    async def _call_once(
        self,
        connection: _Connection,
        client: Client,
        spec: ToolSpec,
        arguments: dict[str, Any],
        deadline: float,
    ) -> ToolResult:
        # One scope serves both ends: its deadline is the timeout, and the supervisor cancels it (after taking
        # it out of `inflight`) when the connection drops.
        scope = anyio.CancelScope(deadline=deadline)
        inflight = connection.inflight
        inflight.add(scope)
        outcome: CallToolResult | BaseException | None = None
        remaining = max(0.0, deadline - anyio.current_time())
        try:
            with scope:
                try:
                    outcome = await client.call_tool(spec.remote_name, arguments)
                except Exception as error:
                    outcome = error
        finally:
            dropped = scope.cancel_called and inflight is not connection.inflight
            inflight.discard(scope)
        if dropped and not isinstance(outcome, CallToolResult):
            return failed(
                spec.name,
                arguments,
                FailureKind.CONNECTION_LOST,
                f"server {spec.server!r} went away during the call",
            )
        if scope.cancelled_caught and not isinstance(outcome, CallToolResult):
            return failed(
                spec.name,
                arguments,
                FailureKind.TIMEOUT,
                f"{spec.name} did not answer within {remaining:.1f} s",
            )
        if isinstance(outcome, CallToolResult):
            text = render_result(outcome, self.observation_chars)
            if outcome.is_error:
                kind = _classify_error_result(text)
                return ToolResult(spec.name, arguments, f"Error ({kind}): {text}", failure=kind)
            return ToolResult(spec.name, arguments, text, structured=outcome.structured_content)
        return self._failure_from_exception(connection, spec, arguments, outcome)

    def _failure_from_exception(
        self, connection: _Connection, spec: ToolSpec, arguments: dict[str, Any], error: BaseException | None
    ) -> ToolResult:
        if isinstance(error, MCPError):
            if error.code == CONNECTION_CLOSED:
                connection.lost.set()
                return failed(
                    spec.name,
                    arguments,
                    FailureKind.CONNECTION_LOST,
                    f"server {spec.server!r}: {error.message}",
                )
            kind = {
                INVALID_PARAMS: FailureKind.BAD_ARGUMENTS,
                METHOD_NOT_FOUND: FailureKind.UNKNOWN_TOOL,
            }.get(error.code, FailureKind.TOOL_ERROR)
            return failed(spec.name, arguments, kind, truncate(error.message, self.observation_chars))
        if isinstance(
            error, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | OSError
        ):
            connection.lost.set()
            return failed(
                spec.name,
                arguments,
                FailureKind.CONNECTION_LOST,
                f"server {spec.server!r}: {_describe(error)}",
            )
        return failed(
            spec.name, arguments, FailureKind.TOOL_ERROR, _describe(error) if error else "no result"
        )

    # -- metrics --------------------------------------------------------------------------------------
    def _record(self, tool: str, result: ToolResult) -> None:
        stats = self._stats.setdefault(tool, _Stats())
        stats.calls += 1
        stats.latencies.append(result.latency_s)
        if result.failure is not None:
            stats.failures[result.failure.value] += 1

    def metrics(self, reset: bool = False) -> dict[str, float]:
        """Flat counters for logging: calls, failures by kind and latency per tool; reconnects per server."""
        out: dict[str, float] = {"tools/calls": 0.0, "tools/failures": 0.0}
        for tool, stats in self._stats.items():
            out["tools/calls"] += stats.calls
            out["tools/failures"] += sum(stats.failures.values())
            out[f"tools/{tool}/calls"] = float(stats.calls)
            for kind, count in stats.failures.items():
                out[f"tools/{tool}/failures/{kind.replace(' ', '_')}"] = float(count)
            if stats.latencies:
                out[f"tools/{tool}/latency_p50_s"] = _percentile(stats.latencies, 0.5)
                out[f"tools/{tool}/latency_p95_s"] = _percentile(stats.latencies, 0.95)
        for name, connection in self._connections.items():
            out[f"servers/{name}/reconnects"] = float(connection.reconnects)
        if reset:
            self._stats = {}
        return out


def _validator(schema: dict[str, Any]) -> Any:
    """A JSON-schema validator built once per tool (checking the schema itself on every call is the
    dominant cost of a call); ``None`` when the server's schema is unusable, so the server judges instead."""
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except Exception:
        return None


def _argument_problem(validator: Any, arguments: dict[str, Any]) -> str | None:
    """Check arguments against the tool's JSON schema here, so the model gets a precise message."""
    if validator is None:
        return None
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except Exception:  # e.g. a dangling $ref: leave the arguments to the server
        return None
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message}" + (f" (at {where})" if where else "")


class BlockingToolPool:
    """A ``ToolPool`` on a background event loop, for synchronous code (trainer hooks, CLI).

    ``portal`` runs any other coroutine on the same loop (the rollout engine and reward functions use it
    so that their tool calls share the pool's connections).
    """

    def __init__(self, servers: Iterable[ServerConfig], **options: Any) -> None:
        self.pool = ToolPool(servers, **options)
        self._portal_cm: Any = None
        self._pool_cm: Any = None
        self.portal: anyio.from_thread.BlockingPortal | None = None

    def start(self) -> BlockingToolPool:
        self._portal_cm = anyio.from_thread.start_blocking_portal()
        self.portal = self._portal_cm.__enter__()
        self._pool_cm = self.portal.wrap_async_context_manager(self.pool)
        try:
            self._pool_cm.__enter__()
        except BaseException:
            self._portal_cm.__exit__(None, None, None)
            self.portal = None
            raise
        return self

    def close(self) -> None:
        if self.portal is None:
            return
        try:
            self._pool_cm.__exit__(None, None, None)
        finally:
            self._portal_cm.__exit__(None, None, None)
            self.portal = None

    def __enter__(self) -> BlockingToolPool:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def run(self, function: Callable[..., Any], *args: Any) -> Any:
        """Run an async function on the pool's event loop and wait for its result."""
        if self.portal is None:
            raise ToolPoolError("the tool pool is not started")
        return self.portal.call(function, *args)

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> ToolResult:
        return self.run(lambda: self.pool.call(name, arguments, timeout_s=timeout_s))

    def call_many(
        self, calls: Sequence[tuple[str, Mapping[str, Any] | None]], *, timeout_s: float | None = None
    ) -> list[ToolResult]:
        return self.run(lambda: self.pool.call_many(calls, timeout_s=timeout_s))

    @property
    def tools(self) -> list[ToolSpec]:
        return self.pool.tools

    def resolve(self, name: str) -> ToolSpec | None:
        return self.pool.resolve(name)

    def metrics(self, reset: bool = False) -> dict[str, float]:
        return self.pool.metrics(reset)
