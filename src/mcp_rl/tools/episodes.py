"""Per-episode server instances: a fresh copy of each ``scope: episode`` server for every episode.

A server that keeps state (a database the model writes to, a file tree, a memory graph) cannot be shared
by the episodes of a batch: they would see each other's writes, and a reward could not tell which episode
did what. An ``Episode`` holds one instance of every per-episode server, started in a temporary folder of
its own (``${episode.dir}``) after the entry's ``setup`` steps copied seed files there. It lives until the
episode's rewards are computed, then ``release`` stops its processes and removes the folder.

Starting a server takes hundreds of milliseconds, so ``EpisodeServers`` keeps ``warm`` spare instances
started ahead: ``acquire`` hands out a ready one and starts its replacement in the background. A ``setup``
path that names a dataset column (``{task_id}``) is filled in from the episode's own row, so such
instances are started when their episode opens, not ahead.

An instance that fails to start fails its episode alone: ``acquire`` raises ``EpisodeStartError``, which
carries the episode (its processes stopped, its folder removed) for the caller to hand on as a failed one.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
import os
import re
import shutil
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

import anyio
import anyio.abc

from mcp_rl.tools.connection import Handshake, ServerConnection
from mcp_rl.tools.folders import make_episode_folder, sweep_orphans
from mcp_rl.tools.launch import free_port
from mcp_rl.tools.results import ToolPoolError, describe_error
from mcp_rl.tools.server_config import ServerConfig

logger = logging.getLogger(__name__)

_ids = itertools.count()
# `{column}` in a setup path, but not the `{episode.dir}` of `${episode.dir}`.
_COLUMN = re.compile(r"(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}")


class Episode:
    """One episode's own server instances and folder. Calls reach them through ``ToolPool.call``."""

    def __init__(self, folder: Path, number: int) -> None:
        self.dir = folder
        self.id = f"{number}"
        self.port: int | None = None
        self.connections: dict[str, ServerConnection] = {}
        self.spawn_s = 0.0
        self._scopes: list[anyio.CancelScope] = []
        self._stopped: list[anyio.Event] = []
        self.released = False
        # Why the episode's instances could not be started; its calls fail with this, and it scores as a
        # failure (see the rollout engine).
        self.error: str | None = None

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


class EpisodeStartError(ToolPoolError):
    """One episode's per-episode instances could not be started; ``episode`` is that episode, released."""

    def __init__(self, message: str, episode: Episode) -> None:
        super().__init__(message)
        self.episode = episode


def setup_columns(config: ServerConfig) -> set[str]:
    """The dataset columns the server's ``setup`` paths name (``{task_id}``)."""
    return {name for step in config.setup for value in step.values() for name in _COLUMN.findall(value)}


def _fill_columns(value: str, row: Mapping[str, Any] | None, config: ServerConfig) -> str:
    def cell(match: re.Match[str]) -> str:
        column = match[1]
        if row is None:
            raise ToolPoolError(
                f"MCP server {config.name!r}: setup names the column {{{column}}}, but this episode was "
                "opened without its dataset row"
            )
        if column not in row:
            raise ToolPoolError(
                f"MCP server {config.name!r}: setup names the column {{{column}}}, which the row lacks "
                f"(its columns: {', '.join(sorted(map(str, row)))})"
            )
        found = row[column]
        if not isinstance(found, str | int) or isinstance(found, bool) or str(found) == "":
            raise ToolPoolError(
                f"MCP server {config.name!r}: setup column {{{column}}} must be a non-empty name or "
                f"number to put in a path, got {found!r}"
            )
        return str(found)

    return _COLUMN.sub(cell, value)


