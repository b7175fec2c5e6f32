"""Arithmetic word problems for the calculator recipe, generated deterministically from a seed.

Each problem names its quantities with units (crates, km/h, dollars, percent) and multi-digit numbers, and
comes with the **reference expression** the calculator tool accepts (``48 * 37``): the recipe's reward
sends that expression to the same calculator and compares its value with the model's answer, so the
golden value is never computed twice in two ways. Kinds: one operation (``add``, ``subtract``,
``multiply``, ``divide``, ``rate``), and two operations (``percent``, ``two_items``, ``share``,
``convert``), which a model may do in one expression or in two calls. Every division comes out exact and
every value is an integer or a short decimal, so the answer is one unambiguous number.

Files: ``train.jsonl`` / ``test.jsonl``, one row a line: ``{"id", "question", "golden_answers": [value],
"expression", "kind", "steps"}``. ``train_varied.jsonl`` holds the same training problems (ids, numbers,
expressions, answers), each phrased anew (:mod:`.phrasings`): every kind has one template in ``train`` and
``test``, so a model trained on them can learn the template instead of the arithmetic; the varied split
tells each problem in other settings, sentence orders and verbs, which the test split never uses (a recipe
picks it with ``data.train_split: train_varied``). ``train_composed.jsonl`` is ``train_varied`` followed by
problems of kind ``composed`` (:mod:`.composed`): two operations over three numbers in every ordered pair of
``+ - * /`` (``(a - b) / c``, ``a / b + c``, ...), which the kinds above never compose, so a model trained on
them alone fails those (``data.train_split: train_composed``). ``train_broad.jsonl`` is ``train_composed``
followed by a broad curriculum (:mod:`.curriculum`): the semantic categories of one- and two-step word
problems (join, separate, part-whole, compare, equal groups, sharing, rates, prices, ...), each told by
several templates, so the operation has to be read from meaning (``data.train_split: train_broad``).
Seed 0 with the default sizes is the copy shipped next to this file.

Command line: ``python -m mcp_rl.datasets.arithmetic --seed 1 --out DIR`` (another seed: new numbers and
items, the same kinds of problem).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

from mcp_rl.datasets import write_jsonl
from mcp_rl.datasets.arithmetic.composed import composed_problems
from mcp_rl.datasets.arithmetic.curriculum import broad_problems
from mcp_rl.datasets.arithmetic.phrasings import vary_training_phrasings

SPLITS = ("train", "train_varied", "train_composed", "train_broad", "test")

# (container, plural, item) for the counting problems; (item, lowest and highest price in cents) for shops.
_CONTAINERS = [
    ("crate", "crates", "bottles"), ("box", "boxes", "pencils"), ("carton", "cartons", "eggs"),
    ("shelf", "shelves", "books"), ("bag", "bags", "apples"), ("tray", "trays", "cups"),
    ("pallet", "pallets", "bricks"), ("bus", "buses", "passengers"), ("row", "rows", "seats"),
    ("pack", "packs", "cards"),
]  # fmt: skip
_GOODS = [
    ("pens", 90, 450), ("notebooks", 150, 900), ("mugs", 300, 1500), ("lamps", 1200, 6000),
    ("chairs", 2500, 9000), ("tickets", 500, 4000), ("loaves", 180, 650), ("shirts", 900, 3500),
]  # fmt: skip
_LIQUIDS = [("tank", "litres of water"), ("barrel", "litres of oil"), ("pool", "litres of water")]
# (vehicle, lowest and highest speed in km/h)
_VEHICLES = [("train", 60, 180), ("cyclist", 12, 32), ("ship", 18, 45), ("car", 40, 120), ("bus", 30, 90)]
# question, reference expression, its exact value, operations a careful solver does one at a time
Problem = tuple[str, str, Fraction, int]


def _money(cents: int) -> str:
    """Cents as a price in dollars the way a word problem writes it: 3.40, 12, 0.95."""
    return str(cents // 100) if cents % 100 == 0 else f"{cents // 100}.{cents % 100:02d}"


def format_value(value: Fraction) -> str:
    """An exact value as the calculator prints it: an integer or a terminating decimal, no trailing 0s."""
    if value.denominator == 1:
        return str(value.numerator)
    text = format(Decimal(value.numerator) / Decimal(value.denominator), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def _add(rng: random.Random) -> Problem:
    thing, unit = rng.choice(_LIQUIDS)
    a, b = rng.randint(120, 9500), rng.randint(35, 4800)
    return (
        f"A {thing} holds {a} {unit}. Another {b} {unit} are poured in. "
        f"How many {unit.split(' of ')[0]} does it hold now?",
        f"{a} + {b}",
        Fraction(a + b),
        1,
    )


def _subtract(rng: random.Random) -> Problem:
    thing, unit = rng.choice(_LIQUIDS)
    a = rng.randint(800, 9900)
    b = rng.randint(45, a - 20)
    return (
        f"A {thing} holds {a} {unit}. Then {b} {unit} are drained. "
        f"How many {unit.split(' of ')[0]} are left?",
        f"{a} - {b}",
        Fraction(a - b),
        1,
    )


def _multiply(rng: random.Random) -> Problem:
    container, containers, items = rng.choice(_CONTAINERS)
    a, b = rng.randint(12, 96), rng.randint(14, 250)
    return (
        f"One {container} holds {a} {items}. How many {items} are in {b} such {containers}?",
        f"{a} * {b}",
        Fraction(a * b),
        1,
    )


def _divide(rng: random.Random) -> Problem:
    container, containers, items = rng.choice(_CONTAINERS)
    per, n = rng.randint(12, 64), rng.randint(15, 180)
    total = per * n
    return (
        f"There are {total} {items}, packed {per} to a {container}. How many {containers} are filled?",
        f"{total} / {per}",
        Fraction(n),
        1,
    )


def _rate(rng: random.Random) -> Problem:
    vehicle, low, high = rng.choice(_VEHICLES)
    speed, tenths = rng.randint(low, high), rng.choice([15, 25, 35, 45, 55, 65, 75, 12, 24, 36, 18, 42])
    hours = f"{tenths // 10}.{tenths % 10}"  # 1.5, 2.5, 1.2 ... hours
    return (
        f"A {vehicle} travels at {speed} km/h for {hours} hours. How many km does it cover?",
        f"{speed} * {hours}",
        speed * Fraction(hours),
        1,
    )


def _percent(rng: random.Random) -> Problem:
    item, low, high = rng.choice(_GOODS)
    price = rng.randint(low // 100 + 8, high // 100 + 40)
    off = rng.choice([10, 15, 20, 25, 30, 35, 40, 45, 50, 60, 5, 12])
    return (
        f"A shop sells {item} at {price} dollars each. During a sale everything is {off}% off. "
        f"What does one cost in the sale, in dollars?",
        f"{price} * (100 - {off}) / 100",
        Fraction(price * (100 - off), 100),
        2,
    )


def _two_items(rng: random.Random) -> Problem:
    (first, lo1, hi1), (second, lo2, hi2) = rng.sample(_GOODS, 2)
    a, b = rng.randint(11, 240), rng.randint(11, 240)
    p, q = _money(rng.randint(lo1, hi1)), _money(rng.randint(lo2, hi2))
    return (
        f"A shop sold {a} {first} at {p} dollars each and {b} {second} at {q} dollars each. "
        f"How many dollars did it take in?",
        f"{a} * {p} + {b} * {q}",
        a * Fraction(p) + b * Fraction(q),
        2,
    )


def _share(rng: random.Random) -> Problem:
    _, containers, items = rng.choice(_CONTAINERS)
    per, n = rng.randint(12, 72), rng.randint(11, 95)
    groups = rng.choice([d for d in range(3, 13) if (per * n) % d == 0] or [1])
    return (
        f"A depot has {n} {containers} of {per} {items} each. The {items} are shared equally among "
        f"{groups} shops. How many {items} does each shop get?",
        f"{n} * {per} / {groups}",
        Fraction(n * per, groups),
        2,
    )


def _convert(rng: random.Random) -> Problem:
    per_minute, minutes = rng.randint(120, 480), rng.randint(12, 95)
    return (
        f"A runner covers {per_minute} metres every minute. How many kilometres does the runner cover "
        f"in {minutes} minutes?",
        f"{per_minute} * {minutes} / 1000",
        Fraction(per_minute * minutes, 1000),
        2,
    )


KINDS: dict[str, Callable[[random.Random], Problem]] = {
    "add": _add, "subtract": _subtract, "multiply": _multiply, "divide": _divide, "rate": _rate,
    "percent": _percent, "two_items": _two_items, "share": _share, "convert": _convert,
}  # fmt: skip


def generate(
    seed: int = 0, n_train: int = 2000, n_test: int = 300, n_composed: int = 600, n_broad: int = 1500
) -> dict[str, list[dict[str, object]]]:
    """``{"train": rows, "test": rows, "train_varied": rows, "train_composed": rows, "train_broad": rows}``:
    the kinds in turn, numbers from ``Random(seed)``, no repeats; ``train_varied`` is ``train`` phrased anew,
    ``train_composed`` is ``train_varied`` then ``n_composed`` problems of kind ``composed``, and
    ``train_broad`` is ``train_composed`` then ``n_broad`` curriculum problems, of their category's kind."""
    rng = random.Random(seed)
    names = list(KINDS)
    seen: set[str] = set()
    rows: list[dict[str, object]] = []
    while len(rows) < n_train + n_test:
        kind = names[len(rows) % len(names)]
        question, expression, value, steps = KINDS[kind](rng)
        if question in seen:
            continue
        seen.add(question)
        rows.append(
            {
                "question": question,
                "value": format_value(value),
                "expression": expression,
                "kind": kind,
                "steps": steps,
            }
        )
    rng.shuffle(rows)
    out: dict[str, list[dict[str, object]]] = {}
    for split, part in (("train", rows[:n_train]), ("test", rows[n_train:])):
        out[split] = [
            {
                "id": f"{split}_{i}",
                "question": row["question"],
                "golden_answers": [row["value"]],
                "expression": row["expression"],
                "kind": row["kind"],
                "steps": row["steps"],
            }
            for i, row in enumerate(part)
        ]
    # A generator of its own, so train and test stay as they were before this split existed.
    out["train_varied"] = vary_training_phrasings(random.Random(f"training phrasings {seed}"), out["train"])
    # Its own generator too, and no question of another split, so a model tested on test has not seen it.
    taken = {str(row["question"]) for split in ("train", "test", "train_varied") for row in out[split]}
    composed = composed_problems(random.Random(f"composed problems {seed}"), n_composed, taken)
    out["train_composed"] = out["train_varied"] + _rows(
        "composed", [(question, expression, value, "composed", 2) for question, expression, value in composed]
    )
    # Its own generator as well, so the splits above stay byte for byte what they were.
    taken |= {str(row["question"]) for row in out["train_composed"]}
    broad = broad_problems(random.Random(f"broad problems {seed}"), n_broad, taken)
    out["train_broad"] = out["train_composed"] + _rows("broad", broad)
    return out


