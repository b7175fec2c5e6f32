"""The datasets shipped inside the package: lookups only (each one's generator lives in its own folder)."""

from __future__ import annotations

from pathlib import Path

DATASETS_DIR = Path(__file__).parent
# The files of every shipped dataset: the Search-R1 corpus and the FlashRAG train/test questions.
FILES = ("corpus.jsonl", "train.jsonl", "test.jsonl")


def available_datasets() -> list[str]:
    """Names of the datasets shipped inside the package."""
    return sorted(d.name for d in DATASETS_DIR.iterdir() if d.is_dir() and (d / "corpus.jsonl").is_file())


def builtin_dataset_dir(name: str = "fictional") -> Path:
    """The folder of a shipped dataset (``corpus.jsonl``, ``train.jsonl``, ``test.jsonl``)."""
    names = available_datasets()
    if name not in names:
        raise ValueError(f"unknown built-in dataset {name!r}; available: {', '.join(names) or '(none)'}")
    return DATASETS_DIR / name
