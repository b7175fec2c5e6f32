"""Demonstrations of one operation per call for the calculator's warm start (``warm_start.demonstrations``),
measured in docs/grpo-protocol.md ("One operation per call"); recipes/calculator.yaml does not use them.

``one_operation_per_call``: a problem of two operations is worked in two calls, the inner operation first and
then the outer one on its result, instead of one expression with parentheses (``(138 - 33) / 7`` becomes
``138 - 33``, then ``105 / 7``). Every other problem is one call with the reference expression. The tools
answer for real, so the recipe's ``min_reward`` still drops a demonstration the calculator does not confirm.

The row's expression is our dataset's, read with :mod:`ast` (parsed, never evaluated as code); the
intermediate value is worked out exactly with :class:`~fractions.Fraction`, and a problem whose intermediate
value has no short decimal stays one call.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from decimal import Decimal
from fractions import Fraction
from typing import Any

# The generator's own operator table applies them, so both work out a value alike.
from mcp_rl.datasets.arithmetic.composed import APPLY

_SYMBOLS: dict[type[ast.operator], str] = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}
# More places than this reads as a rounding the model would have to copy digit by digit.
MAX_DECIMAL_PLACES = 4


def one_operation_per_call(row: Mapping[str, Any]) -> list[str] | None:
    answers = row.get("golden_answers") or []
    if not answers:
        return None
    calls = _two_calls(row["expression"]) or [row["expression"]]
    return [f"<calc> {call} </calc>" for call in calls] + [f"<answer> {answers[0]} </answer>"]


def _two_calls(expression: str) -> list[str] | None:
    """The inner and the outer operation of a two-operation expression, or None when it is not one."""
    try:
        tree = ast.parse(expression, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(tree, ast.BinOp) or type(tree.op) not in _SYMBOLS:
        return None
    inner_left = isinstance(tree.left, ast.BinOp)
    inner = tree.left if inner_left else tree.right
    other = tree.right if inner_left else tree.left
    if not isinstance(inner, ast.BinOp) or not _is_number(other):
        return None
    if type(inner.op) not in _SYMBOLS or not (_is_number(inner.left) and _is_number(inner.right)):
        return None
    symbol = _SYMBOLS[type(inner.op)]
    try:
        value = APPLY[symbol](_number(inner.left), _number(inner.right))
    except ZeroDivisionError:
        return None
    written = _short_decimal(value)
    if written is None:
        return None
    first = f"{ast.unparse(inner.left)} {symbol} {ast.unparse(inner.right)}"
    outer, operand = _SYMBOLS[type(tree.op)], ast.unparse(other)
    second = f"{written} {outer} {operand}" if inner_left else f"{operand} {outer} {written}"
    return [first, second]


def _is_number(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, int | float) and node.value >= 0


def _number(node: ast.expr) -> Fraction:
    return Fraction(ast.unparse(node))


def _short_decimal(value: Fraction) -> str | None:
    """``value`` as the calculator writes it (``105``, ``3.25``), or None without a short exact decimal."""
    for places in range(MAX_DECIMAL_PLACES + 1):
        scaled = value * 10**places
        if scaled.denominator == 1:
            return str(Decimal(scaled.numerator).scaleb(-places))
    return None
