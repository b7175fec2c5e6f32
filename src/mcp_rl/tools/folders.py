"""Episode folders that never outlive their run: named after the process that owns them, swept when that
process is gone, and removed on SIGTERM as on Ctrl-C.

A run killed outright (SIGKILL, a lost node) cannot clean up after itself; the next run on the machine
does: a folder whose owner is no longer alive is an orphan. The owner is written into the folder's name,
not into a file inside it, because the folder is the server's own (``${episode.dir}``) and a file tree or
database server would see a stray file. The owner is its pid and its start time, so a reused pid does not
keep an orphan alive.
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import tempfile
import threading
from pathlib import Path
from types import FrameType

logger = logging.getLogger(__name__)

FOLDER_PREFIX = "mcp-rl-episode-"
_OWNED = re.compile(rf"^{re.escape(FOLDER_PREFIX)}(\d+)-(\d+)-")


def _start_time(pid: int) -> int | None:
    """When ``pid`` started (clock ticks after boot, Linux's /proc), or None when it is not running."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    if fields[0] in ("Z", "X"):  # a zombie has exited; only its parent's wait is missing
        return None
    return int(fields[19])


def owner_mark(pid: int | None = None) -> str:
    """``<pid>-<start time>``: the owner part of an episode folder's name."""
    pid = os.getpid() if pid is None else pid
    return f"{pid}-{_start_time(pid) or 0}"


def make_episode_folder(root: Path | None = None) -> Path:
    """A fresh temporary folder for one episode, its name marked with this process as the owner."""
    return Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{owner_mark()}-", dir=root))


def sweep_orphans(root: Path | None = None) -> list[Path]:
    """Remove the episode folders under ``root`` (the temporary folder) whose owning process is gone.

    Folders of live runs are left alone, and so are folders without an owner mark (whose owner cannot be
    told). Returns the folders removed.
    """
    if _start_time(os.getpid()) is None:  # no /proc: who is alive cannot be told, so nothing is an orphan
        return []
    base = Path(root or tempfile.gettempdir())
    try:
        entries = list(base.iterdir())
    except OSError:
        return []
    removed = []
    for entry in entries:
        match = _OWNED.match(entry.name)
        if match is None or not entry.is_dir() or entry.is_symlink():
            continue
        pid, started = int(match[1]), int(match[2])
        alive = _start_time(pid)
        if alive is not None and (started == 0 or alive == started):
            continue
        shutil.rmtree(entry, ignore_errors=True)
        if not entry.exists():
            removed.append(entry)
    if removed:
        logger.info("removed %d episode folder(s) left by runs that ended without cleaning up", len(removed))
    return removed


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    # SystemExit unwinds the main thread like Ctrl-C's KeyboardInterrupt does: every `with` and `finally`
    # on the way out runs, and the pool's close stops the episodes' servers and removes their folders.
    raise SystemExit(128 + signum)


def exit_cleanly_on_sigterm() -> bool:
    """Make SIGTERM (``timeout``, ``kill``, a job scheduler) end the process as Ctrl-C does, cleaning up.

    Only from the main thread (the only one that may set handlers), and only while SIGTERM still has its
    default action: a handler the program installed itself is kept. Returns whether ours is installed.
    """
    if threading.current_thread() is not threading.main_thread():
        return signal.getsignal(signal.SIGTERM) is _exit_on_sigterm
    current = signal.getsignal(signal.SIGTERM)
    if current is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
        return True
    return current is _exit_on_sigterm