def run_setup(
    config: ServerConfig, episode: Episode, row: Mapping[str, Any] | None = None, *, probe: bool = False
) -> None:
    """Copy each ``setup`` step's seed file or folder into the episode's folder, ``{column}`` filled in
    from ``row``. The ``probe`` (the instance started only to list the tools) has no row: it skips the
    steps that name a column."""
    for step in config.setup:
        if probe and any(_COLUMN.search(value) for value in step.values()):
            continue
        source = Path(_fill_columns(step["copy"], row, config)).expanduser()
        to = _fill_columns(step["to"], row, config) if step.get("to") else f"${{episode.dir}}/{source.name}"
        target = Path(_substitute(to, episode))
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
        self.row_columns = set().union(*(setup_columns(config) for config in self.configs))
        # An instance whose seed depends on its row cannot be started before the row is known.
        self.warm = 0 if self.row_columns else max((config.warm for config in self.configs), default=0)
        self.spares: deque[Episode] = deque()
        self.live: set[Episode] = set()
        self._stopping: set[Episode] = set()
        self.spawn_s: deque[float] = deque(maxlen=4096)
        self.started = 0
        self.failed_starts = 0
        self._task_group: anyio.abc.TaskGroup | None = None
        # Starting a server is CPU-bound (a Python MCP server spends most of its start importing): more
        # starts at once than cores only makes every one of them late, the one an episode waits for included.
        self._starting = anyio.CapacityLimiter(max(1, len(os.sched_getaffinity(0))))
        self._refilling = 0
        self._closed = False
        # Per server name, how its first instance negotiated: every later instance of the same command skips
        # the probe (a mcp 1.x server's failing `server/discover`, a modern server's round trip).
        self.handshakes: dict[str, Handshake] = {}

    @property
    def names(self) -> set[str]:
        return {config.name for config in self.configs}

    # -- lifetime -------------------------------------------------------------------------------------
    async def start(self, task_group: anyio.abc.TaskGroup) -> Episode:
        """Start the first instance (its tools are the pool's; a failure is a start error) and the spares.

        Episode folders that runs which died without cleaning up left behind are removed first."""
        self._task_group = task_group
        sweep_orphans(self.root)
        first = await self._start_episode(probe=True)
        if self.row_columns:
            self.release_soon(first)  # set up without a row, it can serve no episode: its tools are listed
        else:
            self.spares.append(first)
            self._refill()
        return first

    async def aclose(self) -> None:
        self._closed = True
        # All at once: each stop may wait out a server's grace period, and a SIGTERM'd run has seconds.
        async with anyio.create_task_group() as group:
            for episode in {*self.spares, *self.live, *self._stopping}:
                group.start_soon(self.release, episode)
        self.spares.clear()

    # -- episodes -------------------------------------------------------------------------------------
    async def acquire(self, row: Mapping[str, Any] | None = None) -> Episode:
        """A ready instance set for one episode (a warm spare when there is one), set up for its dataset
        ``row`` where a ``setup`` path names a column. ``EpisodeStartError`` when it cannot start."""
        if self._closed:
            raise ToolPoolError("the tool pool is closed")
        if self.spares:
            episode = self.spares.popleft()
        else:
            async with self._starting:
                episode = await self._start_episode(row)
        if self._closed:  # the pool closed while this one started: nothing of it may outlive the pool
            await self.release(episode)
            raise ToolPoolError("the tool pool is closed")
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

    async def _start_episode(self, row: Mapping[str, Any] | None = None, *, probe: bool = False) -> Episode:
        assert self._task_group is not None, "EpisodeServers.start first"
        started = time.perf_counter()
        episode = Episode(make_episode_folder(self.root), next(_ids))
        try:
            for config in self.configs:
                run_setup(config, episode, row, probe=probe)
                instance = instance_config(config, episode)
                handshake = self.handshakes.get(config.name)
                connection = ServerConnection(instance, self.errlog, self.ping_interval_s, handshake)
                episode.connections[config.name] = connection
                scope, stopped = anyio.CancelScope(), anyio.Event()
                episode._scopes.append(scope)
                episode._stopped.append(stopped)
                self._task_group.start_soon(_supervise, connection, scope, stopped)
            for name, connection in episode.connections.items():
                await connection.wait_started()
                self.handshakes.setdefault(name, connection.handshake)
        except BaseException as error:
            self.failed_starts += 1
            with anyio.CancelScope(shield=True):
                await self.release(episode)
            if not isinstance(error, Exception):
                raise
            if not isinstance(error, ToolPoolError):
                error = ToolPoolError(f"a per-episode server failed to start: {describe_error(error)}")
            episode.error = str(error)
            raise EpisodeStartError(str(error), episode) from None
        episode.spawn_s = time.perf_counter() - started
        self.spawn_s.append(episode.spawn_s)
        self.started += 1
        return episode


async def _supervise(connection: ServerConnection, scope: anyio.CancelScope, stopped: anyio.Event) -> None:
    try:
        with scope:
            await connection.supervise()
    finally:
        stopped.set()
