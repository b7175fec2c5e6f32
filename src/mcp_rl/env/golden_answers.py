"""Golden answers in any shape → a list of strings, and the column names that hold them.

Shared by the dataset loaders (:mod:`mcp_rl.env.data`) and the rewards (:mod:`mcp_rl.rewards`), so both
accept the
same columns and shapes. Standard library only: loading a dataset must not import the rewards' HTTP and MCP
clients.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Columns that hold a row's golden answers: FlashRAG's name first, then the names of common QA sets (nq_open,
# TriviaQA exports).
ANSWER_COLUMNS = ("golden_answers", "answers", "answer")
# Keys of a golden-answer dict that hold the answers themselves: Search-R1 nests them twice, as
# `reward_model: {ground_truth: {target: [...]}}`.
ANSWER_KEYS = ("target", "ground_truth", *ANSWER_COLUMNS)


def golden_list(golds: Any) -> list[str]:
    """Golden answers in any shape a dataset gives them → a flat list of strings (None entries dropped).

    Accepts a string, a list/tuple/set (nested ones are flattened), a numpy array (parquet columns load as
    arrays), a number, or a dict such as Search-R1's ``{"target": [...]}`` or its whole ``reward_model`` cell
    ``{"ground_truth": {...}}``.
    """
    if golds is None:
        return []
    if isinstance(golds, str):
        return [golds]
    if isinstance(golds, bytes):
        return [golds.decode()]
    if isinstance(golds, Mapping):
        for key in ANSWER_KEYS:
            if key in golds:
                return golden_list(golds[key])
        raise ValueError(
            f"golden answers given as a dict need one of the keys {ANSWER_KEYS}; got {sorted(golds)}"
        )
    if hasattr(golds, "tolist"):  # numpy arrays and scalars → Python lists and values
        golds = golds.tolist()
        if isinstance(golds, str):
            return [golds]
    if isinstance(golds, list | tuple | set):
        return [answer for item in golds for answer in golden_list(item)]
    return [str(golds)]


__all__ = ["ANSWER_COLUMNS", "ANSWER_KEYS", "golden_list"]
