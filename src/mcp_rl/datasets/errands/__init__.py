"""Everyday-errand word problems for the calculator, for evaluation only.

Written apart from the ``arithmetic`` generator (which the calculator recipe trains on), without looking at
its templates, so that a score here says whether a trained model learnt to turn a word problem into an
expression, not the training set's phrasings. People and their errands (baking, cycling, saving, sowing,
tickets, reading, bus routes...) instead of containers; about a third of the problems ask their question
first; subtraction is told as giving away, spending or using up.

Five kinds, :data:`PER_KIND` each: ``add``, ``subtract``, ``multiply``, ``divide`` and ``two_step`` (two
operations, e.g. buying packs and eating some). Every row of ``test.jsonl`` is
``{"id", "question", "golden_answers", "expression", "kind", "steps"}``: ``expression`` is what a
calculator evaluates to ``golden_answers[0]`` (divisions come out exact; decimals only for money, at most
two places). There is no train split.

Seed 0 is the copy shipped next to this file. Command line:
``python -m mcp_rl.datasets.errands --seed 0 --out src/mcp_rl/datasets/errands``.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from mcp_rl.datasets import write_jsonl

KINDS = ("add", "subtract", "multiply", "divide", "two_step")
PER_KIND = 40
# Every QUESTION_FIRST_EVERY-th problem of a kind puts its question before the facts (14 of 40).
QUESTION_FIRST_EVERY = 3

# (name, subject pronoun, object pronoun, possessive), from several cultures.
PEOPLE: tuple[tuple[str, str, str, str], ...] = tuple(
    (name, *(("she", "her", "her") if gender == "f" else ("he", "him", "his")))
    for name, gender in (
        ("Ana", "f"),
        ("Kofi", "m"),
        ("Priya", "f"),
        ("Mateo", "m"),
        ("Yuki", "f"),
        ("Olu", "m"),
        ("Fatima", "f"),
        ("Dmitri", "m"),
        ("Mei", "f"),
        ("Tomas", "m"),
        ("Amara", "f"),
        ("Lars", "m"),
        ("Aisha", "f"),
        ("Hiroshi", "m"),
        ("Zanele", "f"),
        ("Rahul", "m"),
        ("Ingrid", "f"),
        ("Kwame", "m"),
        ("Leila", "f"),
        ("Santiago", "m"),
        ("Nadia", "f"),
        ("Wei", "m"),
        ("Siobhan", "f"),
        ("Emeka", "m"),
        ("Camila", "f"),
        ("Arjun", "m"),
        ("Freya", "f"),
        ("Omar", "m"),
        ("Thandiwe", "f"),
        ("Bjorn", "m"),
        ("Lucia", "f"),
        ("Tariq", "m"),
    )
)
NAMES = frozenset(person[0] for person in PEOPLE)
RELATIVES = ("brother", "sister", "cousin", "neighbour", "grandmother", "uncle", "best friend", "classmate")
CURRENCIES = ("dollars", "euros", "pounds")

Numbers = dict[str, Fraction]


@dataclass(frozen=True)
class Template:
    """One kind of errand: how its numbers are drawn, its two phrasings, and its expression.

    ``statement`` tells the facts and then asks; ``question_first`` asks and then tells. Both are
    ``str.format`` templates over the numbers (``{a}``...), the person (``{n}`` name, ``{p}``/``{P}``
    pronoun, ``{o}`` object, ``{s}`` possessive, ``{S}`` capitalised), ``{rel}`` a relative and ``{cur}`` a
    currency. ``expression`` is formatted with the numbers alone; ``value`` computes it exactly. Numbers
    named in ``money`` are amounts, written with two decimals when they have cents.
    """

    kind: str
    draw: Callable[[random.Random], Numbers]
    statement: str
    question_first: str
    expression: str
    value: Callable[[Numbers], Fraction]
    money: frozenset[str] = frozenset()


def _n(rng: random.Random, low: int, high: int) -> Fraction:
    """A whole number in [low, high]."""
    return Fraction(rng.randint(low, high))


def _cents(rng: random.Random, low: int, high: int, step: int = 5) -> Fraction:
    """An amount of money between ``low`` and ``high`` units, in steps of ``step`` cents."""
    return Fraction(rng.randrange(low * 100, high * 100 + 1, step), 100)


def _pair(low: int, high: int) -> Callable[[random.Random], Numbers]:
    """Two whole numbers, each in [low, high]."""
    return lambda rng: {"a": _n(rng, low, high), "b": _n(rng, low, high)}


def _less(low: int, high: int) -> Callable[[random.Random], Numbers]:
    """``a`` in [low, high] and a smaller ``b`` (between a tenth and nine tenths of it)."""

    def draw(rng: random.Random) -> Numbers:
        a = rng.randint(low, high)
        return {"a": Fraction(a), "b": Fraction(rng.randint(max(2, a // 10), a * 9 // 10))}

    return draw


def _times(a: tuple[int, int], b: tuple[int, int]) -> Callable[[random.Random], Numbers]:
    """Two whole factors from the two ranges."""
    return lambda rng: {"a": _n(rng, *a), "b": _n(rng, *b)}


def _exact(quotient: tuple[int, int], divisor: tuple[int, int]) -> Callable[[random.Random], Numbers]:
    """``a`` and ``b`` with ``a / b`` a whole number in ``quotient``."""

    def draw(rng: random.Random) -> Numbers:
        b, q = _n(rng, *divisor), _n(rng, *quotient)
        return {"a": b * q, "b": b}

    return draw


def _add(x: Numbers) -> Fraction:
    """``a + b``."""
    return x["a"] + x["b"]


def _sub(x: Numbers) -> Fraction:
    """``a - b``."""
    return x["a"] - x["b"]


def _mul(x: Numbers) -> Fraction:
    """``a * b``."""
    return x["a"] * x["b"]


def _div(x: Numbers) -> Fraction:
    """``a / b``."""
    return x["a"] / x["b"]


def _money_pair(rng: random.Random) -> Numbers:
    """Two amounts in cents."""
    return {"a": _cents(rng, 12, 160), "b": _cents(rng, 8, 95)}


def _money_less(rng: random.Random) -> Numbers:
    """Savings ``a`` and a smaller amount spent."""
    a = _cents(rng, 150, 900, 25)
    return {"a": a, "b": _cents(rng, 20, int(a) - 40)}


def _money_times(rng: random.Random) -> Numbers:
    """A count and a price."""
    return {"a": _n(rng, 12, 48), "b": _cents(rng, 2, 9, 25)}


def _money_share(rng: random.Random) -> Numbers:
    """A bill that ``b`` people can split into whole quarters."""
    b = _n(rng, 3, 12)
    return {"a": b * _cents(rng, 8, 60, 25), "b": b}


def _packs_less(rng: random.Random) -> Numbers:
    """``a`` packs of ``b`` and fewer than all of them ``c`` eaten."""
    a, b = _n(rng, 3, 24), _n(rng, 6, 48)
    return {"a": a, "b": b, "c": _n(rng, 2, int(a * b) - 2)}


def _sum_then_share(rng: random.Random) -> Numbers:
    """``a + b`` a whole multiple of ``c``, split unevenly between ``a`` and ``b``."""
    c = _n(rng, 3, 16)
    while True:
        total = c * _n(rng, 12, 140)
        a = _n(rng, int(total) // 5, int(total) * 4 // 5)
        if 0 < a < total:
            return {"a": a, "b": total - a, "c": c}


def _three(a: tuple[int, int], b: tuple[int, int], c: tuple[int, int]) -> Callable[[random.Random], Numbers]:
    """Three whole numbers from the three ranges."""
    return lambda rng: {"a": _n(rng, *a), "b": _n(rng, *b), "c": _n(rng, *c)}


def _money_after_buying(rng: random.Random) -> Numbers:
    """A purse ``a`` that covers ``b`` items at ``c`` each with some change left."""
    b, c = _n(rng, 3, 12), _cents(rng, 2, 9, 25)
    return {"a": b * c + _cents(rng, 5, 60, 25), "b": b, "c": c}


def _pages_after_days(rng: random.Random) -> Numbers:
    """A book of ``a`` pages longer than ``b`` pages a day for ``c`` days."""
    b, c = _n(rng, 12, 45), _n(rng, 3, 14)
    return {"a": b * c + _n(rng, 10, 400), "b": b, "c": c}


def _less_then_share(rng: random.Random) -> Numbers:
    """``a - b`` a whole multiple of ``c``."""
    c, b = _n(rng, 3, 12), _n(rng, 12, 300)
    return {"a": c * _n(rng, 10, 90) + b, "b": b, "c": c}


def _off_and_on(rng: random.Random) -> Numbers:
    """``a`` on board, ``b`` fewer than that get off, ``c`` get on."""
    a = _n(rng, 15, 90)
    return {"a": a, "b": _n(rng, 2, int(a) - 1), "c": _n(rng, 2, 60)}


TEMPLATES: tuple[Template, ...] = (
    # ------------------------------------------------------------------------------------------- add
    Template(
        "add",
        _pair(120, 2400),
        "{n} cycled {a} km in the spring and {b} km over the summer. How many kilometres did {p} ride in "
        "the two seasons together?",
        "Over spring and summer together, how far did {n} cycle, in km, if {p} covered {a} km in the spring "
        "and {b} km in the summer?",
        "{a} + {b}",
        _add,
    ),
    Template(
        "add",
        _pair(45, 980),
        "Last month {n} got through {a} pages of a long novel, and this month {p} read another {b} pages. "
        "What is the total number of pages {p} has read?",
        "What is the total number of pages {n} has read, counting {a} pages last month and {b} this month?",
        "{a} + {b}",
        _add,
    ),
    Template(
        "add",
        _money_pair,
        "At the market {n} paid {a} {cur} for vegetables, then {b} {cur} at the bakery stall. How much did "
        "{p} spend altogether?",
        "How many {cur} did {n} spend in all, if {p} paid {a} {cur} for vegetables and {b} {cur} for bread?",
        "{a} + {b}",
        _add,
        frozenset("ab"),
    ),
    Template(
        "add",
        _pair(35, 1500),
        "{n} sold {a} raffle tickets on Saturday. On Sunday {p} sold {b} more. How many raffle tickets did "
        "{p} sell over the weekend?",
        "How many raffle tickets did {n} sell altogether, with {a} sold on Saturday and {b} on Sunday?",
        "{a} + {b}",
        _add,
    ),
    Template(
        "add",
        _pair(60, 3200),
        "In {s} allotment {n} sowed {a} carrot seeds in one bed and {b} radish seeds in another. How many "
        "seeds did {p} sow in all?",
        "How many seeds went into the ground when {n} sowed {a} carrot seeds and {b} radish seeds?",
        "{a} + {b}",
        _add,
    ),
    Template(
        "add",
        _pair(80, 1900),
        "On {s} bus route, {n} picked up {a} passengers before noon and {b} passengers after noon. How many "
        "passengers boarded {s} bus that day?",
        "What was the number of passengers who rode with {n} that day, if {a} got on before noon and {b} "
        "after?",
        "{a} + {b}",
        _add,
    ),
    Template(
        "add",
        _pair(1200, 9800),
        "{n} walked {a} steps on the way to work and {b} steps on the way home. What is {s} step count for "
        "the day?",
        "How many steps did {n} take in total, walking {a} to work and {b} back home?",
        "{a} + {b}",
        _add,
    ),
    Template(
        "add",
        _pair(24, 850),
        "For the school fair {n} baked {a} cookies, and {s} {rel} brought {b} more. How many cookies are "
        "there for the fair?",
        "How many cookies does {n} have for the fair once {s} {rel} adds {b} to the {a} {p} baked?",
        "{a} + {b}",
        _add,
    ),
    # -------------------------------------------------------------------------------------- subtract
    Template(
        "subtract",
        _less(60, 2500),
        "{n} has collected {a} stamps and gives {b} of them to {s} {rel}. How many stamps does {p} have "
        "left?",
        "How many stamps does {n} have left if {p} starts with {a} and gives {b} to {s} {rel}?",
        "{a} - {b}",
        _sub,
    ),
    Template(
        "subtract",
        _money_less,
        "{n} had {a} {cur} in {s} savings and spent {b} {cur} on a second-hand bicycle. How much money "
        "does {p} have now?",
        "How much is left of {n}'s {a} {cur} of savings after {p} spends {b} {cur} on a bicycle?",
        "{a} - {b}",
        _sub,
        frozenset("ab"),
    ),
    Template(
        "subtract",
        _less(500, 5000),
        "{n} opened a {a}-gram bag of flour and used {b} grams for bread. How many grams of flour remain "
        "in the bag?",
        "How many grams of flour remain once {n} has used {b} grams from a {a}-gram bag?",
        "{a} - {b}",
        _sub,
    ),
    Template(
        "subtract",
        _less(80, 1600),
        "{n} printed {a} concert tickets and handed out {b} of them at the station. How many tickets does "
        "{p} still hold?",
        "How many concert tickets are still with {n}, who printed {a} of them and handed out {b} at the "
        "station?",
        "{a} - {b}",
        _sub,
    ),
    Template(
        "subtract",
        _less(100, 4000),
        "{n} saved {a} sunflower seeds and sowed {b} of them along the fence. How many seeds does {p} keep "
        "for next year?",
        "How many seeds does {n} keep, after sowing {b} of the {a} sunflower seeds {p} saved?",
        "{a} - {b}",
        _sub,
    ),
    Template(
        "subtract",
        _less(150, 2200),
        "{n} is riding a {a} km charity tour and has already ridden {b} km of it. How many kilometres are "
        "still ahead of {o}?",
        "How many kilometres does {n} still have to ride on a {a} km tour after the first {b} km?",
        "{a} - {b}",
        _sub,
    ),
    Template(
        "subtract",
        _less(90, 1400),
        "{n}'s library book has {a} pages and {p} has finished {b} of them. How many pages has {p} still "
        "to read?",
        "How many pages are still unread if {n} has read {b} pages of a {a}-page book?",
        "{a} - {b}",
        _sub,
    ),
    Template(
        "subtract",
        _less(200, 6000),
        "{n} filled a rain barrel with {a} litres and used {b} litres watering the tomatoes. How much "
        "water, in litres, is left in the barrel?",
        "What amount of water stays in {n}'s barrel if {p} fills it with {a} litres and waters the garden "
        "with {b}?",
        "{a} - {b}",
        _sub,
    ),
    # -------------------------------------------------------------------------------------- multiply
    Template(
        "multiply",
        _times((12, 95), (6, 40)),
        "{n} buys {a} packs of stickers, and every pack holds {b} stickers. How many stickers does {p} get?",
        "How many stickers does {n} end up with after buying {a} packs that hold {b} stickers each?",
        "{a} * {b}",
        _mul,
    ),
    Template(
        "multiply",
        _times((14, 85), (12, 60)),
        "Each day {n} cycles {a} km to the farm and back. What distance does {p} cover in {b} days?",
        "What distance, in km, does {n} cycle in {b} days if {p} rides {a} km every day?",
        "{a} * {b}",
        _mul,
    ),
    Template(
        "multiply",
        _times((15, 240), (8, 52)),
        "{n} puts aside {a} {cur} every week. How many {cur} will {p} have saved after {b} weeks?",
        "After {b} weeks of setting aside {a} {cur} a week, how much has {n} saved?",
        "{a} * {b}",
        _mul,
    ),
    Template(
        "multiply",
        _times((11, 64), (15, 90)),
        "{n} plants {a} rows of beans in the garden with {b} seeds in every row. What is the total number "
        "of bean seeds?",
        "What is the total number of bean seeds if {n} plants {a} rows of {b} seeds each?",
        "{a} * {b}",
        _mul,
    ),
    Template(
        "multiply",
        _money_times,
        "{n} buys {a} bus tickets for the class trip at {b} {cur} apiece. What does {p} pay for all of them?",
        "What is the cost of {a} bus tickets that {n} buys if each one costs {b} {cur}?",
        "{a} * {b}",
        _mul,
        frozenset("b"),
    ),
    Template(
        "multiply",
        _times((12, 75), (12, 48)),
        "{n} bakes {a} trays of muffins for the cafe, with {b} muffins on each tray. How many muffins does "
        "{p} bake?",
        "How many muffins come out of the oven when {n} bakes {a} trays of {b}?",
        "{a} * {b}",
        _mul,
    ),
    Template(
        "multiply",
        _times((15, 80), (12, 90)),
        "{n} reads {a} pages every evening. How many pages will {p} have read after {b} evenings?",
        "Reading {a} pages an evening, how many pages will {n} have read in {b} evenings?",
        "{a} * {b}",
        _mul,
    ),
    Template(
        "multiply",
        _times((11, 48), (18, 75)),
        "{n} drives the school bus on {a} runs, and each run carries {b} pupils. How many pupils does {p} "
        "carry altogether?",
        "How many pupils ride with {n} altogether over {a} bus runs of {b} pupils each?",
        "{a} * {b}",
        _mul,
    ),
    # ---------------------------------------------------------------------------------------- divide
    Template(
        "divide",
        _exact((12, 150), (3, 24)),
        "{n} shares {a} marbles equally among {b} friends. How many marbles does each friend receive?",
        "How many marbles does each friend get when {n} shares {a} marbles equally among {b} friends?",
        "{a} / {b}",
        _div,
    ),
    Template(
        "divide",
        _exact((25, 140), (4, 21)),
        "{n} rode {a} km in {b} stages of equal length. How long was each stage, in km?",
        "How many kilometres long is each stage, if {n} rides {a} km in {b} equal stages?",
        "{a} / {b}",
        _div,
    ),
    Template(
        "divide",
        _money_share,
        "A dinner bill of {a} {cur} is split evenly between {n} and the rest of {s} group, {b} people in "
        "all. How much does each person pay?",
        "What does each of {b} diners pay, if {n} splits a bill of {a} {cur} evenly among them?",
        "{a} / {b}",
        _div,
        frozenset("a"),
    ),
    Template(
        "divide",
        _exact((14, 90), (6, 36)),
        "{n} has {a} tomato seeds and puts {b} into each pot. How many pots can {p} fill?",
        "How many pots can {n} fill with {a} tomato seeds, putting {b} seeds in each?",
        "{a} / {b}",
        _div,
    ),
    Template(
        "divide",
        _exact((12, 65), (5, 30)),
        "{n} wants to finish a {a}-page book in {b} days, reading the same number of pages each day. How "
        "many pages should {p} read per day?",
        "How many pages a day must {n} read to get through {a} pages in {b} days at an even pace?",
        "{a} / {b}",
        _div,
    ),
    Template(
        "divide",
        _exact((15, 120), (6, 24)),
        "{n} baked {a} biscuits and packed them into tins of {b}. How many tins did {p} fill?",
        "How many tins of {b} biscuits can {n} fill with {a} biscuits?",
        "{a} / {b}",
        _div,
    ),
    Template(
        "divide",
        _exact((14, 95), (3, 18)),
        "{n} paid {a} {cur} for {b} theatre tickets that all cost the same. What was the price of one "
        "ticket?",
        "What did one theatre ticket cost, if {n} paid {a} {cur} for {b} of them at one price?",
        "{a} / {b}",
        _div,
    ),
    Template(
        "divide",
        _exact((20, 160), (4, 16)),
        "{n}'s bus covers {a} km a week on {b} identical trips. How many kilometres is one trip?",
        "How long is one trip, in km, when {n}'s bus drives {a} km a week in {b} identical trips?",
        "{a} / {b}",
        _div,
    ),
    # -------------------------------------------------------------------------------------- two_step
    Template(
        "two_step",
        _packs_less,
        "{n} buys {a} packs of {b} biscuits and eats {c} of the biscuits on the way home. How many "
        "biscuits are left?",
        "How many biscuits does {n} have left after buying {a} packs of {b} and eating {c}?",
        "{a} * {b} - {c}",
        lambda x: x["a"] * x["b"] - x["c"],
    ),
    Template(
        "two_step",
        _three((12, 150), (6, 40), (20, 500)),
        "{n} saves {a} {cur} a week for {b} weeks and then gets {c} {cur} from {s} {rel} as a birthday "
        "present. How much does {p} have now?",
        "How many {cur} does {n} have after saving {a} {cur} a week for {b} weeks and being given {c} "
        "{cur} for {s} birthday?",
        "{a} * {b} + {c}",
        lambda x: x["a"] * x["b"] + x["c"],
    ),
    Template(
        "two_step",
        _sum_then_share,
        "{n} picked {a} apples and {s} {rel} picked {b}. They pack all of the apples equally into {c} "
        "crates. How many apples go into each crate?",
        "How many apples go into each of {c} crates, if {n} picked {a}, {s} {rel} picked {b}, and they "
        "are shared out evenly?",
        "({a} + {b}) / {c}",
        lambda x: (x["a"] + x["b"]) / x["c"],
    ),
    Template(
        "two_step",
        _money_after_buying,
        "{n} went out with {a} {cur} and bought {b} notebooks at {c} {cur} each. How much money does {p} "
        "bring home?",
        "How much of {s} {a} {cur} does {n} keep after buying {b} notebooks at {c} {cur} apiece?",
        "{a} - {b} * {c}",
        lambda x: x["a"] - x["b"] * x["c"],
        frozenset("ac"),
    ),
    Template(
        "two_step",
        _pages_after_days,
        "{n}'s book has {a} pages. {P} reads {b} pages a day for {c} days. How many pages are still unread?",
        "How many pages of a {a}-page book remain for {n} after {p} reads {b} pages a day for {c} days?",
        "{a} - {b} * {c}",
        lambda x: x["a"] - x["b"] * x["c"],
    ),
    Template(
        "two_step",
        _less_then_share,
        "{n} had {a} pea seeds, gave {b} to {s} {rel}, and sowed the rest equally in {c} rows. How many "
        "seeds are in each row?",
        "How many seeds go in each row if {n} gives {b} of {s} {a} pea seeds away and sows the rest "
        "evenly in {c} rows?",
        "({a} - {b}) / {c}",
        lambda x: (x["a"] - x["b"]) / x["c"],
    ),
    Template(
        "two_step",
        _three((2, 9), (2, 12), (12, 85)),
        "{n} buys {a} adult tickets and {b} child tickets for the zoo, and every ticket costs {c} {cur}. "
        "What is the total cost?",
        "What does {n} pay in total for {a} adult and {b} child zoo tickets, if each costs {c} {cur}?",
        "({a} + {b}) * {c}",
        lambda x: (x["a"] + x["b"]) * x["c"],
    ),
    Template(
        "two_step",
        _off_and_on,
        "{n}'s bus leaves the depot with {a} passengers. At the first stop {b} of them get off and {c} new "
        "passengers get on. How many passengers are on the bus now?",
        "How many passengers are on {n}'s bus after the first stop, if it left with {a}, {b} got off and "
        "{c} got on?",
        "{a} - {b} + {c}",
        lambda x: x["a"] - x["b"] + x["c"],
    ),
)


def format_number(value: Fraction, money: bool = False) -> str:
    """A number as the problem writes it: whole numbers bare, money with two decimals when not whole."""
    if value.denominator == 1:
        return str(value.numerator)
    if money:
        return f"{Decimal(value.numerator) / Decimal(value.denominator):.2f}"
    return answer_text(value)


def answer_text(value: Fraction) -> str:
    """The exact value as the calculator shows it: ``5261``, ``73.25``, ``12.5`` (no trailing zeros)."""
    if value.denominator == 1:
        return str(value.numerator)
    text = str(Decimal(value.numerator) / Decimal(value.denominator))
    if "." not in text or len(text.partition(".")[2]) > 2:
        raise ValueError(f"{value} is not an amount with at most two decimal places")
    return text.rstrip("0")


def problem(template: Template, rng: random.Random, question_first: bool) -> dict[str, object]:
    """One row from ``template``: a person, numbers, the chosen phrasing, the expression and its value."""
    name, pronoun, objective, possessive = rng.choice(PEOPLE)
    numbers = template.draw(rng)
    shown = {key: format_number(value, key in template.money) for key, value in numbers.items()}
    fields = shown | {
        "n": name,
        "p": pronoun,
        "P": pronoun.capitalize(),
        "o": objective,
        "s": possessive,
        "S": possessive.capitalize(),
        "rel": rng.choice(RELATIVES),
        "cur": rng.choice(CURRENCIES),
    }
    text = template.question_first if question_first else template.statement
    value = template.value(numbers)
    if value <= 0:
        raise ValueError(f"non-positive answer {value} from {template.expression} with {shown}")
    return {
        "question": text.format(**fields),
        "golden_answers": [answer_text(value)],
        "expression": template.expression.format(**shown),
        "kind": template.kind,
        "steps": 2 if template.kind == "two_step" else 1,
    }


def generate(seed: int = 0, per_kind: int = PER_KIND) -> list[dict[str, object]]:
    """``per_kind`` problems of each kind, templates taken in turn, shuffled, with ids ``errands_N``."""
    rng = random.Random(seed)
    rows: list[dict[str, object]] = []
    seen: set[str] = set()
    for kind in KINDS:
        templates = [t for t in TEMPLATES if t.kind == kind]
        for i in range(per_kind):
            template = templates[i % len(templates)]
            while True:
                row = problem(template, rng, question_first=i % QUESTION_FIRST_EVERY == 0)
                if row["question"] not in seen:
                    break
            seen.add(str(row["question"]))
            rows.append(row)
    rng.shuffle(rows)
    return [{"id": f"errands_{i}"} | row for i, row in enumerate(rows)]


def write(out: Path, seed: int = 0, per_kind: int = PER_KIND) -> Path:
    """Write ``out/test.jsonl`` (byte-identical for the same seed) and return its path."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / "test.jsonl"
    write_jsonl(path, generate(seed, per_kind))
    return path


def main(argv: Sequence[str] | None = None, out: Callable[[str], object] = print) -> None:
    """``python -m mcp_rl.datasets.errands --seed 0 --out DIR``."""
    parser = argparse.ArgumentParser(
        prog="python -m mcp_rl.datasets.errands", description="Write the errands arithmetic test set."
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    parser.add_argument("--per-kind", type=int, default=PER_KIND)
    args = parser.parse_args(argv)
    path = write(args.out, args.seed, args.per_kind)
    out(f"wrote {args.per_kind * len(KINDS)} problems to {path}")
