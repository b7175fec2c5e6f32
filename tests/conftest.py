"""Shared fixtures: real MCP servers (stdio subprocesses, HTTP on 127.0.0.1) and tiny models."""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ECHO_SERVER = str(ROOT / "tests" / "servers" / "echo.py")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def start_http_server(
    args: list[str], port: int, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``python ARGS --transport http --port PORT`` and wait until it accepts connections."""
    process = subprocess.Popen(
        [sys.executable, *args, "--transport", "http", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    try:
        wait_for_port(port)
    except TimeoutError:
        process.kill()
        raise
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def echo_stdio() -> dict[str, object]:
    """An ``mcpServers`` entry for the echo test server as a stdio subprocess."""
    return {"command": "python", "args": [ECHO_SERVER], "cwd": str(ROOT)}


@pytest.fixture
def echo_http() -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """The echo test server over streamable HTTP on 127.0.0.1: (url, port, process)."""
    port = free_port()
    process = start_http_server([ECHO_SERVER], port)
    try:
        yield f"http://127.0.0.1:{port}/mcp", port, process
    finally:
        stop(process)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every `async def` test runs on anyio's asyncio backend without a marker on each.
    for item in items:
        if inspect.iscoroutinefunction(getattr(item, "function", None)):
            item.add_marker(pytest.mark.anyio)
