"""``ToolPool``, the async core: routing tool names to servers, per-server concurrency caps, timeouts,
retries of calls lost with their connection, ``call_many``, argument validation against each tool's JSON
schema, and per-tool metrics. Connections themselves are ``_Connection`` supervisors (``connection.py``).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import sys
import time
from collections import Counter, deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import anyio
import jsonschema
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult, Tool
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND

from mcp_rl.tools.connection import _Connection
from mcp_rl.tools.episodes import Episode, EpisodeServers
from mcp_rl.tools.observation import render_result, truncate, valid_unicode
from mcp_rl.tools.results import (
    FailureKind,
    ToolPoolError,
    ToolResult,
    ToolSpec,
    _classify_error_result,
    _describe,
    _matches_error_pattern,
    failed,
)
from mcp_rl.tools.server_config import ServerConfig
from mcp_rl.tools.server_logs import TextSink, redact_library_logs

logger = logging.getLogger(__name__)


@dataclass
class _Stats:
    calls: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=8192))


def _percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


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
        errlog: TextSink | None = None,
    ) -> None:
        servers = list(servers)
        # The SDK's and httpx2's own DEBUG records quote URLs and headers: hide these servers' secrets there.
        redact_library_logs(secret for s in servers for secret in (*s.secrets, *s.headers.values()))
        names = [s.name for s in servers]
        if len(set(names)) != len(names):
            raise ToolPoolError(f"server names must be unique, got {names}")
        self.observation_chars = observation_chars
        shared = [s for s in servers if s.scope != "episode"]
        per_episode = [s for s in servers if s.scope == "episode"]
        self._connections = {s.name: _Connection(s, errlog or sys.stderr, ping_interval_s) for s in shared}
        self._episodes = (
            EpisodeServers(per_episode, errlog or sys.stderr, ping_interval_s) if per_episode else None
        )
        self._probe: Episode | None = None  # the first per-episode instance: its tools are the pool's
        self._tools: dict[str, ToolSpec] = {}
        self._by_origin: dict[tuple[str, str], ToolSpec] = {}  # (server, its own tool name) → the tool
        self._withheld: dict[str, str] = {}  # a tool includeTools/excludeTools keeps out → its server
        self._validators: dict[str, Any] = {}
        self._stats: dict[str, _Stats] = {}
        self._reconnects_at_reset = dict.fromkeys(self._connections, 0)
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
                    waiting.start_soon(connection.wait_started)
            if self._episodes is not None:
                self._probe = await self._episodes.start(self._task_group)
            self._index_tools()
        except BaseException as error:
            await self.aclose()
            if isinstance(error, BaseExceptionGroup):
                first = error.exceptions[0]
                raise (first if isinstance(first, ToolPoolError) else error) from None
            raise
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Close every connection; stdio servers are stopped (their whole process tree)."""
        if self._task_group is None:
            return
        if self._episodes is not None:
            await self._episodes.aclose()
        for connection in self._connections.values():
            connection.closing = True
        self._task_group.cancel_scope.cancel()
        task_group, self._task_group = self._task_group, None
        try:
            await task_group.__aexit__(None, None, None)
        except Exception as error:  # a transport's teardown error must not mask the caller's own
            logger.debug("error while closing the tool pool: %s", _describe(error))

    # -- tools ----------------------------------------------------------------------------------------
    def _all_connections(self) -> list[_Connection]:
        """The shared connections, and the first per-episode instance of each per-episode server."""
        probe = list(self._probe.connections.values()) if self._probe is not None else []
        return [*self._connections.values(), *probe]

    def _index_tools(self) -> None:
        exposed = [(c, _exposed_tools(c.config, c.tools)) for c in self._all_connections()]
        # By name: `tool not in shown` compared pydantic models pairwise, quadratic in the tool count.
        self._withheld = {}
        for connection, shown in exposed:
            shown_names = {tool.name for tool in shown}
            for tool in connection.tools:
                if tool.name not in shown_names:
                    self._withheld[tool.name] = connection.config.name
        owners: Counter[str] = Counter(tool.name for _, shown in exposed for tool in shown)
        # Unique tool names keep their own name; namespaced ones must not take any of them.
        taken = {name for name, count in owners.items() if count == 1}
        self._tools, self._by_origin, self._validators = {}, {}, {}
        for connection, shown in exposed:
            for tool in shown:
                server = connection.config.name
                name = tool.name if owners[tool.name] == 1 else _namespaced(server, tool.name, taken)
                spec = ToolSpec(
                    name=name,
                    server=server,
                    remote_name=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema or {"type": "object"}),
                    output_schema=dict(tool.output_schema) if tool.output_schema else None,
                    idempotent=_declared_idempotent(tool),
                    read_only=tool.annotations is not None and bool(tool.annotations.read_only_hint),
                )
                self._tools[name] = self._by_origin[(server, tool.name)] = spec

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self._tools.values())

    @property
    def servers(self) -> list[str]:
        return [connection.config.name for connection in self._all_connections()]

    # -- episodes -------------------------------------------------------------------------------------
    @property
    def has_episode_servers(self) -> bool:
        return self._episodes is not None

    async def open_episode(self, row: Mapping[str, Any] | None = None) -> Episode | None:
        """Fresh instances of the per-episode servers for one episode (None when there are none), set up
        for its dataset ``row`` (``{column}`` in ``setup``); ``EpisodeStartError`` when they cannot start."""
        return await self._episodes.acquire(row) if self._episodes is not None else None

    def close_episode(self, episode: Episode | None) -> None:
        """End an episode once its rewards are computed: its calls fail from now on, and its instances are
        stopped and its folder removed in the background (all of them before the pool closes)."""
        if episode is not None and self._episodes is not None:
            self._episodes.release_soon(episode)

    def resolve(self, name: str) -> ToolSpec | None:
        """A tool by pool name, ``server/tool`` or ``server-tool``."""
        if name in self._tools:
            return self._tools[name]
        # Server and tool names may hold the separator themselves ("a-b" + "c" vs "a" + "b-c"): try every
        # split, so each tool stays reachable as "<server>/<tool>" whatever its pool name became.
        for sep in ("/", "-", "."):
            start = name.find(sep)
            while start > 0:
                spec = self._by_origin.get((name[:start], name[start + 1 :]))
                if spec is not None:
                    return spec
                start = name.find(sep, start + 1)
        return None

    # -- calls ----------------------------------------------------------------------------------------
    def _argument_validator(self, spec: ToolSpec) -> Any:
        """The tool's argument validator, built at its first call: checking every schema of a server that
        lists thousands of tools would hold up the start (and the event loop) for many seconds."""
        if spec.name not in self._validators:
            self._validators[spec.name] = _validator(spec.input_schema)
        return self._validators[spec.name]

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        episode: Episode | None = None,
        budget_chars: int | None = None,
    ) -> ToolResult:
        """Call one tool (a per-episode server's on ``episode``'s instance). Never raises for the tool's or
        the server's failures. ``budget_chars`` cuts the result's text instead of ``observation_chars``:
        a reward checks the whole result, not what fits the model's budget."""
        arguments = dict(arguments or {})
        budget = self.observation_chars if budget_chars is None else budget_chars
        try:
            result = await self._call(name, arguments, timeout_s, episode, budget)
        except Exception as error:
            # Whatever a server sends (or a bug of ours does with it) must end as one counted failure, not
            # an exception that would cancel the sibling calls of `call_many` and end the rollout.
            logger.exception("tool call %r failed inside the pool", name)
            result = failed(name, arguments, FailureKind.TOOL_ERROR, f"internal error: {_describe(error)}")
            self._record(name, result)
        return result

    async def _call(
        self,
        name: str,
        arguments: dict[str, Any],
        timeout_s: float | None,
        episode: Episode | None,
        budget: int | None,
    ) -> ToolResult:
        spec = self.resolve(name)
        if spec is None:
            available = ", ".join(sorted(self._tools)) or "none"
            server = self._withheld.get(name.rsplit("/", 1)[-1])
            why = f"{name!r} is not enabled for this task" if server else f"no tool named {name!r}"
            result = failed(name, arguments, FailureKind.UNKNOWN_TOOL, f"{why}; available: {available}")
            self._record(name, self._bounded(result, budget))
            return result
        problem = _unsendable(arguments) or _argument_problem(self._argument_validator(spec), arguments)
        if problem is not None:
            result = failed(spec.name, arguments, FailureKind.BAD_ARGUMENTS, f"{spec.name}: {problem}")
            self._record(spec.name, self._bounded(result, budget))
            return result
        connection = self._connections.get(spec.server)
        if connection is None:  # a per-episode server
            if episode is None or episode.released:
                why = "call it within an open episode"
                if episode is not None and episode.error is not None:
                    why = f"this episode's instance failed to start ({episode.error})"
                result = failed(
                    spec.name,
                    arguments,
                    FailureKind.UNAVAILABLE,
                    f"{spec.name} belongs to a per-episode server: {why}",
                )
                self._record(spec.name, self._bounded(result, budget))
                return result
            connection = episode.connections[spec.server]
        timeout_s = connection.config.timeout_s if timeout_s is None else timeout_s
        started = time.perf_counter()
        result = await self._call_with_retries(connection, spec, arguments, timeout_s, budget)
        result.latency_s = time.perf_counter() - started
        self._record(spec.name, self._bounded(result, budget))
        return result

    def _bounded(self, result: ToolResult, budget: int | None) -> ToolResult:
        """Hold a failure's text to the observation budget too: error text from a server (a validation
        error listing a thousand bad blocks, say) is tokenized and stored like any observation."""
        if result.failure is not None:
            result.text = valid_unicode(truncate(result.text, budget))
        return result

    async def call_many(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any] | None]],
        *,
        timeout_s: float | None = None,
        episodes: Sequence[Episode | None] | None = None,
        budget_chars: int | None = None,
    ) -> list[ToolResult]:
        """Call all ``(name, arguments)`` pairs concurrently (each on its episode's instances, when
        ``episodes`` gives one per call); results come back in the same order. ``budget_chars``: as for
        ``call``."""
        results: list[ToolResult | None] = [None] * len(calls)
        owners = list(episodes) if episodes is not None else [None] * len(calls)

        async def run(index: int, name: str, arguments: Mapping[str, Any] | None) -> None:
            results[index] = await self.call(
                name, arguments, timeout_s=timeout_s, episode=owners[index], budget_chars=budget_chars
            )

        async with anyio.create_task_group() as group:
            for index, (name, arguments) in enumerate(calls):
                group.start_soon(run, index, name, arguments)
        return [r for r in results if r is not None]

    async def _call_with_retries(
        self,
        connection: _Connection,
        spec: ToolSpec,
        arguments: dict[str, Any],
        timeout_s: float,
        budget: int | None,
    ) -> ToolResult:
        attempts = 0
        deadline = anyio.current_time() + timeout_s
        if not await _acquire_before(connection.limiter, deadline):
            return failed(
                spec.name,
                arguments,
                FailureKind.TIMEOUT,
                f"{spec.name}: no free slot on server {spec.server!r} within {timeout_s:.1f} s "
                f"({connection.config.max_concurrency} calls in flight)",
                attempts=0,
            )
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
                result = await self._call_once(connection, client, spec, arguments, deadline, budget)
                result.attempts = attempts
                if not _retry_lost(result, spec, connection.config, attempts):
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
        budget: int | None,
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
            if outcome.is_error:  # bounded, prefix included, by `_bounded`
                text = render_result(outcome, None)
                kind = _classify_error_result(text)
                return ToolResult(spec.name, arguments, f"Error ({kind}): {text}", failure=kind)
            text = render_result(outcome, budget)
            if _matches_error_pattern(connection.config, text):
                # The server said "Error: ..." as plain text (errorPattern): a failure in the metrics, while
                # the model reads the server's own words.
                return ToolResult(spec.name, arguments, text, failure=FailureKind.TOOL_ERROR)
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
            return failed(spec.name, arguments, kind, error.message)
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
            # Since the last reset, like the call counters beside it (a per-step count in training logs).
            out[f"servers/{name}/reconnects"] = float(connection.reconnects - self._reconnects_at_reset[name])
        if self._episodes is not None:
            out["episodes/started"] = float(self._episodes.started)
            out["episodes/failed_starts"] = float(self._episodes.failed_starts)
            if self._episodes.spawn_s:
                out["episodes/spawn_ms_p50"] = 1000 * _percentile(self._episodes.spawn_s, 0.5)
        if reset:
            self._stats = {}
            self._reconnects_at_reset = {name: c.reconnects for name, c in self._connections.items()}
        return out


