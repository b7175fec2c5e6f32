"""Rows of any source → the shape the rest of the project reads, and a ``datasets.Dataset`` of them.

The first row of a file decides its format: Search-R1 rows (``prompt`` + ``reward_model``) are converted
(the question cut out of the prompt, the answers from ``reward_model.ground_truth.target``), FlashRAG-like
rows (``question`` plus an answer column) get a str ``id``, a stripped ``question`` and ``golden_answers``,
and any other rows are kept as they are, their answer column (if any) copied into ``golden_answers``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import datasets
import pyarrow as pa

from mcp_rl.env.golden_answers import ANSWER_COLUMNS, golden_list
from mcp_rl.errors import DataError

__all__ = [
    "FLASHRAG_FORMAT",
    "QUESTION_MARKER",
    "SEARCH_R1_FORMAT",
    "convert_rows",
    "question_from_prompt",
    "rows_to_dataset",
]

FLASHRAG_FORMAT = '{"id": str, "question": str, "golden_answers": [str, ...]} (one JSON object a line)'
SEARCH_R1_FORMAT = (
    '{"data_source", "prompt": [{"role": "user", "content"}], "ability", '
    '"reward_model": {"style", "ground_truth": {"target": [answers]}}, "extra_info": {"split", "index"}}'
)
QUESTION_MARKER = "Question:"
_SEARCH_R1_DROPPED = ("prompt", "reward_model", "extra_info")


def question_from_prompt(content: str) -> str:
    """The raw question inside a Search-R1 instruction prompt (text after the last ``Question:``)."""
    cut = content.rfind(QUESTION_MARKER)
    if cut < 0:
        return content.strip()
    return content[cut + len(QUESTION_MARKER) :].strip()


def _is_search_r1(row: Mapping[str, Any]) -> bool:
    return "question" not in row and "prompt" in row and "reward_model" in row


def _is_flashrag(row: Mapping[str, Any], answer_column: str | None) -> bool:
    return "question" in row and any(
        key in row for key in ([answer_column] if answer_column else ANSWER_COLUMNS)
    )


def convert_rows(
    rows: list[dict[str, Any]], origin: str, split: str, answer_column: str | None, offset: int = 0
) -> list[dict[str, Any]]:
    """One file's rows in our shape; the first row decides the format (Search-R1, FlashRAG-like or as is).
    ``offset``: the rows before these (earlier files of the split), so ids and row numbers run on."""
    if not rows:
        return []
    if answer_column is not None and answer_column not in rows[0]:
        raise DataError(
            f"data.answer_column: {answer_column!r} is not a column of {origin}; "
            f"its columns: {', '.join(rows[0]) or 'none'}"
        )
    first = rows[0]
    if _is_search_r1(first):
        converted = [_from_search_r1(row, offset + i, origin, split) for i, row in enumerate(rows)]
        if answer_column is None:
            return converted
        for row, out in zip(rows, converted, strict=True):
            out[answer_column] = row.get(answer_column)
            out["golden_answers"] = _checked_answers(row.get(answer_column), out["id"], origin)
        return converted
    if _is_flashrag(first, answer_column):
        return [_from_flashrag(row, offset + i, origin, split, answer_column) for i, row in enumerate(rows)]
    return [_as_is(row, offset + i, origin, answer_column) for i, row in enumerate(rows)]


def _as_is(row: Mapping[str, Any], i: int, origin: str, answer_column: str | None) -> dict[str, Any]:
    """A row of any columns, kept whole; its answer column (if any) also copied into ``golden_answers``."""
    out = dict(row)
    key = answer_column or next((k for k in ANSWER_COLUMNS if k in row), None)
    if key is not None:
        if key not in row:
            raise DataError(
                f"data.answer_column: row {i} of {origin} has no column {key!r}; "
                f"its columns: {', '.join(row)}"
            )
        out["golden_answers"] = _checked_answers(row[key], str(row.get("id", i)), origin)
    return out


def rows_to_dataset(rows: list[dict[str, Any]], origin: str) -> datasets.Dataset:
    """Converted rows as a ``Dataset`` (the QA columns when there are none); scalar columns whose type
    differs between files become text, anything else that cannot form a table is a ``DataError``."""
    if not rows:
        features = datasets.Features(
            {
                "id": datasets.Value("string"),
                "question": datasets.Value("string"),
                "golden_answers": datasets.List(datasets.Value("string")),
            }
        )
        return datasets.Dataset.from_dict({"id": [], "question": [], "golden_answers": []}, features=features)
    # The converters already return str ids/questions and list[str] answers, so the inferred types are right
    # (no numeric id or year column can come back as ints). Other columns must keep one type each.
    try:
        return datasets.Dataset.from_list(rows)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
        pass
    # Files of mixed formats disagree on types (a CSV's "2" beside a jsonl's 2): such scalar columns become
    # text, as a CSV would have them; a column mixing lists or mappings with other values is an error.
    kinds: dict[str, set[type]] = {}
    for row in rows:
        for key, value in row.items():
            if value is not None:
                kinds.setdefault(key, set()).add(type(value))
    mixed = [key for key, types in kinds.items() if len(types) > 1]
    for key in mixed:
        if not kinds[key] <= {str, int, float, bool}:
            names = ", ".join(sorted(t.__name__ for t in kinds[key]))
            raise DataError(
                f"{origin}: column {key!r} holds values of different types ({names}); give it one"
            )
    fixed = [{k: (str(v) if k in mixed and v is not None else v) for k, v in row.items()} for row in rows]
    try:
        return datasets.Dataset.from_list(fixed)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as err:
        message = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise DataError(
            f"{origin}: the rows do not form a table ({message}); give each column one type in every row"
        ) from err


def _from_flashrag(
    row: Mapping[str, Any], i: int, origin: str, split: str, answer_column: str | None = None
) -> dict[str, Any]:
    if "question" not in row:
        raise DataError(
            f"{origin}: row {i} has no 'question' column (columns: {', '.join(row)}); expected the FlashRAG "
            f"format {FLASHRAG_FORMAT} like the first row, or the Search-R1 parquet format {SEARCH_R1_FORMAT}"
        )
    candidates = [answer_column] if answer_column else ANSWER_COLUMNS
    key = next((k for k in candidates if k in row), None)
    if key is None:
        raise DataError(
            f"{origin}: row {i} has no {candidates[0]!r} column (columns: {', '.join(row)}) unlike the "
            f"first row; expected {FLASHRAG_FORMAT}"
        )
    rid = str(row["id"]) if row.get("id") is not None else f"{split}_{i}"
    out: dict[str, Any] = {
        "id": rid,
        "question": str(row["question"]).strip(),
        "golden_answers": _checked_answers(row[key], rid, origin),
    }
    # The alias a QA set used is dropped (golden_answers holds it); a configured column is kept as it is.
    dropped = set(ANSWER_COLUMNS) - {answer_column}
    out.update((k, v) for k, v in row.items() if k not in out and k not in dropped)
    return out


def _from_search_r1(row: Mapping[str, Any], i: int, origin: str, split: str) -> dict[str, Any]:
    prompt = row.get("prompt")
    messages = prompt.tolist() if hasattr(prompt, "tolist") else prompt
    if not messages or not all(isinstance(m, Mapping) and "content" in m for m in messages):
        raise DataError(
            f"{origin}: row {i} has no usable 'prompt' (a list of {{role, content}} messages); "
            f"expected the Search-R1 format {SEARCH_R1_FORMAT}"
        )
    user = next((m for m in messages if m.get("role") == "user"), messages[-1])
    reward = row.get("reward_model") or {}
    truth = reward.get("ground_truth") if isinstance(reward, Mapping) else None
    if not isinstance(truth, Mapping) or "target" not in truth:
        raise DataError(
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


def _json_list(value: Any) -> Any:
    """A CSV cell spelling a JSON list (``["a", "b"]``) as that list; anything else unchanged."""
    if isinstance(value, str) and value.strip().startswith("[") and value.strip().endswith("]"):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value
        return parsed if isinstance(parsed, list) else value
    return value


def _checked_answers(value: Any, rid: str, origin: str) -> list[str]:
    value = _json_list(value)
    try:
        answers = [a.strip() for a in golden_list(value) if a.strip()]
    except ValueError as err:  # a dict without an answer key: say which question
        raise DataError(f"{origin}: question {rid!r}: {err}") from err
    if not answers:
        # An exact-match reward against no answers is always 0: better to stop here than train on noise.
        raise DataError(f"{origin}: question {rid!r} has no golden answers")
    return answers
