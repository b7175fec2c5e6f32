"""How a tool's result is compared with what was expected, for rewards declared in YAML (``tool_verify``).

Each operator takes the tool's result (its text and, when the server sent one, its structured content)
and the expected value (text filled in from the row, the answer or a reference call) and says whether
they agree:

==========  ==========================================================================================
equals      the same after answer normalisation (case, punctuation, articles), or the same number
number      both parse as numbers (the first number in each text) within ``tolerance`` (absolute)
contains    the expected text, normalised, appears in the result, normalised
json_path   the value at ``path`` (``a.b[0].c``) of the result's JSON equals the expected value
rows        the same multiset of rows: a query result (JSON rows, or Python's repr of them as
            mcp-server-sqlite writes) against another one, or a single
            value or a comma-separated list against a one-column result
==========  ==========================================================================================
"""

from __future__ import annotations

import ast
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Mapping
from fractions import Fraction
from typing import Any

from mcp_rl.rewards.answers import normalize_answer

_NUMBER = re.compile(r"[-+]?(?:\d+(?:,\d{3})*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?(?:/\d+)?")
_PATH_PART = re.compile(r"([^.\[\]]+)|\[(\d+)\]")


def first_number(text: str) -> float | None:
    """The first number written in ``text`` (``1,234.5``, ``-3e2``, ``1/3``), or None."""
    match = _NUMBER.search(text)
    if match is None:
        return None
    written = match.group(0).replace(",", "")
    try:
        return float(Fraction(written)) if "/" in written else float(written)
    except (ValueError, ZeroDivisionError):
        return None


def _parse_json(text: str, structured: Any = None) -> Any:
    if structured is not None:
        # MCP wraps a bare return value as {"result": value}: the value is what a recipe author means.
        if isinstance(structured, Mapping) and set(structured) == {"result"}:
            return structured["result"]
        return structured
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _same_scalar(actual: Any, expected: Any, tolerance: float = 1e-9) -> bool:
    left, right = str(actual).strip(), str(expected).strip()
    if normalize_answer(left) == normalize_answer(right) and normalize_answer(left):
        return True
    a, b = first_number(left), first_number(right)
    only_numbers = a is not None and b is not None and _is_number(left) and _is_number(right)
    return only_numbers and math.isclose(a, b, rel_tol=0.0, abs_tol=tolerance)  # type: ignore[arg-type]


def _is_number(text: str) -> bool:
    match = _NUMBER.fullmatch(text.strip().rstrip("."))
    return match is not None


def equals(actual: str, expected: str, *, structured: Any = None, **_: Any) -> bool:
    return _same_scalar(actual, expected)


def number(actual: str, expected: str, *, tolerance: float = 1e-6, **_: Any) -> bool:
    a, b = first_number(actual), first_number(expected)
    return a is not None and b is not None and math.isclose(a, b, rel_tol=0.0, abs_tol=tolerance)


def contains(actual: str, expected: str, **_: Any) -> bool:
    needle = normalize_answer(expected)
    return bool(needle) and needle in normalize_answer(actual)


def value_at(document: Any, path: str) -> Any:
    """``document`` followed along ``a.b[0].c`` (a leading ``$.`` is allowed); KeyError when absent."""
    node = document
    for key, index in _PATH_PART.findall(path.removeprefix("$").lstrip(".")):
        if index:
            if not isinstance(node, list) or int(index) >= len(node):
                raise KeyError(path)
            node = node[int(index)]
        elif isinstance(node, Mapping) and key in node:
            node = node[key]
        else:
            raise KeyError(path)
    return node


def json_path(actual: str, expected: str, *, structured: Any = None, path: str = "", **_: Any) -> bool:
    document = _parse_json(actual, structured)
    try:
        found = value_at(document, path)
    except KeyError:
        return False
    if isinstance(found, Mapping | list):
        return _parse_json(expected) == found
    return _same_scalar(found, expected)


def _rows(value: Any) -> Counter[tuple[str, ...]] | None:
    """A result as a multiset of rows of normalised cells; None when it is not tabular."""
    if isinstance(value, Mapping) and set(value) == {"result"}:
        value = value["result"]
    if isinstance(value, str):
        parsed = _parse_json(value)
        if parsed is None and value.lstrip().startswith("["):
            # mcp-server-sqlite (PyPI) writes its rows as Python's str(list of dicts), not as JSON.
            try:
                parsed = ast.literal_eval(value.strip())
            except (ValueError, SyntaxError, RecursionError, MemoryError):
                parsed = None
        value = parsed if isinstance(parsed, list) else None
    if not isinstance(value, list):
        return None
    rows: Counter[tuple[str, ...]] = Counter()
    for row in value:
        cells = list(row.values()) if isinstance(row, Mapping) else row if isinstance(row, list) else [row]
        rows[tuple(_cell(cell) for cell in cells)] += 1
    return rows


def _cell(value: Any) -> str:
    number_value = first_number(str(value)) if _is_number(str(value)) else None
    if number_value is not None:
        return repr(float(number_value))  # 3, 3.0 and "3" are one value
    return normalize_answer(str(value))


def rows(actual: str, expected: str, *, structured: Any = None, **_: Any) -> bool:
    got = _rows(structured if structured is not None else actual)
    if got is None:
        got = _rows(actual)
    if got is None:
        return False
    want = _rows(expected)
    if want is None:  # a plain answer: one value, or a comma-separated list of values of one column
        values = [part for part in re.split(r",|\n|;| and ", expected) if part.strip()]
        want = Counter((_cell(value),) for value in values)
    return bool(want) and got == want


OPERATORS: dict[str, Callable[..., bool]] = {
    "equals": equals,
    "number": number,
    "contains": contains,
    "json_path": json_path,
    "rows": rows,
}

__all__ = ["OPERATORS", "contains", "equals", "first_number", "json_path", "number", "rows", "value_at"]
