"""A JSON-lines file that a training run may still be appending to, read a block at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BLOCK_BYTES = 1 << 20  # small enough that the first episodes of a large file show while the rest is read


@dataclass(frozen=True)
class Line:
    """One JSON object line: where it starts in the file, its bytes and its value."""

    offset: int
    raw: bytes
    value: dict[str, Any]


@dataclass
class GrowingJsonl:
    """Reads the complete lines added to ``path`` since the last call, and only those.

    A line still being written (no newline yet) waits for the next call. A line that is not a JSON object is
    skipped and described in ``errors`` (its line number and why), so one bad line never hides the rest. A
    file that shrank or was replaced (a new run in the same folder, a resume trimming its traces) is
    ``stale``: its reader must ``rewind`` and read it again from the start.
    """

    path: Path
    offset: int = 0
    lines: int = 0
    errors: list[str] = field(default_factory=list)
    _identity: tuple[int, int] | None = None

    def _stat(self) -> tuple[tuple[int, int], int] | None:
        try:
            stat = self.path.stat()
        except OSError:
            return None
        return (stat.st_dev, stat.st_ino), stat.st_size

    def stale(self) -> bool:
        """Whether what was read no longer matches the file (removed, replaced or cut shorter)."""
        if self._identity is None:
            return False
        found = self._stat()
        return found is None or found[0] != self._identity or found[1] < self.offset

    def pending(self) -> bool:
        """Whether the file has bytes not read yet."""
        found = self._stat()
        return found is not None and found[1] > self.offset

    def rewind(self) -> None:
        self.offset, self.lines, self.errors, self._identity = 0, 0, [], None

    def read_new(self) -> Iterator[list[Line]]:
        """The object lines added since the last call, a block's worth at a time."""
        found = self._stat()
        if found is None:
            return
        self._identity, size = found
        with self.path.open("rb") as handle:
            handle.seek(self.offset)
            carried = b""
            while self.offset + len(carried) < size:
                block = handle.read(min(BLOCK_BYTES, size - self.offset - len(carried)))
                if not block:
                    break
                data = carried + block
                end = data.rfind(b"\n") + 1
                carried = data[end:]
                if end:
                    lines = self._parse(data[:end])
                    self.offset += end
                    yield lines

    def _parse(self, chunk: bytes) -> list[Line]:
        parsed: list[Line] = []
        position = self.offset
        for raw in chunk.split(b"\n")[:-1]:
            self.lines += 1
            start, position = position, position + len(raw) + 1
            if not raw.strip():
                continue
            try:
                value = json.loads(raw)
            except (ValueError, RecursionError) as error:
                reason = (
                    f"{error.msg} at column {error.colno}"
                    if isinstance(error, json.JSONDecodeError)
                    else error
                )
                self.errors.append(f"{self.path.name} line {self.lines}: not valid JSON ({reason}); skipped")
                continue
            if not isinstance(value, dict):
                kind = type(value).__name__
                self.errors.append(
                    f"{self.path.name} line {self.lines}: a JSON {kind}, not an object; skipped"
                )
                continue
            parsed.append(Line(start, raw, value))
        return parsed

    def read_line(self, offset: int, length: int) -> bytes:
        with self.path.open("rb") as handle:
            handle.seek(offset)
            return handle.read(length)
