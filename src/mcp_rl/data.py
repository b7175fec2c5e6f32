"""Question/answer datasets as a ``datasets.Dataset`` with ``id``, ``question`` and ``golden_answers``.

Sources, tried in this order by :func:`load_qa`:

1. a built-in dataset name (``"fictional"``; see :func:`mcp_rl.datasets.builtin_dataset_dir`);
2. a local path: a FlashRAG-style ``.jsonl``/``.json`` file (``{"id", "question", "golden_answers"}``), a
   ``.parquet`` file in the Search-R1 format or with FlashRAG columns, or a folder holding
   ``<split>.jsonl`` / ``<split>.parquet``;
3. a dataset id on the Hugging Face hub, through ``datasets.load_dataset`` (only when the source does not
   look like a local path).

Extra columns are kept. Search-R1 rows are converted: the raw question is cut out of the prompt (after the
last ``Question:``), the answers come from ``reward_model.ground_truth.target``, and ``data_source`` and
``ability`` are kept; the prompt itself is dropped because our trainer builds its own.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import datasets
import pyarrow.parquet as pq

from mcp_rl.answers import ANSWER_COLUMNS, golden_list
from mcp_rl.datasets import available_datasets, builtin_dataset_dir
from mcp_rl.errors import DataError

FLASHRAG_FORMAT = '{"id": str, "question": str, "golden_answers": [str, ...]} (one JSON object a line)'
SEARCH_R1_FORMAT = (
    '{"data_source", "prompt": [{"role": "user", "content"}], "ability", '
    '"reward_model": {"style", "ground_truth": {"target": [answers]}}, "extra_info": {"split", "index"}}'
)
QUESTION_MARKER = "Question:"
_SEARCH_R1_DROPPED = ("prompt", "reward_model", "extra_info")


def load_qa(source: str, split: str = "train", limit: int | None = None) -> datasets.Dataset:
    """Load a QA dataset as columns ``id`` (str), ``question`` (str), ``golden_answers`` (list[str]) + extras.

    ``split`` picks the file of a built-in dataset or a local folder, or the hub split; a single local file
    is taken whole. ``limit`` keeps the first ``limit`` rows.
    """
    if limit is not None and limit < 0:
        raise ValueError(f"limit must be >= 0 or None, got {limit}")
    if source in available_datasets():
        return _load_path(_split_file(builtin_dataset_dir(source), split, source), split, limit)
    path = Path(source).expanduser()
    if path.exists():
        if path.is_dir():
            path = _split_file(path, split, source)
        return _load_path(path, split, limit)
    if _looks_like_path(source):
        raise DataError(
            f"dataset file or folder not found: {source!r}. Expected a built-in name "
            f"({', '.join(available_datasets()) or 'none'}), a FlashRAG .jsonl, a Search-R1 .parquet, "
            "a folder with <split>.jsonl/.parquet, or a hub dataset id."
        )
    return _load_hub(source, split, limit)


def qa_from_rows(
    rows: Iterable[Mapping[str, Any]], split: str = "train", origin: str = "rows"
) -> datasets.Dataset:
    """Convert in-memory rows (FlashRAG or Search-R1 shaped, e.g. ``DataFrame.to_dict("records")``)."""
    return _to_dataset([dict(r) for r in rows], origin, split)


def question_from_prompt(content: str) -> str:
    """The raw question inside a Search-R1 instruction prompt (text after the last ``Question:``)."""
    cut = content.rfind(QUESTION_MARKER)
    if cut < 0:
        return content.strip()
    return content[cut + len(QUESTION_MARKER) :].strip()


# ---------------------------------------------------------------------------------------------------------


def _looks_like_path(source: str) -> bool:
    # Hub ids are "name" or "owner/name"; anything with a file suffix, a leading "." / "~" / "/" or more than
    # one "/" can only be meant as a local path.
    suffix = Path(source).suffix.lower()
    return (
        suffix in {".jsonl", ".json", ".parquet"}
        or source.startswith((".", "~", "/"))
        or source.count("/") > 1
        or "\\" in source
    )


def _split_file(folder: Path, split: str, source: str) -> Path:
    for ext in (".jsonl", ".parquet", ".json"):
        candidate = folder / f"{split}{ext}"
        if candidate.is_file():
            return candidate
    found = sorted(p.name for p in folder.iterdir() if p.suffix in {".jsonl", ".parquet", ".json"})
    raise DataError(
        f"no {split}.jsonl or {split}.parquet for split {split!r} in {source!r} ({folder}); "
        f"files there: {', '.join(found) or 'none'}"
    )


def _load_path(path: Path, split: str, limit: int | None) -> datasets.Dataset:
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        table = pq.read_table(path)
        if limit is not None:
            table = table.slice(0, limit)
        rows = table.to_pylist()
    elif suffix in {".jsonl", ".json"}:
        rows = _read_json_rows(path, limit)
    else:
        raise DataError(f"unsupported dataset file {path}: expected .jsonl, .json or .parquet")
    return _to_dataset(rows, str(path), split)


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
            raise ValueError(
                f"{path}:{lineno}: not valid JSON ({err.msg}); expected {FLASHRAG_FORMAT}"
            ) from err
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(row).__name__}")
        rows.append(row)
    return rows


def _load_hub(source: str, split: str, limit: int | None) -> datasets.Dataset:
    try:
        ds = datasets.load_dataset(source, split=split)
    except Exception as err:
        raise ValueError(
            f"{source!r} is not a built-in dataset ({', '.join(available_datasets()) or 'none'}) nor an "
            f"existing local path, and loading it from the Hugging Face hub failed (is a hub reachable from "
            f"here?): {type(err).__name__}: {err}"
        ) from err
    if not isinstance(ds, datasets.Dataset):
        raise ValueError(f"hub dataset {source!r} split {split!r} did not load as a single Dataset")
    if limit is not None:
        ds = ds.select(range(min(limit, len(ds))))
    return _to_dataset(ds.to_list(), source, split)


def _is_search_r1(row: Mapping[str, Any]) -> bool:
    return "question" not in row and "prompt" in row and "reward_model" in row


def _to_dataset(rows: list[dict[str, Any]], origin: str, split: str) -> datasets.Dataset:
    if not rows:
        features = datasets.Features(
            {
                "id": datasets.Value("string"),
                "question": datasets.Value("string"),
                "golden_answers": datasets.List(datasets.Value("string")),
            }
        )
        return datasets.Dataset.from_dict({"id": [], "question": [], "golden_answers": []}, features=features)
    convert = _from_search_r1 if _is_search_r1(rows[0]) else _from_flashrag
    # The converters already return str ids/questions and list[str] answers, so the inferred types are right
    # (no numeric id or year column can come back as ints).
    return datasets.Dataset.from_list([convert(row, i, origin, split) for i, row in enumerate(rows)])


def _from_flashrag(row: Mapping[str, Any], i: int, origin: str, split: str) -> dict[str, Any]:
    if "question" not in row:
        raise ValueError(
            f"{origin}: row {i} has no 'question' column (columns: {sorted(row)}); expected the FlashRAG "
            f"format {FLASHRAG_FORMAT} or the Search-R1 parquet format {SEARCH_R1_FORMAT}"
        )
    key = next((k for k in ANSWER_COLUMNS if k in row), None)
    if key is None:
        raise ValueError(
            f"{origin}: row {i} has no 'golden_answers' column (columns: {sorted(row)}); "
            f"expected {FLASHRAG_FORMAT}"
        )
    rid = str(row["id"]) if row.get("id") is not None else f"{split}_{i}"
    out: dict[str, Any] = {
        "id": rid,
        "question": str(row["question"]).strip(),
        "golden_answers": _checked_answers(row[key], rid, origin),
    }
    out.update((k, v) for k, v in row.items() if k not in out and k not in ANSWER_COLUMNS)
    return out


def _from_search_r1(row: Mapping[str, Any], i: int, origin: str, split: str) -> dict[str, Any]:
    prompt = row.get("prompt")
    messages = prompt.tolist() if hasattr(prompt, "tolist") else prompt
    if not messages or not all(isinstance(m, Mapping) and "content" in m for m in messages):
        raise ValueError(
            f"{origin}: row {i} has no usable 'prompt' (a list of {{role, content}} messages); "
            f"expected the Search-R1 format {SEARCH_R1_FORMAT}"
        )
    user = next((m for m in messages if m.get("role") == "user"), messages[-1])
    reward = row.get("reward_model") or {}
    truth = reward.get("ground_truth") if isinstance(reward, Mapping) else None
    if not isinstance(truth, Mapping) or "target" not in truth:
        raise ValueError(
            f"{origin}: row {i} has no 'reward_model.ground_truth.target' column; "
            f"expected the Search-R1 format {SEARCH_R1_FORMAT}"
        )
    extra = row.get("extra_info") or {}
    source_name = row.get("data_source")
    if isinstance(extra, Mapping) and extra.get("index") is not None:
        # Search-R1 merges sources (nq + hotpotqa) whose indices restart at 0, so prefix the source.
        rid = f"{source_name}_{extra['index']}" if source_name else str(extra["index"])
    else:
        rid = f"{split}_{i}"
    out: dict[str, Any] = {
        "id": rid,
        "question": question_from_prompt(str(user["content"])),
        "golden_answers": _checked_answers(truth["target"], rid, origin),
    }
    out.update((k, v) for k, v in row.items() if k not in out and k not in _SEARCH_R1_DROPPED)
    return out


def _checked_answers(value: Any, rid: str, origin: str) -> list[str]:
    try:
        answers = [a.strip() for a in golden_list(value) if a.strip()]
    except ValueError as err:  # a dict without an answer key: say which question
        raise ValueError(f"{origin}: question {rid!r}: {err}") from err
    if not answers:
        # An exact-match reward against no answers is always 0: better to stop here than train on noise.
        raise ValueError(f"{origin}: question {rid!r} has no golden answers")
    return answers
