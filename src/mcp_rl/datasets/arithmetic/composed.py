"""Word problems whose arithmetic is a composition of two operations, for the ``train_composed`` split.

The generator's own two-operation kinds are four fixed formulas (a discount, two items, a share, a unit
conversion), so a model trained on them learns those formulas and still fails a problem that needs, say,
``(a - b) / c``. GRPO only learns what its training problems contain: here every ordered pair of the four
operations appears (see :data:`FORMS`), each form with the bracketing its story implies and the minimal
parentheses that meaning needs, told by several stories in everyday settings and sentence orders, so the
composition has to be read from what the text means, not from a template.

Numbers are drawn per form so that every division is exact and every value along the way is a positive
integer or a price with cents (:func:`composed_problems` checks each one), and a story states each number of
its expression exactly as the expression writes it.
"""

from __future__ import annotations

import operator
import random
from collections.abc import Callable, Collection
from dataclasses import dataclass
from fractions import Fraction

# (operation done first, operation done with its result, whether that result is the right-hand operand):
# every ordered pair left to right, and two where the first result is what gets subtracted or divided by.
_SHAPES = [(first, then, False) for first in "+-*/" for then in "+-*/"] + [("*", "-", True), ("+", "/", True)]
_PRECEDENCE = {"+": 1, "-": 1, "*": 2, "/": 2}
APPLY: dict[str, Callable[[Fraction, Fraction], Fraction]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
}  # fmt: skip
_NAMES = (
    "Amara", "Bruno", "Chloe", "Dmitri", "Esther", "Farid", "Grace", "Hiro", "Ingrid", "Jamal", "Keiko",
    "Luis", "Mei", "Nadia", "Oscar", "Paloma", "Quentin", "Rosa", "Samir", "Tamsin", "Umar", "Vera",
    "Wen", "Yusuf", "Zara",
)  # fmt: skip
_CURRENCIES = ("dollars", "euros", "pounds")
# question, reference expression, its exact value
Problem = tuple[str, str, Fraction]


def _pattern(first: str, then: str, right: bool) -> str:
    """The expression over ``a``, ``b``, ``c`` with only the parentheses its order of operations needs."""
    inner = f"b {first} c" if right else f"a {first} b"
    # a - b - c reads left to right; a - (b - c) and a / (b * c) need their group
    same = _PRECEDENCE[first] == _PRECEDENCE[then]
    needs = _PRECEDENCE[first] < _PRECEDENCE[then] or (right and same and then in "-/")
    inner = f"({inner})" if needs else inner
    return f"a {then} {inner}" if right else f"{inner} {then} c"


FORMS = {_pattern(*shape): shape for shape in _SHAPES}


