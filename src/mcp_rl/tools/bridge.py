"""The one bridge from synchronous code to async code: a process-wide event loop on a background thread.

Synchronous callers (our eval, a notebook, a trainer hook) that need to run a coroutine go through
:func:`run_sync`; nothing in mcp-rl opens an event loop per call. The loop is anyio's blocking portal, started
on first use, shared by every thread, and stopped at interpreter exit. Because it stays up, it can also host
long-lived tasks — a tool pool's server connections, through :meth:`BlockingPortal.wrap_async_context_manager`
or :meth:`BlockingPortal.start_task_soon` on :func:`portal` — so that later calls reuse them.

Async code should simply ``await``: TRL, for one, awaits async reward functions on its own loop.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio
from anyio.from_thread import BlockingPortal

T = TypeVar("T")
THREAD_NAME = "mcp-rl-bridge"

_lock = threading.Lock()
_portal: BlockingPortal | None = None
_thread: threading.Thread | None = None


def _serve(started: threading.Event, box: list[BlockingPortal]) -> None:
    """The loop thread: a portal that serves calls until it is stopped."""

    async def serve() -> None:
        async with BlockingPortal() as running:
            box.append(running)
            started.set()
            await running.sleep_until_stopped()

    anyio.run(serve)


def portal() -> BlockingPortal:
    """The shared portal, started on first use (thread-safe); its loop runs until :func:`close`.

    Use it directly for what :func:`run_sync` does not cover: starting a task that outlives the call
    (``start_task_soon``), or entering an async context manager for good (``wrap_async_context_manager``).
    """
    global _portal, _thread
    with _lock:
        if _portal is None:
            # A plain thread rather than anyio's ``start_blocking_portal`` context manager: that one is a
            # generator, and a forked child dropping it would run its exit code, which waits for a loop
            # thread the child does not have (a subprocess with ``preexec_fn`` hung that way).
            started, box = threading.Event(), []
            thread = threading.Thread(target=_serve, args=(started, box), name=THREAD_NAME, daemon=True)
            thread.start()
            started.wait()
            _portal, _thread = box[0], thread
        return _portal


def run_sync(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run ``await function(*args)`` on the shared loop and wait for its result (exceptions propagate).

    Works from plain code, from any number of threads at once (their calls run concurrently on the loop), and
    from a thread whose own event loop is running (that loop is blocked while it waits, as any blocking call
    would block it). Calling it from a coroutine on the bridge's own loop is a deadlock and raises
    ``RuntimeError``: await the function there instead. Pass keyword arguments with ``functools.partial``.
    """
    return portal().call(function, *args)


def close() -> None:
    """Stop the shared loop, cancelling tasks still on it; the next :func:`portal` starts a fresh one.

    Registered with ``atexit``; owners of long-lived tasks should still end them first, so that their cleanup
    runs in order rather than by cancellation.
    """
    global _portal, _thread
    with _lock:
        running, thread = _portal, _thread
        _portal = _thread = None
    if running is None or thread is None:
        return
    with contextlib.suppress(RuntimeError):  # already stopped
        running.call(running.stop, True)  # True: cancel what is left, as at exit nobody will wait for it
    thread.join()


def _forget_after_fork() -> None:
    # A forked child has the parent's globals but not its threads: the portal there is a husk, and the lock
    # may have been held by a thread that no longer exists. Start over; the parent's loop is untouched.
    global _lock, _portal, _thread
    _lock = threading.Lock()
    _portal = _thread = None


atexit.register(close)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)

__all__ = ["THREAD_NAME", "close", "portal", "run_sync"]
