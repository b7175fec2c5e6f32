"""Tool servers' stderr: one policy for every command, bounded on disk and in memory.

Each server process writes its stderr into a pipe that a thread drains continuously, whole chunks at a time
(a flood is written out at string-method speed instead of filling the pipe and stalling the server), each
line prefixed with the server's name. The lines go to a ``ServerLog`` (a size-capped file
that rotates) or any text stream; the last few stay in memory, so a server that fails to start says why in
the error (npm's "404 Not Found", a Python traceback's last line) instead of only "Connection closed".

Where the log goes (``command_server_log``): the run folder's ``tool_servers.log`` for ``train``, beside
the report for ``eval``, else ``<cache>/mcp-rl/logs/<command>.tool_servers.log``, whose path is printed.

``redact_library_logs`` adds a filter to the MCP SDK's and the HTTP client's own loggers, so their DEBUG
records (URLs with a password or a token in the query, headers) show ``***`` instead of the secret.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections import deque
from collections.abc import Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import BinaryIO, Protocol, TextIO

from mcp_rl.tools.server_config import redact

__all__ = [
    "LOG_BACKUPS",
    "LOG_MAX_BYTES",
    "MAX_LINE_CHARS",
    "TAIL_LINES",
    "SecretRedactingFilter",
    "ServerLog",
    "StderrCapture",
    "TextSink",
    "command_server_log",
    "lines_that_matter",
    "redact_library_logs",
]

LOG_MAX_BYTES = 8 * 1024 * 1024  # one file's size before it rotates
LOG_BACKUPS = 2  # rotated files kept (tool_servers.log.1, .2): at most 3 x LOG_MAX_BYTES on disk
TAIL_LINES = 40  # last stderr lines kept per server process, for its start-failure message
MAX_LINE_CHARS = 2000  # a line longer than this (or output without newlines) is cut into pieces
_READ_BYTES = 64 * 1024

# Lines that usually carry the reason a server did not start.
_ERROR_LINE = re.compile(
    r"error|exception|traceback|not found|no such|denied|cannot|can't|could not|failed|fatal|refused|"
    r"missing|invalid|unknown|E404|ERR!",
    re.IGNORECASE,
)
# Loggers of the MCP SDK and its HTTP client (`client`/`server` are names the SDK itself uses).
_LIBRARY_LOGGERS = ("mcp", "mcp_types", "client", "server", "httpx2", "httpcore2", "httpx", "httpcore")


class TextSink(Protocol):
    """Where server stderr lines are written: a ``ServerLog``, ``sys.stderr``, any open text file."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...


