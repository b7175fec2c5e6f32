"""``BlockingToolPool``: the synchronous facade that runs a ``ToolPool`` on the process's one background
event loop (``mcp_rl.bridge``) for synchronous callers such as the trainer, the CLI and reward functions.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any

import anyio.from_thread

from mcp_rl import bridge
from mcp_rl.pool.pool import ToolPool
from mcp_rl.pool.results import ToolPoolError, ToolResult, ToolSpec
from mcp_rl.server_config import ServerConfig


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
