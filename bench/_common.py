"""What the benchmark scripts share: progress lines on stderr, package versions and the closing JSON line on
stdout. ``bench/`` is ``sys.path[0]`` when a script in it runs, so they ``import _common``."""

from __future__ import annotations

import gzip
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any


def log(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def finish(result: dict[str, Any], summary: str) -> None:
    """The summary on stderr, then the result as the last line on stdout (one JSON object)."""
    log(summary)
    print(json.dumps(result), flush=True)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object per non-blank line of ``path``: a ``.gz`` file is decompressed, and a missing file is
    read from the gzipped copy beside it (``X.jsonl.gz``, as docs/measurements keeps them)."""
    if path.suffix != ".gz" and not path.exists():
        path = Path(f"{path}.gz")
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]
