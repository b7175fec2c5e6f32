"""Demonstration episodes for the search recipes' warm start (``warm_start.demonstrations``).

A row's turns, in the search_r1 parser's format: search with the question as written; for a two-hop
question, search again for the bridge entity the first passage names; answer with the first golden answer.
The tools answer for real, so a demonstration whose searches miss scores low and is dropped by
``warm_start.min_reward``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def search_then_answer(row: Mapping[str, Any]) -> list[str] | None:
    answers = row.get("golden_answers") or []
    if not answers:
        return None
    turns = [f"<search> {row['question']} </search>"]
    bridge = (row.get("metadata") or {}).get("bridge")
    if row.get("hops", 1) >= 2:
        if not bridge:
            return None
        turns.append(f"<search> {bridge} </search>")
    turns.append(f"<answer> {answers[0]} </answer>")
    return turns
