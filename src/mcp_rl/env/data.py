"""Task data of any shape as a ``datasets.Dataset``: QA sets become ``id``/``question``/``golden_answers``.

Sources, tried in this order by :func:`load_qa`:

1. a built-in dataset name (``"fictional"``; see :func:`mcp_rl.datasets.builtin_dataset_dir`); an
   evaluation-only one (``"chronicle"``) has no train split;
2. a local path: a ``.jsonl``, ``.json`` (a list of rows), ``.csv`` or ``.parquet`` file, or a folder. In a
   folder the split picks ``<split>.jsonl`` (then ``.parquet``, ``.json``, ``.csv``) when there is one, else
   every data file named ``<split>-*``/``<split>_*`` or inside a ``<split>/`` subfolder, formats mixed;
3. a dataset id on the Hugging Face hub, through ``datasets.load_dataset`` (only when the source does not
   look like a local path, and after one quick request that the hub is reachable and has it, so a name
   that is neither fails at once instead of after ``datasets``' network retries).

A recipe's relative paths are already absolute here, resolved against its folder (``mcp_rl.config.paths``).

What comes back depends on the rows (judged per file, on its first row):

* Search-R1 rows (``prompt`` + ``reward_model``, no ``question``) are converted: the raw question is cut
  out of the prompt (after the last ``Question:``), the answers come from
  ``reward_model.ground_truth.target``, and ``data_source`` and ``ability`` are kept; the prompt itself is
  dropped because our trainer builds its own.
* FlashRAG-like rows (``question`` plus an answer column) get a str ``id``, a stripped ``question`` and
  ``golden_answers`` as a list of strings; other columns are kept.
* Any other rows load as they are, every column kept for the prompt template and the rewards.

The answer column is ``answer_column`` when given (a string or a list of strings in each row; a CSV cell may
hold a JSON list), else the first of :data:`mcp_rl.env.golden_answers.ANSWER_COLUMNS` present. Its values
are always copied, normalised to a list of strings, into ``golden_answers`` (where the rule rewards and the
EM/F1 of ``mcp-rl eval`` look); a configured column is also kept under its own name.

:func:`check_data` checks a recipe's data against its prompt template, answer column and rewards before a
model loads or anything is written. This module finds and reads the sources; the conversion of rows
(Search-R1, FlashRAG-like, as is) into a ``Dataset`` lives in ``data_rows.py``.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import datasets
import pyarrow.parquet as pq

from mcp_rl.config.paths import DATA_SUFFIXES, looks_like_local_path
from mcp_rl.config.sections import did_you_mean
from mcp_rl.datasets import available_datasets, builtin_dataset_dir, is_eval_only
from mcp_rl.env.data_rows import FLASHRAG_FORMAT, convert_rows, question_from_prompt, rows_to_dataset
from mcp_rl.env.golden_answers import ANSWER_COLUMNS
from mcp_rl.env.prompts import template_fields
from mcp_rl.errors import DataError

if TYPE_CHECKING:
    from mcp_rl.config.sections import Recipe

__all__ = ["ANSWER_REWARDS", "check_data", "load_qa", "load_split", "qa_from_rows", "question_from_prompt"]

# Built-in rewards that compare the final answer with the golden answers (and fail without them).
ANSWER_REWARDS = ("exact_match", "f1", "answer_retrieved")
# One request to ask the hub whether a dataset exists: a hub that does not answer in this long is unreachable.
HUB_PROBE_TIMEOUT_S = 10.0
# The hub's rule for a repository id: ``name`` or ``owner/name``, letters, digits and -_. (not at the ends).
_HUB_NAME = r"[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?"
_HUB_ID = re.compile(rf"^(?:{_HUB_NAME}/)?{_HUB_NAME}$")


def load_qa(
    source: str,
    split: str = "train",
    limit: int | None = None,
    *,
    answer_column: str | None = None,
    field: str | None = None,
) -> datasets.Dataset:
    """Load task rows: QA formats converted (see the module doc), any other columns as they are.

    ``split`` picks the file(s) of a built-in dataset or a local folder, or the hub split; a single local file
    is taken whole. ``limit`` keeps the first ``limit`` rows. ``answer_column`` names the column holding the
    reference answer(s) (default: the first of ``golden_answers``, ``answers``, ``answer`` present).
    ``field`` (e.g. ``data.train``) starts the message when the source is found nowhere.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    if source in available_datasets():
        if is_eval_only(source) and split == "train":
            raise DataError(
                f"{source!r} is an evaluation-only dataset (no train split): evaluate on it with "
                f"data.eval: {source} (mcp-rl eval --qa {source}), never train on it"
            )
        return _load_files(
            _split_files(builtin_dataset_dir(source), split, source), split, limit, answer_column
        )
    path = Path(source).expanduser()
    if path.exists():
        files = _split_files(path, split, source) if path.is_dir() else [path]
        return _load_files(files, split, limit, answer_column)
    prefix = f"{field}: " if field else ""
    if looks_like_local_path(source):
        raise DataError(
            f"{prefix}dataset file or folder not found: {source!r}. Expected a built-in name "
            f"({', '.join(available_datasets()) or 'none'}), a .jsonl/.json/.csv/.parquet file, "
            "a folder with <split>.jsonl/.parquet/.csv, or a hub dataset id."
        )
    found_nowhere = _found_nowhere(source, prefix)
    _check_hub_dataset(source, found_nowhere)
    return _load_hub(source, split, limit, answer_column, found_nowhere)


