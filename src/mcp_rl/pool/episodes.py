"""Per-episode server instances: a fresh copy of each ``scope: episode`` server for every episode.

A server that keeps state (a database the model writes to, a file tree, a memory graph) cannot be shared
by the episodes of a batch: they would see each other's writes, and a reward could not tell which episode
did what. An ``Episode`` holds one instance of every per-episode server, started in a temporary folder of
its own (``${episode.dir}``) after the entry's ``setup`` steps copied seed files there. It lives until the
episode's rewards are computed, then ``release`` stops its processes and removes the folder.

Starting a server takes hundreds of milliseconds, so ``EpisodeServers`` keeps ``warm`` spare instances
started ahead: ``acquire`` hands out a ready one and starts its replacement in the background.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import shutil
import tempfile
import time
from collections import deque
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import anyio
import anyio.abc

from mcp_rl.pool.connection import _Connection
from mcp_rl.pool.launch import free_port
from mcp_rl.pool.results import ToolPoolError, _describe
from mcp_rl.server_config import ServerConfig

logger = logging.getLogger(__name__)

_ids = itertools.count()


class Episode:
    """One episode's own server instances and folder. Calls reach them through ``ToolPool.call``."""

    def __init__(self, folder: Path, number: int) -> None:
        self.dir = folder
        self.id = f"{number}"
        self.port: int | None = None
        self.connections: dict[str, _Connection] = {}
        self.spawn_s = 0.0
        self._scopes: list[anyio.CancelScope] = []
        self._stopped: list[anyio.Event] = []
        self.released = False

    def __repr__(self) -> str:
        return f"Episode(id={self.id}, dir={str(self.dir)!r}, servers={sorted(self.connections)})"


def _substitute(value: str, episode: Episode) -> str:
    value = value.replace("${episode.dir}", str(episode.dir)).replace("${episode.id}", episode.id)
    if "${episode.port}" in value:  # an HTTP server the pool starts for this episode alone
        if episode.port is None:
            episode.port = free_port()
        value = value.replace("${episode.port}", str(episode.port))
    return value


def instance_config(config: ServerConfig, episode: Episode) -> ServerConfig:
    """``config`` with ``${episode.dir}`` and ``${episode.id}`` filled in for one episode."""
    return dataclasses.replace(
        config,
        command=_substitute(config.command, episode) if config.command else None,
        args=[_substitute(arg, episode) for arg in config.args],
        env={key: _substitute(value, episode) for key, value in config.env.items()},
        cwd=_substitute(config.cwd, episode) if config.cwd else None,
        url=_substitute(config.url, episode) if config.url else None,
    )


def run_setup(config: ServerConfig, episode: Episode) -> None:
    """Copy each ``setup`` step's seed file or folder into the episode's folder."""
    for step in config.setup:
        source = Path(step["copy"]).expanduser()
        target = Path(_substitute(step.get("to") or f"${{episode.dir}}/{source.name}", episode))
        if not target.resolve().is_relative_to(episode.dir.resolve()):
            raise ToolPoolError(
                f"MCP server {config.name!r}: setup copies to {target}, outside ${{episode.dir}}"
            )
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_dir():
            shutil.copytree(source, target, dirs_exist_ok=True)
        elif source.is_file():
            shutil.copy2(source, target)
        else:
            raise ToolPoolError(f"MCP server {config.name!r}: setup source {source} does not exist")


