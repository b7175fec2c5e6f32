"""What the benchmark scripts share: progress lines on stderr, package versions and the closing JSON line on
stdout. ``bench/`` is ``sys.path[0]`` when a script in it runs, so they ``import _common``."""

from __future__ import annotations

import importlib.metadata
import json
import sys
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
