"""HTTP servers the pool starts itself: an entry with both ``command`` and ``url``.

The pool runs the command (its own process group), waits until the URL's port accepts connections, then
speaks streamable HTTP to it; when the connection ends the whole process group is stopped. With
``scope: episode`` and ``${episode.port}`` in the arguments and the URL, every episode gets its own server
on a free port.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import TextIO
from urllib.parse import urlsplit

import anyio
import anyio.abc

from mcp_rl.tools.server_config import ServerConfig


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on right now (the OS picks it; the server binds it a moment later)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((host, 0))
        return int(probe.getsockname()[1])


async def _wait_for_port(host: str, port: int, process: anyio.abc.Process, timeout_s: float) -> None:
    with anyio.fail_after(timeout_s):
        while True:
            if process.returncode is not None:
                raise ConnectionError(f"the server exited with status {process.returncode} before listening")
            try:
                stream = await anyio.connect_tcp(host, port)
            except OSError:
                await anyio.sleep(0.05)
                continue
            await stream.aclose()
            return


def _stop_group(process: anyio.abc.Process) -> None:
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


@asynccontextmanager
async def launched(config: ServerConfig, errlog: TextIO) -> AsyncIterator[None]:
    """Run ``config.command`` until the block ends; inside, ``config.url``'s port accepts connections."""
    parts = urlsplit(config.url or "")
    host, port = parts.hostname or "127.0.0.1", parts.port or (443 if parts.scheme == "https" else 80)
    process = await anyio.open_process(
        [config.command or "", *config.args],
        cwd=config.cwd,
        env={**os.environ, **config.env},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=errlog,
        start_new_session=True,  # its own process group: stopping it stops whatever it started too
    )
    try:
        await _wait_for_port(host, port, process, config.connect_timeout_s)
        yield
    finally:
        _stop_group(process)
        with anyio.CancelScope(shield=True), anyio.move_on_after(5):
            await process.wait()