class EpisodeServers:
    """Starts, hands out and stops per-episode instances of the ``scope: episode`` servers."""

    def __init__(
        self,
        configs: Sequence[ServerConfig],
        errlog: TextIO,
        ping_interval_s: float,
        root: Path | None = None,
    ) -> None:
        self.configs = list(configs)
        self.errlog = errlog
        self.ping_interval_s = ping_interval_s
        self.root = root
        self.warm = max((config.warm for config in self.configs), default=0)
        self.spares: deque[Episode] = deque()
        self.live: set[Episode] = set()
        self._stopping: set[Episode] = set()
        self.spawn_s: deque[float] = deque(maxlen=4096)
        self.started = 0
        self.failed_starts = 0
        self._task_group: anyio.abc.TaskGroup | None = None
        # Starting a server is CPU-bound (a Python MCP server spends ~0.7 s importing): more starts at once
        # than cores only makes every one of them late, the one an episode is waiting for included.
        self._starting = anyio.CapacityLimiter(max(1, len(os.sched_getaffinity(0))))
        self._refilling = 0
        self._closed = False

    @property
    def names(self) -> set[str]:
        return {config.name for config in self.configs}

    # -- lifetime -------------------------------------------------------------------------------------
    async def start(self, task_group: anyio.abc.TaskGroup) -> Episode:
        """Start the first instance (its tools are the pool's; a failure is a start error) and the spares."""
        self._task_group = task_group
        first = await self._start_episode()
        self.spares.append(first)
        self._refill()
        return first

    async def aclose(self) -> None:
        self._closed = True
        for episode in [*self.spares, *self.live, *self._stopping]:
            await self.release(episode)
        self.spares.clear()

    # -- episodes -------------------------------------------------------------------------------------
    async def acquire(self) -> Episode:
        """A ready instance set for one episode (a warm spare when there is one)."""
        if self._closed:
            raise ToolPoolError("the tool pool is closed")
        if self.spares:
            episode = self.spares.popleft()
        else:
            async with self._starting:
                episode = await self._start_episode()
        self.live.add(episode)
        self._refill()
        return episode

    def release_soon(self, episode: Episode) -> None:
        """End the episode now (its calls fail from here on) and stop its instances in the background:
        the caller, a training step whose rewards are in, need not wait for processes to exit."""
        if episode.released or self._task_group is None:
            return
        episode.released = True
        self.live.discard(episode)
        self._stopping.add(episode)
        self._task_group.start_soon(self.release, episode)

    async def release(self, episode: Episode) -> None:
        """Stop the episode's instances (their process trees) and remove its folder; idempotent."""
        episode.released = True
        self.live.discard(episode)
        for connection in episode.connections.values():
            connection.closing = True
        for scope in episode._scopes:
            scope.cancel()
        with anyio.CancelScope(shield=True):
            for stopped in episode._stopped:
                await stopped.wait()
        shutil.rmtree(episode.dir, ignore_errors=True)
        self._stopping.discard(episode)

    def _refill(self) -> None:
        """Start spares in the background until ``warm`` are ready or starting."""
        if self._task_group is None or self._closed:
            return
        while len(self.spares) + self._refilling < self.warm:
            self._refilling += 1
            self._task_group.start_soon(self._start_spare)

    async def _start_spare(self) -> None:
        try:
            async with self._starting:
                episode = await self._start_episode()
        except ToolPoolError as error:
            logger.warning("a spare per-episode server failed to start: %s", error)
            return
        finally:
            self._refilling -= 1
        if self._closed:
            await self.release(episode)
        else:
            self.spares.append(episode)

    async def _start_episode(self) -> Episode:
        assert self._task_group is not None, "EpisodeServers.start first"
        started = time.perf_counter()
        folder = Path(tempfile.mkdtemp(prefix="mcp-rl-episode-", dir=self.root))
        episode = Episode(folder, next(_ids))
        try:
            for config in self.configs:
                run_setup(config, episode)
                connection = _Connection(instance_config(config, episode), self.errlog, self.ping_interval_s)
                episode.connections[config.name] = connection
                scope, stopped = anyio.CancelScope(), anyio.Event()
                episode._scopes.append(scope)
                episode._stopped.append(stopped)
                self._task_group.start_soon(_supervise, connection, scope, stopped)
            for connection in episode.connections.values():
                await connection.wait_started()
        except BaseException as error:
            self.failed_starts += 1
            with anyio.CancelScope(shield=True):
                await self.release(episode)
            if isinstance(error, Exception) and not isinstance(error, ToolPoolError):
                raise ToolPoolError(f"a per-episode server failed to start: {_describe(error)}") from None
            raise
        episode.spawn_s = time.perf_counter() - started
        self.spawn_s.append(episode.spawn_s)
        self.started += 1
        return episode


async def _supervise(connection: _Connection, scope: anyio.CancelScope, stopped: anyio.Event) -> None:
    try:
        with scope:
            await connection.supervise()
    finally:
        stopped.set()
