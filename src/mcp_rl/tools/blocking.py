"""``BlockingToolPool``: the synchronous facade that runs a ``ToolPool`` on the process's one background
event loop (``mcp_rl.tools.bridge``) for synchronous callers such as the trainer, the CLI and reward
functions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread

from mcp_rl.tools import bridge
from mcp_rl.tools.episodes import Episode, EpisodeStartError
from mcp_rl.tools.folders import exit_cleanly_on_sigterm
from mcp_rl.tools.pool import ToolPool
from mcp_rl.tools.results import ToolPoolError, ToolResult, ToolSpec
from mcp_rl.tools.server_config import ServerConfig

# What a reward reads of a result: the whole of it, not the model's observation budget
# (``tools.observation_chars``); this cap only keeps a runaway result from filling memory.
REWARD_RESULT_CHARS = 1_000_000


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

    def _open_portal(self) -> AbstractContextManager[anyio.from_thread.BlockingPortal]:
        """The portal the pool runs on, as a context manager that ``start`` enters and ``close`` leaves:
        the shared bridge loop, which outlives the pool (so leaving it stops nothing)."""
        return contextlib.nullcontext(bridge.portal())

    def start(self) -> BlockingToolPool:
        if self.has_episode_servers:  # so that `timeout` or `kill` too removes the episodes' folders
            exit_cleanly_on_sigterm()
        self._portal_cm = self._open_portal()
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
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        timeout_s: float | None = None,
        episode: Episode | None = None,
        budget_chars: int | None = None,
    ) -> ToolResult:
        return self.run(
            lambda: self.pool.call(
                name, arguments, timeout_s=timeout_s, episode=episode, budget_chars=budget_chars
            )
        )

    def call_many(
        self,
        calls: Sequence[tuple[str, Mapping[str, Any] | None]],
        *,
        timeout_s: float | None = None,
        episodes: Sequence[Episode | None] | None = None,
        budget_chars: int | None = None,
    ) -> list[ToolResult]:
        return self.run(
            lambda: self.pool.call_many(
                calls, timeout_s=timeout_s, episodes=episodes, budget_chars=budget_chars
            )
        )

    def submit_groups(
        self,
        groups: Sequence[
            tuple[Sequence[tuple[str, Mapping[str, Any] | None]], Sequence[Episode | None] | None]
        ],
        *,
        timeout_s: float | None = None,
        budget_chars: int | None = None,
    ) -> list[Future[list[ToolResult]]]:
        """``call_many`` for each group of ``(calls, episodes)``, without waiting: one future per group, done
        as soon as that group's calls are. All groups reach the pool's loop in one trip (a trip per group
        waits for the loop each time, which a loop busy with results makes slow)."""
        results: list[Future[list[ToolResult]]] = [Future() for _ in groups]

        async def run_group(calls: Any, episodes: Any, result: Future[list[ToolResult]]) -> None:
            if not result.set_running_or_notify_cancel():
                return  # cancelled before it started
            try:
                result.set_result(
                    await self.pool.call_many(
                        calls, timeout_s=timeout_s, episodes=episodes, budget_chars=budget_chars
                    )
                )
            except BaseException as error:  # the caller's to see, not the portal's
                result.set_exception(error)
                if not isinstance(error, Exception):
                    raise

        async def run_all() -> None:
            async with anyio.create_task_group() as group:
                for (calls, episodes), result in zip(groups, results, strict=True):
                    group.start_soon(run_group, calls, episodes, result)

        if self.portal is None:
            raise ToolPoolError("the tool pool is not started")
        self.portal.start_task_soon(run_all)
        return results

    # -- episodes -------------------------------------------------------------------------------------
    @property
    def has_episode_servers(self) -> bool:
        return self.pool.has_episode_servers

    def open_episodes(
        self, n: int, rows: Sequence[Mapping[str, Any] | None] | None = None
    ) -> list[EpisodeTools]:
        """The tools of ``n`` new episodes, each with fresh instances of the per-episode servers, set up
        for its dataset row (``rows``, one per episode) where a ``setup`` path names a column.

        An episode whose instances fail to start is still returned, as a failed one (``EpisodeTools.error``
        says why; its per-episode calls fail): the other episodes run."""
        if rows is not None and len(rows) != n:
            raise ValueError(f"open_episodes: {n} episodes but {len(rows)} rows")
        if not self.has_episode_servers:
            return [EpisodeTools(self, None) for _ in range(n)]

        async def open_all() -> list[Episode | None]:
            opened: list[Episode | None] = [None] * n

            async def open_one(index: int) -> None:
                try:
                    opened[index] = await self.pool.open_episode(rows[index] if rows is not None else None)
                except EpisodeStartError as error:
                    opened[index] = error.episode

            try:
                async with anyio.create_task_group() as group:
                    for index in range(n):
                        group.start_soon(open_one, index)
            except BaseException:  # a bug, or the caller gave up: the episodes opened so far end now
                for episode in opened:
                    self.pool.close_episode(episode)
                raise
            return opened

        return [EpisodeTools(self, episode) for episode in self.run(open_all)]

    def close_episodes(self, episodes: Iterable[EpisodeTools | None]) -> None:
        """End the given episodes (idempotent); their instances stop in the background."""
        owned = [tools.episode for tools in episodes if tools is not None and tools.episode is not None]

        async def close_all() -> None:
            for episode in owned:
                self.pool.close_episode(episode)

        if owned and self.portal is not None:
            self.run(close_all)

    @property
    def tools(self) -> list[ToolSpec]:
        return self.pool.tools

    def resolve(self, name: str) -> ToolSpec | None:
        return self.pool.resolve(name)

    def metrics(self, reset: bool = False) -> dict[str, float]:
        return self.pool.metrics(reset)


class EpisodeTools:
    """The tools one episode sees, for synchronous code such as a reward function: the shared servers,
    and this episode's own instances of the per-episode servers (``episode`` None when there are none).

    A reward that checks the state an episode left calls ``trajectory.tools.call(...)``: the instance is
    kept alive until the episode's rewards are computed. Its results are whole (up to
    ``REWARD_RESULT_CHARS``), not cut to the model's observation budget.
    """

    def __init__(self, pool: BlockingToolPool, episode: Episode | None) -> None:
        self.pool = pool
        self.episode = episode

    @property
    def dir(self) -> Path | None:
        """The episode's own folder (``${episode.dir}``), or None without per-episode servers."""
        return self.episode.dir if self.episode is not None else None

    @property
    def error(self) -> str | None:
        """Why the episode's per-episode instances could not be started, or None when they run."""
        return self.episode.error if self.episode is not None else None

    @property
    def tools(self) -> list[ToolSpec]:
        return self.pool.tools

    def call(
        self, name: str, arguments: Mapping[str, Any] | None = None, *, timeout_s: float | None = None
    ) -> ToolResult:
        return self.pool.call(
            name, arguments, timeout_s=timeout_s, episode=self.episode, budget_chars=REWARD_RESULT_CHARS
        )

    def call_many(
        self, calls: Sequence[tuple[str, Mapping[str, Any] | None]], *, timeout_s: float | None = None
    ) -> list[ToolResult]:
        episodes = [self.episode] * len(calls)
        return self.pool.call_many(
            calls, timeout_s=timeout_s, episodes=episodes, budget_chars=REWARD_RESULT_CHARS
        )

    def close(self) -> None:
        self.pool.close_episodes([self])

    def __repr__(self) -> str:
        return f"EpisodeTools({self.episode!r})"