def load_split(
    recipe: Recipe, part: Literal["train", "eval"], split: str | None = None, limit: int | None = None
) -> datasets.Dataset:
    """The recipe's train or eval rows (eval falls back to the train source), with its answer column."""
    data = recipe.data
    source = data.train if part == "train" else (data.eval or data.train)
    default_split = data.train_split if part == "train" else data.eval_split
    field = "data.train" if source is data.train else "data.eval"
    return load_qa(source, split or default_split, limit, answer_column=data.answer_column, field=field)


def check_data(
    recipe: Recipe, part: Literal["train", "eval"] = "train", split: str | None = None
) -> list[str]:
    """Check that the recipe's data has the columns its prompt template, answer column and rewards read.

    Reads the first row only, so it is cheap to call before the model loads or anything is written. Every
    problem is a one-line ``DataError`` naming the recipe field, the missing column and the columns the
    data has. Returns those columns.
    """
    data = recipe.data
    field = "data.train" if part == "train" or data.eval is None else "data.eval"
    source = data.train if field == "data.train" else str(data.eval)
    used_split = split or (data.train_split if part == "train" else data.eval_split)
    columns = list(load_split(recipe, part, used_split, limit=1).column_names)
    where = f"{field} ({source}, split {used_split})"
    listed = ", ".join(columns) or "none"
    for name in template_fields(recipe.prompt.user_template):
        if name not in columns:
            raise DataError(
                f"prompt.user_template: {{{name}}} is not a column of {where}; its columns: {listed}"
            )
    has_answers = any(name in columns for name in ("golden_answers", *ANSWER_COLUMNS))
    for i, reward in enumerate(recipe.rewards):
        if reward.name in ANSWER_REWARDS and not has_answers:
            raise DataError(
                f"rewards[{i}].name: {reward.name} compares the answer with reference answers, but {where} "
                f"has no answer column; its columns: {listed}; "
                "set data.answer_column to the one that holds them"
            )
    return columns


def qa_from_rows(
    rows: Iterable[Mapping[str, Any]],
    split: str = "train",
    origin: str = "rows",
    *,
    answer_column: str | None = None,
) -> datasets.Dataset:
    """Convert in-memory rows (any shape, e.g. ``DataFrame.to_dict("records")``) as :func:`load_qa` does."""
    return rows_to_dataset(convert_rows([dict(r) for r in rows], origin, split, answer_column), origin)


# ---------------------------------------------------------------------------------------------------------


def _data_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in DATA_SUFFIXES)


def _split_files(folder: Path, split: str, source: str) -> list[Path]:
    """The files of ``split`` in ``folder``: ``<split>.<ext>``, else its shards or its subfolder."""
    for ext in DATA_SUFFIXES:
        candidate = folder / f"{split}{ext}"
        if candidate.is_file():
            return [candidate]
    files = _data_files(folder)
    shards = [p for p in files if p.stem.startswith((f"{split}-", f"{split}_"))]
    if not shards and (folder / split).is_dir():
        shards = _data_files(folder / split)
    if shards:
        return shards
    raise DataError(
        f"no {split}.jsonl, {split}.parquet or {split}.csv for split {split!r} in {source!r} ({folder}); "
        f"files there: {', '.join(p.name for p in files) or 'none'}"
    )


