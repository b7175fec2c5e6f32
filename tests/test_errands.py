"""The errands test set (evaluation-only arithmetic written apart from the training generator): it loads as a
built-in dataset, has the promised kinds, the real calculator agrees with every answer, the shipped file is
seed 0, and its phrasings share little with the training questions."""

from __future__ import annotations

import json
import re
from collections import Counter
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from mcp_rl.datasets import available_datasets, builtin_dataset_dir, errands, is_eval_only
from tool_servers.calculator import evaluate

SHIPPED = builtin_dataset_dir("errands")
TRAIN = builtin_dataset_dir("arithmetic") / "train.jsonl"
# The share of the test questions' distinct word 4-grams that also occur in the arithmetic training
# questions: 0.004 (6 of 1511) when the set was written. Generic bits like "how many # does" may
# match; a set copying the training templates would share most of its 4-grams.
MAX_SHARED_4GRAMS = 0.05


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The rows of a JSON lines file."""
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture(scope="module")
def rows() -> list[dict[str, Any]]:
    return read_jsonl(SHIPPED / "test.jsonl")


def four_grams(question: str) -> set[tuple[str, ...]]:
    """Word 4-grams of a question, lowercased, numbers as ``#`` and the generator's names as ``@``."""
    words = [
        "#" if word[0].isdigit() else "@" if word in errands.NAMES else word.lower()
        for word in re.findall(r"\d+(?:\.\d+)?|[A-Za-z]+", question)
    ]
    return {tuple(words[i : i + 4]) for i in range(len(words) - 3)}


def shared_4gram_share(test: list[str], train: list[str]) -> float:
    """The share of the test questions' distinct 4-grams that also occur in the training questions."""
    test_grams = set().union(*map(four_grams, test))
    train_grams = set().union(*map(four_grams, train))
    return len(test_grams & train_grams) / len(test_grams)


def test_loads_as_an_evaluation_only_builtin_dataset(rows: list[dict[str, Any]]) -> None:
    assert "errands" in available_datasets() and is_eval_only("errands")
    assert not (SHIPPED / "train.jsonl").exists()
    assert len(rows) == len(errands.KINDS) * errands.PER_KIND == 200
    assert Counter(r["kind"] for r in rows) == dict.fromkeys(errands.KINDS, errands.PER_KIND)
    assert [r["id"] for r in rows] == [f"errands_{i}" for i in range(len(rows))]
    assert len({r["question"] for r in rows}) == len(rows)
    assert all(r["steps"] == (2 if r["kind"] == "two_step" else 1) for r in rows)
    # Kinds are mixed through the file, so a --limit 50 run sees them all.
    assert {r["kind"] for r in rows[:50]} == set(errands.KINDS)
    # A third ask first (14 of each kind's 40); told-first problems open with a person, a place or a time.
    asks_first = sum(r["question"].split()[0] in {"How", "What", "Over", "After", "Reading"} for r in rows)
    assert asks_first == len(range(0, errands.PER_KIND, errands.QUESTION_FIRST_EVERY)) * len(errands.KINDS)


def test_the_calculator_agrees_with_every_answer(rows: list[dict[str, Any]]) -> None:
    for r in rows:
        value = evaluate(r["expression"])
        gold = r["golden_answers"][0]
        assert isinstance(value, Fraction) and value == Fraction(gold) and value > 0, r
        # Whole numbers bare, amounts of money with at most two decimals and no trailing zero.
        assert re.fullmatch(r"\d+|\d+\.\d?[1-9]", gold), r
        # A division always comes out whole or in cents.
        assert value.denominator in (1, 2, 4, 5, 10, 20, 25, 50, 100), r
        assert re.fullmatch(r"[\d.+\-*/() ]+", r["expression"]), r


def test_shipped_file_is_seed_0(tmp_path: Path) -> None:
    # If this fails, the generator changed: regenerate with
    # `python -m mcp_rl.datasets.errands --seed 0 --out src/mcp_rl/datasets/errands`.
    errands.main(["--seed", "0", "--out", str(tmp_path)], out=lambda _: None)
    assert (tmp_path / "test.jsonl").read_bytes() == (SHIPPED / "test.jsonl").read_bytes()
    errands.write(tmp_path / "other", seed=1)
    assert (tmp_path / "other" / "test.jsonl").read_bytes() != (SHIPPED / "test.jsonl").read_bytes()


def test_phrasings_are_not_the_training_generators(rows: list[dict[str, Any]]) -> None:
    train = [r["question"] for r in read_jsonl(TRAIN)]
    share = shared_4gram_share([r["question"] for r in rows], train)
    assert share < MAX_SHARED_4GRAMS, share
