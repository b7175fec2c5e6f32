"""The arithmetic dataset's ``train_broad`` split: ``train_composed`` followed by a curriculum of word
problems over the semantic categories of one- and two-step arithmetic, each answer what the real calculator
server returns, each category told by several templates, and the shipped file still the seed-0 output."""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from fractions import Fraction
from pathlib import Path

import pytest

# The composed split's helpers, so both splits read an expression's numbers and form alike.
from test_arithmetic_composed import (
    NUMBER,
    Rows,
    assert_calculator_returns_the_golden_answers,
    form,
)

from mcp_rl.config.recipe import load_recipe
from mcp_rl.datasets import arithmetic, builtin_dataset_dir
from mcp_rl.datasets.arithmetic.curriculum import CATEGORIES, value_of
from mcp_rl.env.data import load_split
from mcp_rl.tools import BlockingToolPool

N_COMPOSED = 2000 + 600  # train_composed at the default sizes
N_BROAD = 1500


@pytest.fixture(scope="module")
def broad(arithmetic_splits: Rows) -> list[dict[str, object]]:
    """The curriculum rows, after the ``train_composed`` rows that open the split."""
    return arithmetic_splits["train_broad"][N_COMPOSED:]


def test_broad_split_is_the_composed_split_then_curriculum_rows(
    arithmetic_splits: Rows, broad: list[dict]
) -> None:
    assert "train_broad" in arithmetic.SPLITS and set(arithmetic_splits) == set(arithmetic.SPLITS)
    assert arithmetic_splits["train_broad"][:N_COMPOSED] == arithmetic_splits["train_composed"]
    assert len(broad) == N_BROAD
    for i, row in enumerate(broad):
        assert list(row) == ["id", "question", "golden_answers", "expression", "kind", "steps"]
        pattern = CATEGORIES[str(row["kind"])].pattern
        assert row["id"] == f"broad_{i}" and form(row["expression"]) == pattern, row
        assert row["steps"] == len(set(pattern) & set("abc")) - 1 and row["steps"] in (1, 2), row


def test_shipped_files_are_what_write_makes_for_seed_0(tmp_path: Path) -> None:
    # If this fails, the generator changed: regenerate with
    # `python -m mcp_rl.datasets.arithmetic --seed 0 --out src/mcp_rl/datasets/arithmetic`.
    arithmetic.write(tmp_path, seed=0)
    for split in arithmetic.SPLITS:  # the older splits too: adding train_broad left them as they were
        shipped = builtin_dataset_dir("arithmetic") / f"{split}.jsonl"
        assert shipped.read_bytes() == (tmp_path / f"{split}.jsonl").read_bytes(), split


def test_golden_answer_is_what_the_calculator_server_returns(
    broad: list[dict], calculator_pool: BlockingToolPool
) -> None:
    assert_calculator_returns_the_golden_answers(broad, calculator_pool)


def test_questions_state_the_expressions_numbers_and_every_value_is_short(broad: list[dict]) -> None:
    for row in broad:
        expression = str(row["expression"])
        numbers = NUMBER.findall(expression)
        assert re.fullmatch(r"[\d.+\-*/() ]+", expression), expression
        assert sorted(NUMBER.findall(str(row["question"]))) == sorted(numbers), row
        operands = tuple(Fraction(n) for n in numbers)
        assert all(n > 0 and (n * 100).denominator == 1 for n in operands), row
        value = value_of(form(row["expression"]), operands)  # None: a value on the way is not short
        assert value is not None and arithmetic.format_value(value) == row["golden_answers"][0], row
    assert any("." in str(row["expression"]) for row in broad)  # money with cents, or half hours


def test_broad_questions_are_new(arithmetic_splits: Rows, broad: list[dict]) -> None:
    questions = [row["question"] for row in broad]
    assert len(set(questions)) == len(questions)
    others = {
        row["question"]
        for split in ("train", "test", "train_varied", "train_composed")
        for row in arithmetic_splits[split]
    }
    assert not others & set(questions)


