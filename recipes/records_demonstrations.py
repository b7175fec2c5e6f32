"""Demonstration episodes for the records recipe's warm start (``warm_start.demonstrations``).

Every row: its reference statement, then ``done``. For half of the rows whose statement finds its row by
a member's name (``WHERE member = 'Orla Venmark'``), a mistake comes first: the same statement with the name
written as the sampled failures write it (the invented first name dropped, a letter lost), which changes no
row; the tools answer ``affected_rows: 0``, and the reference statement follows. The mistake has weight 0,
so it is read but never learned: what is taught is the retry after a statement that found nothing.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Mapping
from typing import Any

RETRY_ONE_IN = 2  # of the rows that find a member by name, one in this many is demonstrated with a retry
_WHERE_NAME = re.compile(r"\bWHERE\s+\w+\s*=\s*'([^' ]+ [^']+)'")  # a quoted value of two or more words


def misspelled(value: str, draw: int) -> str:
    """``value`` as a sampled failure writes it: a name without its first word, or a letter lost."""
    words = value.split()
    if draw % 2 == 0:
        return " ".join(words[1:])
    word = words[-1]
    cut = 1 + draw % max(1, len(word) - 2)  # never the first letter, so the value still reads as itself
    return " ".join([*words[:-1], word[:cut] + word[cut + 1 :]])


def statement_with_retries(row: Mapping[str, Any]) -> list[Any]:
    statement = row["reference_sql"]
    turns: list[Any] = [f"<sql> {statement} </sql>", "<answer> done </answer>"]
    draw = zlib.crc32(row["question"].encode())
    where = _WHERE_NAME.search(statement)
    if where is None or draw % RETRY_ONE_IN:
        return turns
    wrong = misspelled(where.group(1), draw // RETRY_ONE_IN)
    mistake = statement[: where.start(1)] + wrong + statement[where.end(1) :]
    return [{"content": f"<sql> {mistake} </sql>", "weight": 0}, *turns]
