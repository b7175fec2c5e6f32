"""``ToolPool``, the async core: routing tool names to servers (the ``ToolCatalog``, ``catalog.py``),
per-server concurrency caps, timeouts and retries of calls lost with their connection (``calling.py``),
``call_many``, argument checks against each tool's JSON schema (``arguments.py``), and per-tool metrics
(``call_stats.py``). Connections themselves are ``ServerConnection`` supervisors (``connection.py``).
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import anyio

from mcp_rl.tools.arguments import argument_problem, argument_validator, unsendable
from mcp_rl.tools.call_stats import CallStats, percentile
from mcp_rl.tools.calling import call_on_connection
from mcp_rl.tools.catalog import ToolCatalog
from mcp_rl.tools.connection import ServerConnection
from mcp_rl.tools.episodes import Episode, EpisodeServers
from mcp_rl.tools.observation import truncate, valid_unicode
from mcp_rl.tools.results import FailureKind, ToolPoolError, ToolResult, ToolSpec, describe_error, failed
from mcp_rl.tools.server_config import ServerConfig
from mcp_rl.tools.server_logs import TextSink, redact_library_logs

logger = logging.getLogger(__name__)


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
        self._connections = {
            s.name: ServerConnection(s, errlog or sys.stderr, ping_interval_s) for s in shared
        }
        self._episodes = (
            EpisodeServers(per_episode, errlog or sys.stderr, ping_interval_s) if per_episode else None
        )
        self._probe: Episode | None = None  # the first per-episode instance: its tools are the pool's
        self._catalog = ToolCatalog()
        self._validators: dict[str, Any] = {}
        self._stats = CallStats()
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
            logger.debug("error while closing the tool pool: %s", describe_error(error))

    # -- tools ----------------------------------------------------------------------------------------
    def _all_connections(self) -> list[ServerConnection]:
        """The shared connections, and the first per-episode instance of each per-episode server."""
        probe = list(self._probe.connections.values()) if self._probe is not None else []
        return [*self._connections.values(), *probe]

    def _index_tools(self) -> None:
        self._catalog = ToolCatalog((c.config, c.tools) for c in self._all_connections())
        self._validators = {}

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self._catalog.by_name.values())

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
        return self._catalog.resolve(name)

    # -- calls ----------------------------------------------------------------------------------------
    def _argument_validator(self, spec: ToolSpec) -> Any:
        """The tool's argument validator, built at its first call: checking every schema of a server that
        lists thousands of tools would hold up the start (and the event loop) for many seconds."""
        if spec.name not in self._validators:
            self._validators[spec.name] = argument_validator(spec.input_schema)
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
            detail = f"internal error: {describe_error(error)}"
            result = failed(name, arguments, FailureKind.TOOL_ERROR, detail)
            self._stats.record(name, result)
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
            detail = self._catalog.unknown_tool_detail(name)
            result = failed(name, arguments, FailureKind.UNKNOWN_TOOL, detail)
            self._stats.record(name, self._bounded(result, budget))
            return result
        problem = unsendable(arguments) or argument_problem(self._argument_validator(spec), arguments)
        if problem is not None:
            result = failed(spec.name, arguments, FailureKind.BAD_ARGUMENTS, f"{spec.name}: {problem}")
            self._stats.record(spec.name, self._bounded(result, budget))
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
                self._stats.record(spec.name, self._bounded(result, budget))
                return result
            connection = episode.connections[spec.server]
        timeout_s = connection.config.timeout_s if timeout_s is None else timeout_s
        started = time.perf_counter()
        result = await call_on_connection(connection, spec, arguments, timeout_s, budget)
        result.latency_s = time.perf_counter() - started
        self._stats.record(spec.name, self._bounded(result, budget))
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

    # -- metrics --------------------------------------------------------------------------------------
    def metrics(self, reset: bool = False) -> dict[str, float]:
        """Flat counters for logging: calls, failures by kind and latency per tool; reconnects per server."""
        out = self._stats.metrics()
        for name, connection in self._connections.items():
            # Since the last reset, like the call counters beside it (a per-step count in training logs).
            out[f"servers/{name}/reconnects"] = float(connection.reconnects - self._reconnects_at_reset[name])
        if self._episodes is not None:
            out["episodes/started"] = float(self._episodes.started)
            out["episodes/failed_starts"] = float(self._episodes.failed_starts)
            if self._episodes.spawn_s:
                out["episodes/spawn_ms_p50"] = 1000 * percentile(self._episodes.spawn_s, 0.5)
        if reset:
            self._stats.reset()
            self._reconnects_at_reset = {name: c.reconnects for name, c in self._connections.items()}
        return out
