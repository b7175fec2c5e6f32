"""Settings of one search server, from the command line or from code."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Literal

from .cache import default_cache_dir
from .corpus import Order

RetrieverKind = Literal["bm25", "dense", "remote"]
MAX_TOPK = 20


@dataclass(frozen=True)
class SearchConfig:
    corpus: Path | None = None
    retriever: RetrieverKind = "bm25"
    retriever_url: str | None = None
    topk: int = 3
    order: Order = "best_first"
    cache_dir: Path | None = None
    model: str | None = None
    device: str = "cpu"
    timeout: float = 30.0

    def __post_init__(self) -> None:
        if self.retriever not in ("bm25", "dense", "remote"):
            raise ValueError(f"unknown retriever {self.retriever!r}; choose bm25, dense or remote")
        if self.order not in ("best_first", "best_last"):
            raise ValueError(f"unknown order {self.order!r}; choose best_first or best_last")
        if self.retriever == "remote":
            if not self.retriever_url:
                raise ValueError("--retriever remote needs --retriever-url (the Search-R1 retrieval server)")
        elif self.corpus is None:
            raise ValueError(f"--retriever {self.retriever} needs --corpus PATH.jsonl")
        if not 1 <= self.topk <= MAX_TOPK:
            raise ValueError(f"--topk must be between 1 and {MAX_TOPK}, got {self.topk}")
        if self.timeout <= 0:
            raise ValueError(f"--timeout must be positive, got {self.timeout}")
        # Normalise paths once so every consumer sees Path objects, whatever the caller passed.
        if self.corpus is not None:
            object.__setattr__(self, "corpus", Path(self.corpus).expanduser())
        if self.cache_dir is not None:
            object.__setattr__(self, "cache_dir", Path(self.cache_dir).expanduser())

    @property
    def resolved_cache_dir(self) -> Path:
        return self.cache_dir if self.cache_dir is not None else default_cache_dir()

    @classmethod
    def coerce(cls, value: SearchConfig | argparse.Namespace | Mapping[str, Any]) -> SearchConfig:
        """Accept parsed arguments or a plain mapping; keys that are not settings (``transport``...) are
        ignored so one ``Namespace`` can configure both the server and its transport."""
        if isinstance(value, SearchConfig):
            return value
        items = vars(value) if isinstance(value, argparse.Namespace) else dict(value)
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in items.items() if k in names and v is not None})
