"""Episodes as the viewer lists them: a small summary per episode to filter on, the full record on demand.

A source is the training traces (``traces.jsonl``, or ``traces.rankN.jsonl`` from several processes) or one
eval report's ``.trajectories.jsonl``. It keeps, per episode, where its line is and a summary already
serialized as JSON, so a hundred thousand episodes cost a few tens of MB and a page of them is a string join;
an episode's turns are read from its line only when someone opens it.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mcp_rl.tools.observation import TOKEN_TRUNCATION_MARKER, TRUNCATION_MARKER
from mcp_rl.viewer.jsonl import BLOCK_BYTES, GrowingJsonl, Line
from mcp_rl.viewer.redaction import Redactor

# Where an observation was cut: the engine's token-budget mark and the character-budget one (up to its count).
TRUNCATION_MARKS = (TOKEN_TRUNCATION_MARKER.strip(), TRUNCATION_MARKER.split("{", 1)[0])
TEXT_CHARS = 300  # question and answer text kept in a summary (the episode view shows it whole)
COLUMN_CHARS = 120  # dataset column values kept for filtering
SHOWN_ELSEWHERE = ("question", "golden_answers")  # dataset columns a summary already holds
# Where a search stops: a request answers in bounded time, even on a huge file or a needle found everywhere.
SEARCH_TIME_LIMIT_S = 10.0


def _cut(value: Any, limit: int) -> str | None:
    if value is None:
        return None
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def total_reward(record: Mapping[str, Any], weights: Mapping[str, float]) -> float | None:
    """The weighted total the record carries; older traces have none: their scores summed with ``weights``
    (the recipe's, by reward name; 1 for a name not found)."""
    if "reward" in record:
        return _number(record["reward"])
    rewards = record.get("rewards") if isinstance(record.get("rewards"), Mapping) else {}
    scores = [(weights.get(str(k), 1.0), _number(v)) for k, v in rewards.items()]
    present = [w * s for w, s in scores if s is not None]
    return sum(present) if present else None


def task_text(record: Mapping[str, Any], task_columns: Sequence[str] = ()) -> Any:
    """What the episode was asked: the trace's ``question``, else the first dataset column the prompt
    template names (``task_columns``), else a ``question`` column, else the rendered user prompt."""
    row = record.get("row") if isinstance(record.get("row"), Mapping) else {}
    if record.get("question") is not None:
        return record["question"]
    for column in (*task_columns, "question"):
        if row.get(column) is not None:
            return row[column]
    return record.get("user_prompt") or record.get("task")


def summarize(
    record: Mapping[str, Any], index: int, weights: Mapping[str, float], task_columns: Sequence[str] = ()
) -> dict[str, Any]:
    """What the list shows and filters on: step, task, rewards, finish, calls by tool, failures, hops,
    columns."""
    row = record.get("row") if isinstance(record.get("row"), Mapping) else {}
    turns = [t for t in record.get("turns") or [] if isinstance(t, Mapping)]
    calls = [c for t in turns for c in t.get("calls") or [] if isinstance(c, Mapping)]
    observations = [t.get("observation") or "" for t in turns] + [c.get("observation") or "" for c in calls]
    question = task_text(record, task_columns)
    golden = record.get("golden_answers") or row.get("golden_answers")
    rewards = record.get("rewards") if isinstance(record.get("rewards"), Mapping) else {}
    calls_by_tool = Counter(str(c.get("name")) for c in calls)
    return {
        "id": index,
        "step": _number(record.get("step")),
        "question": _cut(question, TEXT_CHARS),
        "answer": _cut(record.get("answer"), TEXT_CHARS),
        "golden": _cut(" | ".join(map(str, golden)) if isinstance(golden, list) else golden, TEXT_CHARS),
        "reward": total_reward(record, weights),
        "rewards": {str(k): _number(v) for k, v in rewards.items()},
        "finish": record.get("finish_reason"),
        "turns": len(turns),
        "calls": len(calls),
        "failures": sorted({str(c["failure"]) for c in calls if c.get("failure")}),
        "calls_by_tool": dict(sorted(calls_by_tool.items())),
        "parse_errors": sum(len(t.get("parse_errors") or []) for t in turns),
        "truncated": any(mark in text for text in observations for mark in TRUNCATION_MARKS),
        "hops": row.get("hops"),
        "columns": {str(k): _cut(v, COLUMN_CHARS) for k, v in row.items() if k not in SHOWN_ELSEWHERE},
        # What matches the same task across two eval reports: the dataset's id, else the question.
        "key": str(row["id"]) if row.get("id") is not None else _cut(question, 2000),
    }


@dataclass(frozen=True)
class SearchResult:
    """The ids a search found, and whether it read every episode (False: stopped at its time limit)."""

    ids: list[int]
    complete: bool


class EpisodeSource:
    """One list of episodes read from one or more growing JSON-lines files.

    Args:
        name: short id used in requests ("train", "eval1", ...).
        label: what the page calls it.
        paths: the files, looked up again on each refresh (rank files may appear later).
        redactor: applied to every summary and record before it leaves.
        report: an eval report's numbers, shown beside its episodes.
        weights: reward weights by name, for records without their total (traces before it was written).
        task_columns: the dataset columns the recipe's prompt template names: where the task text is in
            records without a ``question`` (traces written before the recorder stored one).
    """

    def __init__(
        self,
        name: str,
        label: str,
        paths: Callable[[], Sequence[Path]],
        redactor: Redactor,
        report: dict[str, Any] | None = None,
        weights: Mapping[str, float] | None = None,
        task_columns: Sequence[str] = (),
    ) -> None:
        self.name, self.label, self.paths, self.redactor, self.report = name, label, paths, redactor, report
        self.weights = dict(weights or {})
        self.task_columns = tuple(task_columns)
        self.files: dict[Path, GrowingJsonl] = {}
        self.generation = 0  # bumped when a file was replaced or cut: the page reloads the list
        self.indexing = False
        self._entries: list[tuple[GrowingJsonl, int, int]] = []  # (file, offset, length) per episode
        self._starts: dict[Path, tuple[list[int], list[int]]] = {}  # per file: line offsets, episode ids
        self._summaries: list[str] = []
        self._lock = threading.Lock()

    # -- reading --------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Index what the files gained since the last call (all of them again if one was replaced)."""
        for path in self.paths():
            self.files.setdefault(path, GrowingJsonl(path))
        if any(file.stale() for file in self.files.values()):
            for file in self.files.values():
                file.rewind()
            with self._lock:
                self._entries, self._summaries, self._starts = [], [], {}
                self.generation += 1
        self.indexing = any(file.pending() for file in self.files.values())
        try:
            for file in self.files.values():
                for lines in file.read_new():
                    self._add(file, lines)
        finally:
            self.indexing = False

    def _add(self, file: GrowingJsonl, lines: Sequence[Line]) -> None:
        summaries = []
        first = len(self._summaries)
        for n, line in enumerate(lines):
            record = self.redactor.line(line.raw, line.value)
            summary = summarize(record, first + n, self.weights, self.task_columns)
            summaries.append(json.dumps(summary, default=str))
        with self._lock:
            offsets, ids = self._starts.setdefault(file.path, ([], []))
            for n, line in enumerate(lines):
                self._entries.append((file, line.offset, len(line.raw)))
                offsets.append(line.offset)
                ids.append(first + n)
            self._summaries.extend(summaries)

    # -- what requests get ----------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._summaries)

    @property
    def errors(self) -> list[str]:
        return [error for file in self.files.values() for error in file.errors]

    def summaries_json(self, since: int, limit: int) -> str:
        """``{"generation", "total", "indexing", "items": [...]}`` for episodes ``since`` onwards."""
        with self._lock:
            items = self._summaries[since : since + limit]
            total, generation = len(self._summaries), self.generation
        head = json.dumps({"generation": generation, "total": total, "indexing": self.indexing})
        return head[:-1] + ', "items": [' + ", ".join(items) + "]}"

    def summaries(self) -> list[dict[str, Any]]:
        with self._lock:
            return [json.loads(s) for s in self._summaries]

    def record(self, index: int) -> dict[str, Any]:
        """Episode ``index`` whole (redacted), with its summary's id; IndexError if there is none."""
        with self._lock:
            if not 0 <= index < len(self._entries):
                raise IndexError(index)
            file, offset, length = self._entries[index]
        raw = file.read_line(offset, length)
        record = self.redactor.line(raw, json.loads(raw))
        record["id"] = index
        return record

    def search(self, query: str, time_limit_s: float = SEARCH_TIME_LIMIT_S) -> SearchResult:
        """The episodes whose line holds ``query`` (any field, case-insensitive for ASCII letters).

        Matches the text as JSON writes it, so a query is escaped the same way; the files are scanned a
        block at a time, cut at line ends, and a hit maps to its episode by the line offsets. An empty
        query matches nothing; a scan past ``time_limit_s`` stops there and says so (``complete`` False).
        """
        # A JSON line never holds a raw newline, so a needle with one cannot match (and would loop).
        needles = {
            needle
            for needle in (json.dumps(query.lower())[1:-1].encode(), query.lower().encode())
            if needle and b"\n" not in needle
        }
        found: set[int] = set()
        if not needles:
            return SearchResult([], complete=True)
        deadline = time.monotonic() + time_limit_s
        with self._lock:  # one consistent list, even if a refresh starts over meanwhile
            starts, entries = list(self._starts.items()), self._entries
        for path, (offsets, ids) in starts:
            file = self.files[path]
            with path.open("rb") as handle:
                position = 0
                while position < file.offset:
                    if time.monotonic() > deadline:
                        return SearchResult(sorted(found), complete=False)
                    block = handle.read(min(BLOCK_BYTES * 8, file.offset - position))
                    end = block.rfind(b"\n") + 1 or len(block)
                    handle.seek(position + end)
                    text = block[:end].lower()
                    for needle in needles:
                        hit = text.find(needle)
                        while hit >= 0:
                            line = bisect.bisect_right(offsets, position + hit) - 1
                            _, start, length = entries[ids[line]] if line >= 0 else (None, 0, 0)
                            if position + hit < start + length:  # not in a skipped (malformed) line
                                found.add(ids[line])
                            next_line = text.find(b"\n", hit)  # one hit per line is enough
                            hit = text.find(needle, next_line + 1) if next_line >= 0 else -1
                    position += end
        return SearchResult(sorted(found), complete=True)
