"""Where built indexes live on disk, and how they get there without a half-written file ever being read."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

CACHE_ENV = "MCP_RL_CACHE"


def default_cache_dir() -> Path:
    """``$MCP_RL_CACHE/search`` when that variable is set, else ``~/.cache/mcp-rl/search``."""
    root = os.environ.get(CACHE_ENV)
    return (Path(root) if root else Path.home() / ".cache" / "mcp-rl") / "search"


def cache_key(*parts: str) -> str:
    """A short, stable name for an index: the corpus hash plus everything that changes the index's bytes."""
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def save_array_atomic(path: Path, array: np.ndarray) -> None:
    """Write ``array`` to ``path`` via a temp file and a rename, so a crash or a racing server never reads
    a truncated file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.save(fh, array)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def save_dir_atomic(path: Path, write: Callable[[Path], None]) -> None:
    """Fill a temp directory with ``write`` and rename it to ``path``.

    A directory rename is atomic but refuses to replace a non-empty directory; if another process finished
    the same index first, its copy is as good as ours and ours is dropped.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
    try:
        write(tmp)
        try:
            os.rename(tmp, path)
        except OSError:
            if not path.is_dir():
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
