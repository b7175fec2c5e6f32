"""The datasets shipped inside the package: lookups (each one's generator lives in its own folder).

``fictional`` (an encyclopedia for the search tool), ``arithmetic`` (word problems for the calculator),
``club`` (a members' club database for the SQLite server: questions to answer with a query, and tasks that
change records) and ``chronicle`` (a second world for the search tool, written apart from the first, for
evaluation only). Each folder holds ``test.jsonl`` and, unless the dataset is evaluation-only,
``train.jsonl``; a dataset with something for its tool to read has a corpus too (``corpus.jsonl`` for
search, ``seed.db`` for SQLite), which ``data.corpus: NAME`` in a recipe resolves to.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

DATASETS_DIR = Path(__file__).parent
# The files of the fictional dataset: the Search-R1 corpus and the FlashRAG train/test questions (and the
# training questions phrased anew).
FILES = ("corpus.jsonl", "train.jsonl", "train_varied.jsonl", "test.jsonl")
# What a dataset's tool reads, in the order looked for: a search corpus, or a seed database.
CORPUS_FILES = ("corpus.jsonl", "seed.db")


def available_datasets() -> list[str]:
    """Names of the datasets shipped inside the package."""
    return sorted(d.name for d in DATASETS_DIR.iterdir() if d.is_dir() and (d / "test.jsonl").is_file())


def is_eval_only(name: str) -> bool:
    """True for a shipped dataset without a train split: a held-out world no recipe may train on."""
    return not (builtin_dataset_dir(name) / "train.jsonl").is_file()


def builtin_dataset_dir(name: str = "fictional") -> Path:
    """The folder of a shipped dataset (``train.jsonl``, ``test.jsonl``, and its corpus if it has one)."""
    names = available_datasets()
    if name not in names:
        raise ValueError(f"unknown built-in dataset {name!r}; available: {', '.join(names) or '(none)'}")
    return DATASETS_DIR / name


def builtin_corpus(name: str) -> Path:
    """What a shipped dataset's tool reads: its ``corpus.jsonl`` (search) or ``seed.db`` (SQLite)."""
    folder = builtin_dataset_dir(name)
    found = next((folder / file for file in CORPUS_FILES if (folder / file).is_file()), None)
    if found is None:
        raise ValueError(f"built-in dataset {name!r} has no corpus ({' or '.join(CORPUS_FILES)})")
    return found


def write_jsonl(path: Path, rows: Sequence[Mapping[str, object]]) -> None:
    """Rows as JSON lines for a generator: fixed key order, UTF-8 and "\\n" line ends, so the same rows give
    the same bytes on every run and platform."""
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