def _exposed_tools(config: ServerConfig, tools: Sequence[Tool]) -> list[Tool]:
    """The server's tools its ``includeTools``/``excludeTools`` let the model see and call; a name in
    either list that the server does not have is an error, since a typo would silently change the task."""
    listed = {tool.name for tool in tools}
    for key, names in (("includeTools", config.include_tools or []), ("excludeTools", config.exclude_tools)):
        missing = [n for n in names if n not in listed]
        if missing:
            raise ToolPoolError(
                f"mcpServers.{config.name}.{key}: the server has no tool(s) {', '.join(missing)}; "
                f"its tools: {', '.join(sorted(listed)) or 'none'}"
            )
    allowed = listed if config.include_tools is None else set(config.include_tools)
    return [t for t in tools if t.name in allowed and t.name not in config.exclude_tools]


def _declared_idempotent(tool: Tool) -> bool:
    annotations = tool.annotations
    return annotations is not None and bool(annotations.idempotent_hint or annotations.read_only_hint)


def _retry_lost(result: ToolResult, spec: ToolSpec, config: ServerConfig, attempts: int) -> bool:
    """Whether a call is sent again: only one lost with its connection (it may or may not have run), only
    ``retries`` times, and only to a tool whose server declares it idempotent or read-only, or that the
    configuration says is safe to repeat (``retryLostCalls``). Any other lost call comes back as
    "connection lost": running a side effect twice is worse than one failed call the model can repeat."""
    if result.failure is not FailureKind.CONNECTION_LOST or attempts > config.retries:
        return False
    return spec.idempotent or config.retry_lost_calls


