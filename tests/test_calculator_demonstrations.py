"""The demonstrations of one operation per call measured for the calculator (docs/measurements/calc-steps): a
two-operation problem is two calls whose chain the real calculator server confirms, every other problem the
reference expression in one call. The measurement's finding rests on the demonstrations being right."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest

from mcp_rl.rewards.registry import import_object
from mcp_rl.tools import BlockingToolPool

MEASUREMENT = Path(__file__).resolve().parents[1] / "docs" / "measurements" / "calc-steps"
OPERATOR = re.compile(r"(?<=[\d)\s])[-+*/]")
Script = Callable[[dict], "list[str] | None"]


@pytest.fixture(scope="module")
def one_operation_per_call() -> Script:
    return import_object("one_operation_per_call.py:one_operation_per_call", base_dir=MEASUREMENT)


def call_of(turn: str) -> str:
    match = re.fullmatch(r"<calc> (.+) </calc>", turn)
    assert match, turn
    return match.group(1)


def test_two_operation_problems_are_two_calls_the_real_calculator_chains(
    one_operation_per_call: Script, arithmetic_splits: dict, calculator_pool: BlockingToolPool
) -> None:
    rows = arithmetic_splits["train"] + arithmetic_splits["train_broad"]
    scripts = [one_operation_per_call(row) for row in rows]
    two_calls = [(row, script) for row, script in zip(rows, scripts, strict=True) if len(script) == 3]
    two_operation_rows = [row for row in rows if len(OPERATOR.findall(str(row["expression"]))) == 2]
    # Split unless the intermediate value has no short decimal (a third of a crate).
    assert len(two_operation_rows) / 2 < len(two_calls) <= len(two_operation_rows)
    firsts = calculator_pool.call_many([("calculate", {"expression": call_of(s[0])}) for _, s in two_calls])
    seconds = calculator_pool.call_many([("calculate", {"expression": call_of(s[1])}) for _, s in two_calls])
    for (row, script), first, second in zip(two_calls, firsts, seconds, strict=True):
        assert all(len(OPERATOR.findall(call_of(turn))) == 1 for turn in script[:2]), script
        # The second call works on the first call's result as the calculator wrote it, and ends at the answer.
        operands = {part.strip() for part in re.split(r" [-+*/] ", call_of(script[1]))}
        assert first.ok and first.text in operands, script
        assert second.ok and [second.text] == row["golden_answers"], (row, script, second.text)
        assert script[2:] == [f"<answer> {row['golden_answers'][0]} </answer>"]


def test_other_problems_are_the_reference_expression_in_one_call(one_operation_per_call: Script) -> None:
    for expression in ["48 * 37", "14 * 2.5 + 9 * 4.25", "(10 / 3) * 6", "100 - 7 - 3 - 2"]:
        row = {"expression": expression, "golden_answers": ["1"]}
        assert one_operation_per_call(row) == [f"<calc> {expression} </calc>", "<answer> 1 </answer>"]
    assert one_operation_per_call({"expression": "1 + 2", "golden_answers": []}) is None


def test_the_inner_operation_goes_first_on_either_side(one_operation_per_call: Script) -> None:
    left = one_operation_per_call({"expression": "(138 - 33) / 7", "golden_answers": ["15"]})
    right = one_operation_per_call({"expression": "200 - 3 * 12.5", "golden_answers": ["162.5"]})
    assert [call_of(turn) for turn in left[:2]] == ["138 - 33", "105 / 7"]
    assert [call_of(turn) for turn in right[:2]] == ["3 * 12.5", "200 - 37.5"]
