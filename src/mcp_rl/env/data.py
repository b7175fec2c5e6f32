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
are always
copied, normalised to a list of strings, into ``golden_answers`` (where the rule rewards and the EM/F1 of
``mcp-rl eval`` look); a configured column is also kept under its own name.

:func:`check_data` checks a recipe's data against its prompt template, answer column and rewards before a
model loads or anything is written.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import datasets
import pyarrow as pa
import pyarrow.parquet as pq

from mcp_rl.config.paths import DATA_SUFFIXES, looks_like_local_path
from mcp_rl.config.sections import did_you_mean
from mcp_rl.datasets import available_datasets, builtin_dataset_dir, is_eval_only
from mcp_rl.env.golden_answers import ANSWER_COLUMNS, golden_list
from mcp_rl.env.prompts import template_fields
from mcp_rl.errors import DataError

if TYPE_CHECKING:
    from mcp_rl.config.sections import Recipe

FLASHRAG_FORMAT = '{"id": str, "question": str, "golden_answers": [str, ...]} (one JSON object a line)'
SEARCH_R1_FORMAT = (
    '{"data_source", "prompt": [{"role": "user", "content"}], "ability", '
    '"reward_model": {"style", "ground_truth": {"target": [answers]}}, "extra_info": {"split", "index"}}'
)
QUESTION_MARKER = "Question:"
# Built-in rewards that compare the final answer with the golden answers (and fail without them).
ANSWER_REWARDS = ("exact_match", "f1", "answer_retrieved")
_SEARCH_R1_DROPPED = ("prompt", "reward_model", "extra_info")
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
    return _to_dataset(_convert_rows([dict(r) for r in rows], origin, split, answer_column), origin)


def question_from_prompt(content: str) -> str:
    """The raw question inside a Search-R1 instruction prompt (text after the last ``Question:``)."""
    cut = content.rfind(QUESTION_MARKER)
    if cut < 0:
        return content.strip()
    return content[cut + len(QUESTION_MARKER) :].strip()


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
        rows += _convert_rows(_read_rows(path, left), str(path), split, answer_column, offset=len(rows))
    origin = str(files[0]) if len(files) == 1 else f"{files[0].parent} ({len(files)} files)"
    return _to_dataset(rows, origin)


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
    return _to_dataset(_convert_rows(ds.to_list(), source, split, answer_column), source)


def _is_search_r1(row: Mapping[str, Any]) -> bool:
    return "question" not in row and "prompt" in row and "reward_model" in row


def _is_flashrag(row: Mapping[str, Any], answer_column: str | None) -> bool:
    return "question" in row and any(
        key in row for key in ([answer_column] if answer_column else ANSWER_COLUMNS)
    )


def _convert_rows(
    rows: list[dict[str, Any]], origin: str, split: str, answer_column: str | None, offset: int = 0
) -> list[dict[str, Any]]:
    """One file's rows in our shape; the first row decides the format (Search-R1, FlashRAG-like or as is)."""
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


def _to_dataset(rows: list[dict[str, Any]], origin: str) -> datasets.Dataset:
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