async def _acquire_before(limiter: anyio.CapacityLimiter, deadline: float) -> bool:
    """Take a slot of the server's concurrency cap, waiting no later than the call's deadline: calls
    queued behind hung ones time out on time instead of waiting for a slot first."""
    # The limiter's context manager costs two checkpoints per call even when the cap is far away.
    try:
        limiter.acquire_nowait()
        return True
    except anyio.WouldBlock:
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await limiter.acquire()
            return True
    return False


def _namespaced(server: str, tool: str, taken: set[str]) -> str:
    """A pool name for a tool whose name other servers share: "<server>-<tool>" as RL-Factory users know
    it, or, where that too is taken (server "a" + tool "b-c" vs server "a-b" + tool "c"), "<server>_<tool>"
    and then a numbered form, so no two tools ever share a name."""
    numbered = (f"{server}-{tool}-{n}" for n in itertools.count(2))
    candidates = itertools.chain([f"{server}-{tool}", f"{server}_{tool}"], numbered)
    name = next(c for c in candidates if c not in taken)
    taken.add(name)
    return name


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


def _unsendable(arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` cannot go over the wire at all, if they cannot.

    A transport that fails to encode one request drops the whole connection (every call in flight on it
    fails and the server restarts), so such a call must fail alone, here: a lone surrogate decoded from a
    model's ``"\\ud800"`` is not UTF-8, and nesting past the encoder's recursion limit cannot be dumped.
    """
    try:
        json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "the arguments hold a lone surrogate (e.g. \\ud800), which is not valid Unicode"
    except RecursionError:
        return "the arguments are nested too deeply to send"
    except (TypeError, ValueError) as error:
        return f"the arguments are not JSON: {error}"
    return None
