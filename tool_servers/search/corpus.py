"""The Search-R1 corpus format and the Search-R1 rendering of retrieved passages.

A corpus is JSON Lines, one passage a line: ``{"id": "...", "contents": "\\"Title\\"\\ntext"}``; the first
line of ``contents`` is the title (quoted in Search-R1's wiki-18 dump), the rest is the text.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Order = Literal["best_first", "best_last"]


@dataclass(frozen=True)
class Passage:
    """One retrievable passage, kept in Search-R1's ``contents`` form."""

    id: str
    contents: str

    @property
    def title(self) -> str:
        return self.contents.partition("\n")[0]

    @property
    def text(self) -> str:
        return self.contents.partition("\n")[2]

    @classmethod
    def from_json(cls, obj: Any, fallback_id: str) -> Passage:
        """Read a corpus record; ``title``/``text`` records (as in many BEIR-style dumps) are accepted too."""
        if not isinstance(obj, dict):
            raise ValueError("a passage must be a JSON object")
        contents = obj.get("contents")
        if contents is None and "text" in obj:
            contents = f'"{obj.get("title", "")}"\n{obj["text"]}'
        if not isinstance(contents, str):
            raise ValueError("a passage needs a string 'contents' field (or 'title' and 'text')")
        return cls(id=str(obj.get("id", fallback_id)), contents=contents)


@dataclass(frozen=True)
class Hit:
    passage: Passage
    score: float


def load_corpus(path: Path) -> tuple[list[Passage], str]:
    """The passages of a jsonl corpus and the sha256 of the file's bytes (the index cache key).

    Hashing while reading spares a second pass over what may be a large file.
    """
    digest = hashlib.sha256()
    passages: list[Passage] = []
    with path.open("rb") as fh:
        for lineno, raw in enumerate(fh, start=1):
            digest.update(raw)
            if not raw.strip():
                continue
            try:
                passages.append(Passage.from_json(json.loads(raw), fallback_id=str(lineno - 1)))
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                raise ValueError(f"{path}:{lineno}: {exc}") from exc
    if not passages:
        raise ValueError(f"{path}: the corpus holds no passages")
    return passages, digest.hexdigest()


def format_hits(hits: Sequence[Hit], order: Order = "best_first") -> str:
    """Render hits as Search-R1's ``_passages2string`` does: ``Doc i(Title: t) text`` lines.

    ``best_last`` puts the best hit at the bottom, nearest to where a small model starts writing, while the
    numbering still runs 1..k top to bottom so the model never sees a descending count.
    """
    shown = list(reversed(hits)) if order == "best_last" else list(hits)
    return "\n".join(
        f"Doc {i}(Title: {hit.passage.title}) {hit.passage.text}" for i, hit in enumerate(shown, start=1)
    )