def _rows(prefix: str, problems: Sequence[tuple[str, str, Fraction, str, int]]) -> list[dict[str, object]]:
    """Rows of a split's file, ids ``<prefix>_0``, ``<prefix>_1``, ...: (question, expression, value, kind,
    steps) with the value written as the calculator prints it."""
    return [
        {
            "id": f"{prefix}_{i}",
            "question": question,
            "golden_answers": [format_value(value)],
            "expression": expression,
            "kind": kind,
            "steps": steps,
        }
        for i, (question, expression, value, kind, steps) in enumerate(problems)
    ]


def write(out_dir: str | Path, seed: int = 0, **sizes: int) -> Path:
    """Write a ``.jsonl`` per split for ``seed`` into ``out_dir`` (created if needed); ``sizes`` are
    :func:`generate`'s ``n_train``, ``n_test``, ``n_composed`` and ``n_broad``."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for split, rows in generate(seed, **sizes).items():
        write_jsonl(out / f"{split}.jsonl", rows)
    return out


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_rl.datasets.arithmetic", description="Generate arithmetic word problems."
    )
    parser.add_argument("--seed", type=int, default=0, help="Random seed (0 is the shipped copy).")
    parser.add_argument("--out", required=True, help="Output folder for the .jsonl file of each split.")
    parser.add_argument("--n-train", type=int, default=2000)
    parser.add_argument("--n-test", type=int, default=300)
    parser.add_argument("--n-composed", type=int, default=600, help="Composed problems after train_varied.")
    parser.add_argument("--n-broad", type=int, default=1500, help="Curriculum problems after train_composed.")
    args = parser.parse_args(argv)
    sizes = {
        "n_train": args.n_train,
        "n_test": args.n_test,
        "n_composed": args.n_composed,
        "n_broad": args.n_broad,
    }
    path = write(args.out, args.seed, **sizes)
    out(
        f"wrote {args.n_train} train (and as many varied), {args.n_test} test and "
        f"{args.n_train + args.n_composed} train_composed and "
        f"{args.n_train + args.n_composed + args.n_broad} train_broad problems to {path}"
    )