def _read_rows(path: Path, limit: int | None) -> list[dict[str, Any]]:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        table = pq.read_table(path)
        if limit is not None:
            table = table.slice(0, limit)
        return table.to_pylist()
    if suffix in {".jsonl", ".json"}:
        return _read_json_rows(path, limit)
    if suffix == ".csv":
        with path.open(newline="", encoding="utf-8") as handle:
            rows = []
            for row in csv.DictReader(handle):
                if limit is not None and len(rows) >= limit:
                    break
                rows.append(dict(row))
            return rows
    raise DataError(f"unsupported dataset file {path}: expected .jsonl, .json, .csv or .parquet")


def _load_files(
    files: Sequence[Path], split: str, limit: int | None, answer_column: str | None
) -> datasets.Dataset:
    rows: list[dict[str, Any]] = []
    for path in files:
        left = None if limit is None else limit - len(rows)
        if left == 0:
            break
        rows += convert_rows(_read_rows(path, left), str(path), split, answer_column, offset=len(rows))
    origin = str(files[0]) if len(files) == 1 else f"{files[0].parent} ({len(files)} files)"
    return rows_to_dataset(rows, origin)


def _read_json_rows(path: Path, limit: int | None) -> list[dict[str, Any]]:
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):  # a .json file holding one list of rows
        rows = json.loads(stripped)
        return rows[:limit] if limit is not None else rows
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if limit is not None and len(rows) >= limit:
            break
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(
                f"{path}:{lineno}: not valid JSON ({err.msg}); expected one JSON object a line, "
                f"e.g. {FLASHRAG_FORMAT}"
            ) from err
        if not isinstance(row, dict):
            raise DataError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def _found_nowhere(source: str, prefix: str) -> str:
    names = available_datasets()
    return (
        f"{prefix}{source!r} is no file or folder, nor a built-in dataset{did_you_mean(source, names)} "
        f"(built-in: {', '.join(names) or 'none'})"
    )


def _check_hub_dataset(source: str, not_local: str) -> None:
    """Fail at once, in one line, for a source that is no hub id, a hub that does not answer, or a dataset
    it does not have. Offline mode (``HF_HUB_OFFLINE``) skips the request: ``datasets`` reads its cache."""
    if not _HUB_ID.match(source):
        raise DataError(f"{not_local}, nor a Hugging Face hub dataset id (name or owner/name)")
    if datasets.config.HF_HUB_OFFLINE:
        return
    from huggingface_hub import HfApi
    from huggingface_hub.errors import GatedRepoError, RepositoryNotFoundError

    try:
        HfApi().dataset_info(source, timeout=HUB_PROBE_TIMEOUT_S)
    except GatedRepoError:
        return  # it exists: datasets.load_dataset says what access it needs
    except RepositoryNotFoundError:
        raise DataError(
            f"{not_local}, and the Hugging Face hub has no dataset {source!r} (a private one needs "
            "`hf auth login`)"
        ) from None
    except Exception as error:  # a refused connection, a timeout, a proxy's answer: the hub is not reachable
        reason = " ".join(str(error).split())[:200] or type(error).__name__
        raise DataError(
            f"{not_local}, and the Hugging Face hub is not reachable to look it up ({reason}); "
            "if it is in the local cache, set HF_HUB_OFFLINE=1 to load it from there"
        ) from None


def _load_hub(
    source: str, split: str, limit: int | None, answer_column: str | None, not_local: str
) -> datasets.Dataset:
    try:
        ds = datasets.load_dataset(source, split=split)
    except Exception as err:
        offline = " (HF_HUB_OFFLINE is set: the cache only)" if datasets.config.HF_HUB_OFFLINE else ""
        raise DataError(
            f"{not_local}, and loading it from the Hugging Face hub failed{offline}: "
            f"{type(err).__name__}: {err}"
        ) from err
    if not isinstance(ds, datasets.Dataset):
        raise DataError(f"hub dataset {source!r} split {split!r} did not load as a single Dataset")
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    return rows_to_dataset(convert_rows(ds.to_list(), source, split, answer_column), source)