def test_templates_name_each_operand_once_and_state_no_other_number() -> None:
    for kind, category in CATEGORIES.items():
        operands = sorted(set(category.pattern) & set("abc"))
        for template in category.templates:
            fields = [f for _, f, _, _ in string.Formatter().parse(template.text) if f in ("a", "b", "c")]
            assert sorted(fields) == operands, (kind, template.text)
            words = " ".join([template.text, *template.verbs, *(" ".join(s) for s in template.settings)])
            assert not re.search(r"\d", re.sub(r"\{[^}]*\}", "", words)), (kind, template.text)
            assert set(template.money) <= set(operands), (kind, template.text)


def test_every_category_appears_evenly_and_is_told_by_all_its_templates(broad: list[dict]) -> None:
    counts = Counter(str(row["kind"]) for row in broad)
    assert set(counts) == set(CATEGORIES)
    assert max(counts.values()) - min(counts.values()) <= 1
    # One- and two-step categories, and all four operations among the one-step ones.
    assert {len(set(c.pattern) & set("abc")) for c in CATEGORIES.values()} == {2, 3}
    assert {c.pattern for c in CATEGORIES.values() if "c" not in c.pattern} == {
        "a + b", "a - b", "a * b", "a / b"
    }  # fmt: skip
    told: dict[str, set[int]] = defaultdict(set)
    for row in broad:
        kind = str(row["kind"])
        for i, template in enumerate(CATEGORIES[kind].templates):
            pattern = re.sub(r"\\\{[^}]*\\\}", ".+?", re.escape(template.text))
            if re.fullmatch(pattern, str(row["question"])):
                told[kind].add(i)
        assert told[kind], row
    for kind, category in CATEGORIES.items():
        assert len(category.templates) >= 3 and told[kind] == set(range(len(category.templates))), kind


def test_surface_cues_do_not_give_the_operation_away(broad: list[dict]) -> None:
    def operation(row: dict) -> str:
        return str(CATEGORIES[str(row["kind"])].pattern)

    def some(op: str, cue: str) -> bool:
        return any(operation(r) == op and re.search(cue, str(r["question"])) for r in broad)

    # A word that usually signals one operation appears in problems that need another.
    assert some("a + b", r"\beach\b") and some("a + b", r"\bleft\b") and some("a + b", r"\bfewer\b")
    assert some("a - b", r"\baltogether\b|\bin all\b") and some("a - b", r"\bmore than\b")
    assert some("a / b", r"\baltogether\b") and some("a / b", r"\btimes\b")
    # Some questions come first, and the numbers are not always told in expression order.
    assert sum(str(r["question"]).startswith("How ") for r in broad) > len(broad) // 10
    reordered = [
        r for r in broad if NUMBER.findall(str(r["question"])) != NUMBER.findall(str(r["expression"]))
    ]
    assert len(reordered) > len(broad) // 10
    # Many people, with both pronouns.
    assert any(re.search(r"\bshe\b", str(r["question"])) for r in broad)
    assert any(re.search(r"\bhe\b", str(r["question"])) for r in broad)


def test_broad_count_is_a_parameter_and_other_splits_do_not_change() -> None:
    n = 2 * len(CATEGORIES)
    small = arithmetic.generate(seed=0, n_train=20, n_test=5, n_composed=6, n_broad=n)
    extra = small["train_broad"][26:]
    assert len(extra) == n and Counter(r["kind"] for r in extra) == dict.fromkeys(CATEGORIES, 2)
    without = arithmetic.generate(seed=0, n_train=20, n_test=5, n_composed=6, n_broad=0)
    assert all(
        without[split] == small[split] for split in ("train", "test", "train_varied", "train_composed")
    )
    other = arithmetic.generate(seed=1, n_train=20, n_test=5, n_composed=6, n_broad=n)
    assert [r["question"] for r in other["train_broad"][26:]] != [r["question"] for r in extra]


def test_recipe_setting_loads_the_broad_split(arithmetic_splits: Rows) -> None:
    recipe = load_recipe("calculator", ["data.train_split=train_broad"], check_trainer=False)
    loaded = load_split(recipe, "train")
    assert loaded["id"] == [r["id"] for r in arithmetic_splits["train_broad"]]
    assert loaded["expression"][-N_BROAD:] == [
        r["expression"] for r in arithmetic_splits["train_broad"][-N_BROAD:]
    ]