def _split(rng: random.Random, total: int) -> tuple[int, int]:
    """Two multi-digit parts of ``total``, neither tiny, so a sum divides exactly."""
    a = rng.randint(total // 4, total - total // 4)
    return a, total - a


def _draw_mul_div(rng: random.Random) -> tuple[int, int, int]:
    """A divisor of the product, drawn after it: a product of two primes above 12 has none, so draw again."""
    while True:
        a, b = rng.randint(12, 95), rng.randint(11, 95)
        divisors = [d for d in range(3, 13) if a * b % d == 0]
        if divisors:
            return a, b, rng.choice(divisors)


def _draw_add_div(rng: random.Random) -> tuple[int, int, int]:
    c = rng.randint(3, 24)
    return (*_split(rng, c * rng.randint(15, 150)), c)


def _draw_sub_div(rng: random.Random) -> tuple[int, int, int]:
    c, b = rng.randint(3, 24), rng.randint(15, 600)
    return b + c * rng.randint(12, 150), b, c


def _draw_div_sub(rng: random.Random) -> tuple[int, int, int]:
    b, q = rng.randint(3, 24), rng.randint(30, 250)
    return b * q, b, rng.randint(12, q - 5)


def _draw_div_div(rng: random.Random) -> tuple[int, int, int]:
    b, c = rng.randint(3, 12), rng.randint(3, 12)
    return b * c * rng.randint(12, 95), b, c


def _draw_sub_mul_right(rng: random.Random) -> tuple[int, int, int]:
    b, c = rng.randint(3, 48), rng.randint(12, 95)
    return b * c + rng.randint(15, 900), b, c


def _draw_div_add_right(rng: random.Random) -> tuple[int, int, int]:
    b, c = rng.randint(3, 30), rng.randint(3, 30)
    return (b + c) * rng.randint(12, 95), b, c


def _draws() -> dict[str, Callable[[random.Random], tuple[int, int, int]]]:
    """Integer operands per form, sized so the story reads naturally and the form's result stays positive
    and exact; each ``lambda`` draws its numbers in the order written."""
    r = random.Random.randint
    return {
        "a + b + c": lambda g: (r(g, 15, 960), r(g, 15, 960), r(g, 15, 960)),
        "a + b - c": lambda g: (a := r(g, 15, 960), b := r(g, 15, 960), r(g, 12, a + b - 10)),
        "(a + b) * c": lambda g: (r(g, 12, 95), r(g, 12, 95), r(g, 3, 36)),
        "(a + b) / c": _draw_add_div,
        "a - b + c": lambda g: (a := r(g, 150, 960), r(g, 15, a - 20), r(g, 15, 960)),
        "a - b - c": lambda g: (a := r(g, 300, 2500), b := r(g, 15, a // 2), r(g, 15, a - b - 10)),
        "(a - b) * c": lambda g: (a := r(g, 40, 250), r(g, 12, a - 10), r(g, 3, 36)),
        "(a - b) / c": _draw_sub_div,
        "a * b + c": lambda g: (r(g, 3, 48), r(g, 12, 95), r(g, 15, 600)),
        "a * b - c": lambda g: (a := r(g, 3, 48), b := r(g, 12, 95), r(g, 12, a * b - 5)),
        "a * b * c": lambda g: (r(g, 3, 24), r(g, 3, 30), r(g, 12, 95)),
        "a * b / c": _draw_mul_div,
        "a / b + c": lambda g: (r(g, 12, 150) * (b := r(g, 3, 24)), b, r(g, 15, 600)),
        "a / b - c": _draw_div_sub,
        "a / b * c": lambda g: (r(g, 12, 95) * (b := r(g, 3, 24)), b, r(g, 3, 36)),
        "a / b / c": _draw_div_div,
        "a - b * c": _draw_sub_mul_right,
        "a / (b + c)": _draw_div_add_right,
    }


DRAWS = _draws()


@dataclass(frozen=True)
class Story:
    """A ``str.format`` template over ``{a}``, ``{b}``, ``{c}``, ``{name}`` (a person), ``{cur}`` (a
    currency) and ``{s}`` (one of ``settings``). The operands named in ``money`` are amounts of money and
    may carry cents; every other number counts or measures something whole."""

    text: str
    money: str = ""
    settings: tuple[tuple[str, ...], ...] = ((),)


S = Story
STORIES: dict[str, tuple[Story, ...]] = {
    "a + b + c": (
        S("{name} saved {a} {cur} in March, {b} {cur} in April and {c} {cur} in May. How many {cur} did "
          "{name} save over the three months?", "abc"),
        S("How many kilometres did {name} cover on a three-day {s[0]} trip whose days were {a} km, {b} km "
          "and {c} km long?", "", (("driving",), ("motorbike",), ("coach",))),
        S("A school library received {a} books from one charity, {b} from a second and {c} from a parents' "
          "group. In all, how many books arrived?"),
        S("Three classes collected {a}, {b} and {c} kg of {s[0]} for a food bank. What was the total weight, "
          "in kg?", "", (("rice",), ("pasta",), ("tinned beans",))),
    ),
    "a + b - c": (
        S("{name} had {a} {cur} in a wallet, got {b} {cur} as a birthday present and then spent {c} {cur} on "
          "{s[0]}. How many {cur} are left?",
          "abc", (("a concert ticket",), ("new trainers",), ("a board game",))),
        S("A garden centre opened with {a} {s[0]}, took a delivery of {b} more and sold {c} during the day. "
          "How many {s[0]} are there at closing time?",
          "", (("seedlings",), ("potted herbs",), ("rose bushes",))),
        S("How many passengers are on a train that left with {a} aboard, picked up {b} at the next station "
          "and let {c} off at the one after?"),
    ),
    "(a + b) * c": (
        S("A hotel charges {a} {cur} a night for a room and {b} {cur} a night for breakfast. What does "
          "{name} pay, in {cur}, for {c} nights with breakfast?", "ab"),
        S("Each of the {c} tables at a wedding gets {a} roses and {b} lilies. How many flowers have to be "
          "ordered?"),
        S("How many pages does {name} read in {c} weeks, reading {a} pages on weekdays and {b} pages at the "
          "weekend every week?"),
        S("A workshop builds {c} bookcases, each put together with {a} screws and {b} nails. How many "
          "fasteners does it use?"),
    ),
    "(a + b) / c": (
        S("{name} and a friend put {a} {cur} and {b} {cur} into a pot, which is split evenly among {c} "
          "charities. How many {cur} does each charity receive?", "ab"),
        S("A baker makes {a} white rolls and {b} brown rolls and packs all of them in bags of {c}. How many "
          "bags are filled?"),
        S("How many {cur} does each of {c} friends pay if a meal of {a} {cur} and a taxi of {b} {cur} are "
          "shared equally?", "ab"),
        S("Two fields yield {a} kg and {b} kg of {s[0]}, which is sorted into {c} crates of equal weight. "
          "How many kg go in each crate?", "", (("potatoes",), ("apples",), ("onions",))),
    ),
    "a - b + c": (
        S("{name} had {a} {cur} in the bank, paid a bill of {b} {cur} and then received {c} {cur} in wages. "
          "How many {cur} are in the account now?", "abc"),
        S("A car park held {a} cars at noon. Within the next hour {b} drove out and {c} drove in. How many "
          "cars are parked there now?"),
        S("How many {s[0]} does a farm have now, if it had {a}, sold {b} at market and then bought {c} young "
          "ones?", "", (("sheep",), ("chickens",), ("goats",))),
    ),
    "a - b - c": (
        S("{name} earned {a} {cur} this month. Rent took {b} {cur} and food took {c} {cur}. How many {cur} "
          "remain?", "abc"),
        S("A roll of {s[0]} is {a} cm long. A tailor cuts off {b} cm for one order and {c} cm for another. "
          "How many cm are left on the roll?", "", (("linen",), ("ribbon",), ("lace",))),
        S("How many seats are still free in a concert hall of {a} seats when {b} have been booked online and "
          "{c} at the box office?"),
        S("From a tank of {a} litres, a farmer pumps {b} litres to the cattle trough and {c} litres to the "
          "greenhouse. How many litres stay in the tank?"),
    ),
    "(a - b) * c": (
        S("A guest house charges {a} {cur} a night, and club members get {b} {cur} off every night. How "
          "many {cur} does {name}, a member, pay for {c} nights?", "ab"),
        S("Each box should hold {a} {s[0]}, but a faulty machine leaves {b} out of every box. How many "
          "{s[0]} are in {c} boxes?", "", (("screws",), ("tea bags",), ("crayons",))),
        S("How many minutes does {name} practise the piano over {c} days if the daily session of {a} minutes "
          "is cut short by {b} minutes?"),
        S("A ferry has {a} seats, and on each of its {c} crossings today {b} seats stayed empty. How many "
          "passengers did it carry in all?"),
    ),
    "(a - b) / c": (
        S("{name} has {a} {cur}, keeps {b} {cur} aside for emergencies and spends the rest evenly over {c} "
          "weeks. How many {cur} is that a week?", "ab"),
        S("A print shop has {a} sheets, sets {b} aside for covers and binds the rest into {c} booklets of "
          "equal size. How many sheets go in each booklet?"),
        S("A quiz team scored {a} points. {b} of them were bonus points, and its {c} members scored the rest "
          "in equal shares. How many points did each member score?"),
        S("Of the {a} grams of flour in a sack, {name} uses {b} grams for bread and divides what is left "
          "equally among {c} jars. How many grams go in each jar?"),
    ),
    "a * b + c": (
        S("{name} orders {a} {s[0]} at {b} {cur} each, plus a delivery charge of {c} {cur}. What is the "
          "total, in {cur}?", "bc", (("garden chairs",), ("lamps",), ("school bags",))),
        S("How many eggs does a farm have, if it filled {a} trays of {b} eggs and has {c} more in a basket?"),
        S("A climbing club had {c} members. This year {a} schools each sent it {b} new members. How many "
          "members does it have now?"),
        S("{name} runs {a} laps of a loop {b} metres long in the park and then jogs {c} metres home. How "
          "many metres is that altogether?"),
    ),
    "a * b - c": (
        S("{name} buys {a} {s[0]} at {b} {cur} each and hands over a voucher worth {c} {cur}. How many {cur} "
          "are left to pay?", "bc", (("picture frames",), ("cushions",), ("plant pots",))),
        S("A lorry delivered {a} pallets of {b} bricks, but {c} bricks were broken on the way. How many "
          "whole bricks arrived?"),
        S("How many seats are empty in a theatre with {a} rows of {b} seats when {c} tickets have been "
          "sold?"),
        S("A teacher started the term with {a} packs of {b} cards, and the class has lost {c} cards since. "
          "How many cards are still there?"),
    ),
    "a * b * c": (
        S("A school has {a} classes of {b} pupils, and every pupil needs {c} sheets of paper for the exams. "
          "How many sheets is that?"),
        S("How many {cur} does a guest house take from {a} rooms let for {b} nights at {c} {cur} a night?",
          "c"),
        S("A gardener sows {a} trays, each with {b} rows of {c} seeds. How many seeds are sown?"),
        S("{name} swims {c} lengths in every session, with {b} sessions in each of {a} months. How many "
          "lengths is that in all?"),
    ),
    "a * b / c": (
        S("{a} pupils each bring {b} {s[0]} for a class project, and the {s[0]} are shared equally among {c} "
          "groups. How many {s[0]} does each group get?",
          "", (("corks",), ("bottle tops",), ("pine cones",))),
        S("Over the summer a band plays {a} hours of concerts at {b} {cur} an hour and shares the fees "
          "equally among its {c} members. How many {cur} does each member get?", "b"),
        S("How many minutes does each of {c} volunteers work, if a charity needs {a} shifts of {b} minutes "
          "covered and the work is split evenly?"),
    ),
    "a / b + c": (
        S("{name} shares {a} {cur} equally among {b} grandchildren. One of them already had {c} {cur} saved. "
          "How many {cur} does that grandchild have now?", "ac"),
        S("A relay of {a} metres is split into {b} equal legs, and the last runner also jogs {c} metres to "
          "cool down. How many metres does the last runner cover?"),
        S("How many {s[0]} are on each shelf after {a} new {s[0]} are spread evenly over {b} shelves that "
          "each already held {c}?", "", (("books",), ("jars",), ("tins",))),
    ),
    "a / b - c": (
        S("A prize of {a} {cur} is divided equally among {b} team members, and each pays a {c} {cur} entry "
          "fee out of the share. How many {cur} does each member keep?", "ac"),
        S("A {a} km rally is run in {b} equal stages. On the first stage, a driver has done {c} km so far. "
          "How many km of that stage are left?"),
        S("How many apples are in each crate, if {a} apples were packed equally into {b} crates and then {c} "
          "apples were taken out of every crate?"),
    ),
    "a / b * c": (
        S("{b} {s[0]} cost {a} {cur} together. At the same price each, what do {c} {s[0]} cost, in {cur}?",
          "a", (("concert tickets",), ("garden chairs",), ("rugby shirts",))),
        S("A bottling machine fills {a} bottles in {b} minutes. At the same pace, how many bottles does it "
          "fill in {c} minutes?"),
        S("{name} walked {a} metres in {b} minutes. Keeping that pace, how many metres will {name} walk in "
          "{c} minutes?"),
    ),
    "a / b / c": (
        S("A charity splits {a} {cur} equally among {b} towns, and each town splits its share equally among "
          "{c} schools. How many {cur} does each school get?", "a"),
        S("How many {s[0]} go in each bag, if {a} {s[0]} are shared equally among {b} classes and each class "
          "packs its share into {c} equal bags?", "", (("sweets",), ("marbles",), ("stickers",))),
        S("A plot of {a} square metres is divided into {b} equal gardens, and each garden into {c} equal "
          "beds. How many square metres is one bed?"),
    ),
    "a - b * c": (
        S("{name} has {a} {cur} and buys {b} {s[0]} at {c} {cur} each. How many {cur} are left?",
          "ac", (("train tickets",), ("paintbrushes",), ("flower bulbs",))),
        S("A reel holds {a} metres of {s[0]}. A worker cuts {b} pieces of {c} metres each from it. How many "
          "metres remain on the reel?", "", (("cable",), ("wire",), ("hose",))),
        S("An office printer had {a} sheets of paper. After it printed {b} reports of {c} pages each, how "
          "many sheets are left?"),
        S("How many more kg can a van take if it is allowed {a} kg and already carries {b} sacks of {c} kg?"),
    ),
    "a / (b + c)": (
        S("{a} {s[0]} are shared equally among {b} boys and {c} girls. How many {s[0]} does each child get?",
          "", (("stickers",), ("crayons",), ("sweets",))),
        S("{name} pays {a} {cur} for a museum trip for {b} adults and {c} children, every ticket at the same "
          "price. How many {cur} is one ticket?", "a"),
        S("How many km does each rider cover if a {a} km charity ride is split equally among {b} riders from "
          "one club and {c} from another?"),
    ),
}  # fmt: skip


def money_text(value: Fraction) -> str:
    """An operand as both the story and the expression write it: 48, or a price with cents, 12.05."""
    whole, cents = divmod(value * 100, 100)
    return str(int(whole)) if cents == 0 else f"{int(whole)}.{int(cents):02d}"


def short(value: Fraction) -> bool:
    """Positive with at most two decimals: a value a word problem can state and the calculator prints
    exactly, with no rounding to argue about."""
    return value > 0 and (value * 100).denominator == 1


def worked(pattern: str, a: Fraction, b: Fraction, c: Fraction) -> Fraction | None:
    """The value of ``pattern`` over the operands, or None when it or the value found first is not a positive
    integer or short decimal: the check every composed problem passes."""
    first, then, right = FORMS[pattern]
    inner = APPLY[first](b, c) if right else APPLY[first](a, b)
    value = APPLY[then](a, inner) if right else APPLY[then](inner, c)
    return value if short(inner) and short(value) else None


def with_cents(
    rng: random.Random,
    plain: tuple[Fraction, ...],
    money: str,
    valid: Callable[[tuple[Fraction, ...]], bool],
    tries: int,
) -> tuple[Fraction, ...]:
    """In half the stories with money, cents on the operands named in ``money`` (of ``a``, ``b``, ``c``):
    drawn again up to ``tries`` times until the problem stays ``valid``, else the ``plain`` amounts stand."""
    if money and rng.random() < 0.5:
        for _ in range(tries):
            priced = tuple(
                n + Fraction(rng.randint(1, 99), 100) if name in money else n
                for name, n in zip("abc", plain, strict=False)
            )
            if valid(priced):
                return priced
    return plain


def composed_problems(rng: random.Random, n: int, taken: Collection[str] = ()) -> list[Problem]:
    """``n`` problems, the forms in turn, each told by one of its stories; no question repeats or is one of
    ``taken`` (the other splits' questions)."""
    patterns = list(FORMS)
    seen = set(taken)
    problems: list[Problem] = []
    while len(problems) < n:
        pattern = patterns[len(problems) % len(patterns)]
        story = rng.choice(STORIES[pattern])
        plain = tuple(Fraction(n) for n in DRAWS[pattern](rng))
        a, b, c = with_cents(
            rng, plain, story.money, lambda ops, p=pattern: worked(p, *ops) is not None, tries=30
        )
        value = worked(pattern, a, b, c)
        assert value is not None, (pattern, a, b, c)  # the draws guarantee it
        texts = {"a": money_text(a), "b": money_text(b), "c": money_text(c)}
        question = story.text.format(
            **texts, name=rng.choice(_NAMES), cur=rng.choice(_CURRENCIES), s=rng.choice(story.settings)
        )
        if question in seen:
            continue
        seen.add(question)
        problems.append((question, "".join(texts.get(ch, ch) for ch in pattern), value))
    return problems
