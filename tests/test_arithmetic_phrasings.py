"""The arithmetic dataset's ``train_varied`` split: the training problems phrased anew, numbers and reference
expressions unchanged, and the shipped files still the seed-0 output."""

from __future__ import annotations

import random
import re
from collections import defaultdict
from pathlib import Path

import pytest

from mcp_rl.config.recipe import load_recipe
from mcp_rl.datasets import arithmetic, builtin_dataset_dir
from mcp_rl.datasets.arithmetic.phrasings import PHRASINGS, SHAPES, operands
from mcp_rl.env.data import load_split
from tool_servers.calculator import calculate

Rows = dict[str, list[dict[str, object]]]
NUMBER = re.compile(r"\d+(?:\.\d+)?")
# Numbers an expression uses that no question states: the unit sizes of percentages and kilometres.
CONSTANTS = {"percent": ["100", "100"], "convert": ["1000"]}


@pytest.fixture(scope="module")
def rows(arithmetic_splits: Rows) -> Rows:
    return arithmetic_splits


def _by_kind(rows: list[dict[str, object]]) -> dict[str, list[dict[str, object]]]:
    kinds: dict[str, list[dict[str, object]]] = defaultdict(list)
    for row in rows:
        kinds[str(row["kind"])].append(row)
    return kinds


def test_varied_split_is_the_training_problems_with_other_questions(rows: Rows) -> None:
    assert set(rows) == set(arithmetic.SPLITS)
    # Everything but the question is the same, field for field and in the same key order.
    unphrased = [[(k, v) for k, v in r.items() if k != "question"] for r in rows["train"]]
    assert unphrased == [[(k, v) for k, v in r.items() if k != "question"] for r in rows["train_varied"]]


def test_shipped_files_are_the_seed_0_output(tmp_path: Path) -> None:
    # If this fails, the generator changed: regenerate with
    # `python -m mcp_rl.datasets.arithmetic --seed 0 --out src/mcp_rl/datasets/arithmetic`.
    arithmetic.write(tmp_path, seed=0)
    for split in arithmetic.SPLITS:
        shipped = builtin_dataset_dir("arithmetic") / f"{split}.jsonl"
        assert shipped.read_bytes() == (tmp_path / f"{split}.jsonl").read_bytes(), split


def test_most_training_questions_of_every_kind_get_a_phrasing_the_template_never_uses(rows: Rows) -> None:
    def shape(question: object) -> str:
        return NUMBER.sub("#", str(question))

    templates = defaultdict(set)
    for row in rows["train"] + rows["test"]:
        templates[row["kind"]].add(shape(row["question"]))
    varied = _by_kind(rows["train_varied"])
    assert set(varied) == set(arithmetic.KINDS) == set(PHRASINGS) == set(SHAPES)
    for kind, mine in varied.items():
        assert len(PHRASINGS[kind]) >= 4, kind
        new = [str(r["question"]) for r in mine if shape(r["question"]) not in templates[kind]]
        assert len(new) > 0.6 * len(mine), kind
        # Phrasings that differ in more than a noun: the questions open in several ways.
        assert len({" ".join(NUMBER.sub("#", q).split()[:3]) for q in new}) >= 4, kind


def test_varied_questions_state_exactly_the_numbers_of_their_expression(rows: Rows) -> None:
    for row in rows["train"] + rows["test"] + rows["train_varied"]:
        kind, expression = str(row["kind"]), str(row["expression"])
        named = operands(kind, expression)
        assert SHAPES[kind].format(**named) == expression
        used = sorted(NUMBER.findall(expression))
        for constant in CONSTANTS.get(kind, []):
            used.remove(constant)
        assert sorted(NUMBER.findall(str(row["question"]))) == used == sorted(named.values()), row


def test_golden_answer_is_the_calculators_value_of_the_expression(rows: Rows) -> None:
    for row in random.Random(0).sample(rows["train_varied"], 200):
        answers = row["golden_answers"]
        assert isinstance(answers, list) and calculate(str(row["expression"])) == answers[0], row


def test_recipe_setting_loads_the_varied_split(rows: Rows) -> None:
    recipe = load_recipe("calculator", ["data.train_split=train_varied"], check_trainer=False)
    loaded = load_split(recipe, "train", limit=50)
    assert loaded["id"] == [r["id"] for r in rows["train_varied"][:50]]
    assert loaded["question"] == [r["question"] for r in rows["train_varied"][:50]]
