"""The sync→async bridge: one background event-loop thread for the whole process, from any caller."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import anyio
import pytest
from conftest import ROOT

from mcp_rl.tools import bridge
from mcp_rl.tools.bridge import THREAD_NAME, portal, run_sync


async def loop_thread(delay_s: float = 0.0) -> int:
    """The id of the thread this coroutine ran on, after sleeping ``delay_s`` on the loop."""
    await anyio.sleep(delay_s)
    return threading.get_ident()


async def fail(message: str) -> None:
    await anyio.sleep(0)
    raise KeyError(message)


def bridge_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == THREAD_NAME]


def test_run_sync_from_plain_code_reuses_one_loop_thread():
    first = run_sync(loop_thread)
    assert first != threading.get_ident()  # the work ran on the bridge, not here
    assert {run_sync(loop_thread) for _ in range(20)} == {first}  # the same thread every call
    assert len(bridge_threads()) == 1
    assert portal() is portal()
    with pytest.raises(KeyError, match="boom"):  # exceptions reach the caller as they are
        run_sync(fail, "boom")
    assert run_sync(loop_thread) == first  # and a failure does not take the loop down


async def test_run_sync_inside_a_running_event_loop():
    # This test's own loop is running on this thread; anyio.run would refuse here, the bridge does not.
    here = threading.get_ident()
    assert run_sync(loop_thread) not in (here, None)
    assert len(bridge_threads()) == 1


def test_run_sync_from_several_threads_at_once():
    delay_s, callers = 0.3, 8
    started = time.monotonic()
    with ThreadPoolExecutor(callers) as executor:
        threads = list(executor.map(lambda _: run_sync(loop_thread, delay_s), range(callers)))
    elapsed = time.monotonic() - started
    assert len(set(threads)) == 1 and threads[0] == run_sync(loop_thread)
    assert elapsed < delay_s * callers / 2  # the callers' coroutines ran concurrently on the one loop
    assert len(bridge_threads()) == 1


def test_first_use_from_several_threads_starts_one_loop():
    bridge.close()
    assert bridge_threads() == []
    barrier = threading.Barrier(6)

    def start() -> int:
        barrier.wait()  # all callers race for the lazy start
        return run_sync(loop_thread)

    with ThreadPoolExecutor(6) as executor:
        assert len(set(executor.map(lambda _: start(), range(6)))) == 1
    assert len(bridge_threads()) == 1


def test_portal_hosts_long_lived_tasks():
    # What a blocking tool pool needs: a task that outlives the call that started it, on the shared loop.
    events: list[str] = []

    class Connection:
        async def __aenter__(self) -> Connection:
            events.append("open")
            return self

        async def __aexit__(self, *exc_info: object) -> None:
            events.append("closed")

        async def ping(self) -> str:
            return "pong"

    with portal().wrap_async_context_manager(Connection()) as connection:
        assert run_sync(connection.ping) == "pong"
        assert run_sync(connection.ping) == "pong"  # the same connection serves later calls
    assert events == ["open", "closed"]

    stopped = threading.Event()

    async def serve() -> None:
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()

    future = portal().start_task_soon(serve)
    assert run_sync(loop_thread) and not future.done()  # the loop keeps serving calls alongside it
    bridge.close()  # cancels what is left, as at interpreter exit
    assert stopped.is_set() and future.cancelled()
    assert bridge_threads() == []
    assert run_sync(loop_thread) != threading.get_ident()  # the next call starts a fresh loop
    bridge.close()
    bridge.close()  # idempotent


def test_run_sync_on_the_bridge_loop_itself_is_refused():
    async def nested() -> int:
        return run_sync(loop_thread)  # would wait on the very loop it blocks

    with pytest.raises(RuntimeError, match="event loop thread"):
        run_sync(nested)


def test_the_loop_is_stopped_at_interpreter_exit():
    script = textwrap.dedent(
        """
        import anyio
        from mcp_rl.tools.bridge import portal, run_sync

        async def forever():
            try:
                await anyio.sleep_forever()
            finally:
                print("cancelled at exit", flush=True)

        async def answer():
            return 42

        print(run_sync(answer), flush=True)
        portal().start_task_soon(forever)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT / "src")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:2] == ["42", "cancelled at exit"]


def test_a_subprocess_with_preexec_fn_starts_after_the_loop_is_up():
    """Forking (``preexec_fn`` runs Python in the child) must not wait for the parent's loop thread, which the
    child does not have: this hung once, when the child dropped the loop's context manager."""
    import subprocess
    import sys

    from mcp_rl.tools import bridge

    async def ready() -> bool:
        return True

    assert bridge.run_sync(ready)
    done = subprocess.run(
        [sys.executable, "-c", "print('child')"],
        preexec_fn=lambda: None,
        timeout=60,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0 and done.stdout.strip() == "child"
    assert bridge.run_sync(ready), "the parent's loop still serves after the fork"