class ServerLog:
    """An append-only text log capped at ``max_bytes`` per file, rotated like ``RotatingFileHandler``
    (``path`` → ``path.1`` → ... ``path.<backups>``, the oldest dropped). Thread-safe; flushed on every
    write, so the file is readable while a run goes on."""

    def __init__(self, path: str | Path, max_bytes: int = LOG_MAX_BYTES, backups: int = LOG_BACKUPS) -> None:
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file: BinaryIO | None = self.path.open("ab")
        self._size = self._file.tell()

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        with self._lock:
            if self._file is None:  # closed
                return 0
            if self._size and self._size + len(data) > self.max_bytes:
                self._rotate()
            self._file.write(data)
            self._file.flush()
            self._size += len(data)
        return len(text)

    def flush(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def _rotate(self) -> None:
        assert self._file is not None
        self._file.close()
        self._file = None  # stays closed if the folder is gone (a failed set-up removed it): writes drop
        if self.backups > 0:
            for index in range(self.backups - 1, 0, -1):
                older = self.path.with_name(f"{self.path.name}.{index}")
                if older.exists():
                    older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
            self.path.replace(self.path.with_name(f"{self.path.name}.1"))
            self._file = self.path.open("ab")
        else:
            self._file = self.path.open("wb")
        self._size = 0

    def __enter__(self) -> ServerLog:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()


def cache_log_folder() -> Path:
    """``$XDG_CACHE_HOME/mcp-rl/logs`` (``~/.cache/mcp-rl/logs`` by default)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "mcp-rl" / "logs"


def command_server_log(
    command: str, *, run_folder: str | Path | None = None, report: str | Path | None = None
) -> ServerLog:
    """The log a command's tool servers write their stderr to: ``run_folder/tool_servers.log`` (``train``),
    ``<report stem>.tool_servers.log`` beside a ``report`` (``eval``), else one file per command in the
    cache folder, whose path is printed once to stderr."""
    if run_folder is not None:
        return ServerLog(Path(run_folder) / "tool_servers.log")
    if report is not None:
        return ServerLog(Path(report).with_suffix(".tool_servers.log"))
    log = ServerLog(cache_log_folder() / f"{command}.tool_servers.log")
    print(f"tool servers' stderr: {log.path}", file=sys.stderr)
    return log


class StderrCapture:
    """One server process's stderr: hand ``stream`` to the process; a thread drains the pipe into
    ``sink`` (each line prefixed ``[name] ``, passed through ``redact``) and keeps the last lines."""

    def __init__(
        self,
        name: str,
        sink: TextSink,
        redact: Callable[[str], str] = str,
        tail_lines: int = TAIL_LINES,
    ) -> None:
        self.name = name
        self.sink = sink
        self.redact = redact
        self.tail: deque[str] = deque(maxlen=tail_lines)
        read_end, write_end = os.pipe()
        self.stream: TextIO = os.fdopen(write_end, "w")
        self._done = threading.Event()
        self._thread = threading.Thread(
            target=self._drain, args=(read_end,), name=f"stderr:{name}", daemon=True
        )
        self._thread.start()

    def close_writer(self) -> None:
        """Drop our copy of the pipe's write end: the drain ends once the server's processes are gone."""
        if not self.stream.closed:
            self.stream.close()

    def wait(self, timeout_s: float) -> bool:
        """Close our write end and wait until everything the server wrote is drained; False on timeout."""
        self.close_writer()
        return self._done.wait(timeout_s)

    def summary(self, max_lines: int = 8) -> str:
        """The lines of the tail most likely to explain a failure (see ``lines_that_matter``), on one line
        (`` | `` between them), as the command line shows errors."""
        return " | ".join(lines_that_matter(list(self.tail), max_lines))

    def _drain(self, read_end: int) -> None:
        prefix = f"[{self.name}] "
        pending = b""
        try:
            while chunk := os.read(read_end, _READ_BYTES):
                # Whole lines at a time (a secret is never cut in two), in as few operations as possible:
                # a flood is written out at the speed of string methods, not of a loop over its lines.
                pending += chunk
                cut = pending.rfind(b"\n") + 1
                if cut == 0:
                    if len(pending) < MAX_LINE_CHARS:
                        continue
                    cut = len(pending)  # no newline in sight: out it goes, so memory stays bounded
                self._emit(prefix, pending[:cut])
                pending = pending[cut:]
            if pending:
                self._emit(prefix, pending)
        except OSError:  # the read end closed under us: nothing more to drain
            pass
        finally:
            os.close(read_end)
            self._done.set()

    def _emit(self, prefix: str, data: bytes) -> None:
        text = self.redact(data.decode("utf-8", "replace").removesuffix("\n"))
        maxlen = self.tail.maxlen or 0
        last = text.rsplit("\n", maxlen)[-maxlen:] if maxlen else []
        self.tail.extend(line[:MAX_LINE_CHARS] for line in last if line.strip())
        try:
            self.sink.write(prefix + text.replace("\n", "\n" + prefix) + "\n")
            self.sink.flush()
        except (OSError, ValueError):  # the log was closed or the disk is full: keep draining regardless
            pass


def lines_that_matter(lines: list[str], max_lines: int = 8) -> list[str]:
    """At most ``max_lines`` of a stderr tail, in order: the first lines that look like errors (npm puts
    its reason first, then notes) and the last lines (a traceback ends with its exception)."""
    lines = [line.rstrip() for line in lines if line.strip()]
    if len(lines) <= max_lines:
        return lines
    last = max_lines // 2
    head = [i for i, line in enumerate(lines[:-last]) if _ERROR_LINE.search(line)][: max_lines - last]
    keep = sorted({*head, *range(len(lines) - (max_lines - len(head)), len(lines))})
    return [lines[i] for i in keep]


class SecretRedactingFilter(logging.Filter):
    """Rewrites a record's message (and its traceback text) with secrets, URL passwords and credential
    query values replaced by ``***``, before any handler formats it."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # arguments that do not fit the format: logging reports that itself
            return True
        shown = redact(message, tuple(self.secrets))
        if shown != message:
            record.msg, record.args = shown, None
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text, tuple(self.secrets))
        return True


LIBRARY_LOG_FILTER = SecretRedactingFilter()


def redact_library_logs(secrets: Iterable[str] = ()) -> None:
    """Hide ``secrets`` (and any URL password or credential query value) in the MCP SDK's and the HTTP
    client's log records. A logger's filter sees only records logged on that very logger, so the filter
    goes on each of their loggers that exists (call again after importing more of them; idempotent)."""
    LIBRARY_LOG_FILTER.secrets.update(s for s in secrets if s)
    names = [
        name for name in list(logging.Logger.manager.loggerDict) if name.split(".", 1)[0] in _LIBRARY_LOGGERS
    ]
    for name in {*names, *_LIBRARY_LOGGERS}:
        logger = logging.getLogger(name)
        if LIBRARY_LOG_FILTER not in logger.filters:
            logger.addFilter(LIBRARY_LOG_FILTER)
