"""Answer normalisation and scores (SQuAD / Search-R1), and where a batch keeps its golden answers."""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_rl.env.golden_answers import ANSWER_COLUMNS, golden_list

# Dataset columns that may hold the golden answers, in the order they are looked for: the shared names (ours
# first), then Search-R1's parquet column (`reward_model: {ground_truth: {target: [...]}}`) and its inner key.
GOLD_COLUMNS = (*ANSWER_COLUMNS, "reward_model", "ground_truth")

ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation, as Search-R1 scores EM: lowercase, drop punctuation and articles, one space."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(ARTICLES.sub(" ", text).split())


def exact_match_score(prediction: str | None, golds: Any) -> float:
    """1.0 if the normalised prediction equals any normalised golden answer, else 0.0."""
    if prediction is None:
        return 0.0
    predicted = normalize_answer(prediction)
    # An answer that normalises to nothing ("the", ".") must not match a gold that also does.
    return float(bool(predicted) and any(predicted == normalize_answer(g) for g in golden_list(golds)))


def _token_f1(predicted: list[str], gold: list[str]) -> float:
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str | None, golds: Any) -> float:
    """SQuAD token F1 between the normalised prediction and the best-matching golden answer."""
    if prediction is None:
        return 0.0
    predicted = normalize_answer(prediction).split()
    return max((_token_f1(predicted, normalize_answer(g).split()) for g in golden_list(golds)), default=0.0)


def golds_column(
    golden_answers: Sequence[Any] | None, columns: Mapping[str, Any], n: int, *, required: bool = True
) -> list[Any]:
    """The per-sample golden answers of a batch: ``golden_answers`` or the first other gold column present."""
    column = golden_answers
    if column is None:
        column = next((columns[name] for name in GOLD_COLUMNS if columns.get(name) is not None), None)
    if column is None:
        if required:
            raise ValueError(
                f"this reward needs golden answers in a dataset column, one of {GOLD_COLUMNS}; "
                "set data.answer_column to the column that holds them"
            )
        return [None] * n
    if len(column) != n:
        raise ValueError(f"got {len(column)} golden answers for {n} samples")
    return list(column)


def row_golds(row: Mapping[str, Any]) -> list[str]:
    """The golden answers of one sample's dataset row (see :func:`mcp_rl.rewards.samples.sample_rows`)."""
    return golden_list(next((row[name] for name in GOLD_COLUMNS if row.get(name) is not None), None))


__all__ = [
    "GOLD_COLUMNS",
    "exact_match_score",
    "f1_score",
    "golden_list",
    "golds_column",
    "normalize_answer",
    "row_golds",
]
