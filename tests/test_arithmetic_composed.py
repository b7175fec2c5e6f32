"""The arithmetic dataset's ``train_composed`` split: ``train_varied`` followed by problems that compose two
operations in every order, each answer what the real calculator server returns, and the shipped file still
the seed-0 output."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import pytest

from mcp_rl.config.recipe import load_recipe
from mcp_rl.datasets import arithmetic, builtin_dataset_dir, write_jsonl
from mcp_rl.datasets.arithmetic.composed import FORMS, STORIES, worked
from mcp_rl.env.data import load_split
from mcp_rl.tools import BlockingToolPool
from tool_servers.calculator import calculate

Rows = dict[str, list[dict[str, object]]]
ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"\d+(?:\.\d+)?")
N_VARIED = 2000


@pytest.fixture(scope="module")
def composed(arithmetic_splits: Rows) -> list[dict[str, object]]:
    return arithmetic_splits["train_composed"][N_VARIED:]


def form(expression: object) -> str:
    """``(12 + 7.50) * 3`` -> ``(a + b) * c``: the numbers named in the order they are written."""
    names = iter("abc")
    return NUMBER.sub(lambda _: next(names), str(expression))


def test_composed_split_is_the_varied_split_then_composed_rows(
    arithmetic_splits: Rows, composed: list[dict]
) -> None:
    assert "train_composed" in arithmetic.SPLITS and set(arithmetic_splits) == set(arithmetic.SPLITS)
    assert arithmetic_splits["train_composed"][:N_VARIED] == arithmetic_splits["train_varied"]
    assert len(composed) == 600
    for i, row in enumerate(composed):
        assert list(row) == ["id", "question", "golden_answers", "expression", "kind", "steps"]
        assert (row["id"], row["kind"], row["steps"]) == (f"composed_{i}", "composed", 2)


def test_shipped_file_is_the_seed_0_output(arithmetic_splits: Rows, tmp_path: Path) -> None:
    # If this fails, the generator changed: regenerate with
    # `python -m mcp_rl.datasets.arithmetic --seed 0 --out src/mcp_rl/datasets/arithmetic`.
    write_jsonl(tmp_path / "train_composed.jsonl", arithmetic_splits["train_composed"])
    shipped = builtin_dataset_dir("arithmetic") / "train_composed.jsonl"
    assert shipped.read_bytes() == (tmp_path / "train_composed.jsonl").read_bytes()


def assert_calculator_returns_the_golden_answers(rows: list[dict], calculator: BlockingToolPool) -> None:
    results = calculator.call_many([("calculate", {"expression": row["expression"]}) for row in rows])
    for row, result in zip(rows, results, strict=True):
        assert result.ok and [result.text] == row["golden_answers"], (row, result.text)


def test_golden_answer_is_what_the_calculator_server_returns(
    composed: list[dict], calculator_pool: BlockingToolPool
) -> None:
    assert_calculator_returns_the_golden_answers(composed, calculator_pool)


def test_questions_state_exactly_the_numbers_of_their_expression(composed: list[dict]) -> None:
    for row in composed:
        expression = str(row["expression"])
        assert re.fullmatch(r"[\d.+\-*/() ]+", expression), expression
        assert sorted(NUMBER.findall(str(row["question"]))) == sorted(NUMBER.findall(expression)), row


def test_every_form_is_equally_common_and_told_by_all_its_stories(composed: list[dict]) -> None:
    counts = Counter(form(row["expression"]) for row in composed)
    assert set(counts) == set(FORMS) == set(STORIES)
    assert max(counts.values()) - min(counts.values()) <= 1
    # Every ordered pair of operations, each done first once with the other done on its result.
    assert {(first, then) for first, then, _ in FORMS.values()} == {(x, y) for x in "+-*/" for y in "+-*/"}
    told: dict[str, set[int]] = defaultdict(set)
    for row in composed:
        pattern = form(row["expression"])
        for i, story in enumerate(STORIES[pattern]):
            template = re.sub(r"\\\{[^}]*\\\}", ".+?", re.escape(story.text))
            if re.fullmatch(template, str(row["question"])):
                told[pattern].add(i)
        assert told[pattern], row
    for pattern, stories in STORIES.items():
        assert len(stories) >= 3 and told[pattern] == set(range(len(stories))), pattern
    # The stories open in many ways, some with the question.
    openings = {" ".join(NUMBER.sub("#", str(row["question"])).split()[:2]) for row in composed}
    assert len(openings) > 40 and sum(str(r["question"]).startswith("How ") for r in composed) > 60


def test_parentheses_are_only_those_the_meaning_needs(composed: list[dict]) -> None:
    for pattern in FORMS:
        row = next(r for r in composed if form(r["expression"]) == pattern)
        expression = str(row["expression"])
        if "(" in expression:
            assert calculate(expression.replace("(", "").replace(")", "")) != calculate(expression), row


def test_every_value_along_the_way_is_positive_and_short(composed: list[dict]) -> None:
    for row in composed:
        operands = [Fraction(n) for n in NUMBER.findall(str(row["expression"]))]
        assert all(n > 0 and (n * 100).denominator == 1 for n in operands), row
        value = worked(form(row["expression"]), *operands)  # None: the first result or the answer is not
        assert value is not None and arithmetic.format_value(value) == row["golden_answers"][0], row
    assert any("." in str(row["expression"]) for row in composed)  # money with cents appears


def test_composed_questions_are_new(arithmetic_splits: Rows, composed: list[dict]) -> None:
    questions = [row["question"] for row in composed]
    assert len(set(questions)) == len(questions)
    others = {
        row["question"] for split in ("train", "test", "train_varied") for row in arithmetic_splits[split]
    }
    assert not others & set(questions)


def test_composed_count_is_a_parameter_and_seeds_differ() -> None:
    small = arithmetic.generate(seed=0, n_train=20, n_test=5, n_composed=2 * len(FORMS))
    extra = small["train_composed"][20:]
    assert len(extra) == 2 * len(FORMS) and Counter(form(r["expression"]) for r in extra) == dict.fromkeys(
        FORMS, 2
    )
    other = arithmetic.generate(seed=1, n_train=20, n_test=5, n_composed=2 * len(FORMS))
    assert [r["question"] for r in other["train_composed"][20:]] != [r["question"] for r in extra]


def test_recipe_setting_loads_the_composed_split(arithmetic_splits: Rows) -> None:
    recipe = load_recipe("calculator", ["data.train_split=train_composed"], check_trainer=False)
    loaded = load_split(recipe, "train")
    assert loaded["id"] == [r["id"] for r in arithmetic_splits["train_composed"]]
    assert loaded["expression"][-600:] == [
        r["expression"] for r in arithmetic_splits["train_composed"][-600:]
    ]
