"""The training problems phrased anew, for the ``train_varied`` split (:func:`vary_training_phrasings`).

Each kind of problem has one template in ``train`` / ``test``, so a model trained on them can key its
calculator call on the template. These phrasings tell the same problems in other settings (people, shops,
farms, classrooms, trips), in other sentence orders (the question first, the numbers in another order than
the expression's) and with other verbs, some of them words that usually signal another operation ("each"
in a subtraction, "total" in a division), so the operation has to be read from what the text means.

A phrasing is filled from the operands of the problem's reference expression (see :data:`SHAPES`), so the
new text states exactly the numbers the reward's expression uses; the expression and answer stay as they
were. None of these phrasings reaches the test split.
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from dataclasses import dataclass

# The reference expression of each kind (``KINDS`` in the package) with its operands named.
SHAPES = {
    "add": "{a} + {b}",
    "subtract": "{a} - {b}",
    "multiply": "{each} * {count}",
    "divide": "{total} / {each}",
    "rate": "{speed} * {hours}",
    "percent": "{price} * (100 - {off}) / 100",
    "two_items": "{a} * {p} + {b} * {q}",
    "share": "{count} * {each} / {groups}",
    "convert": "{per_minute} * {minutes} / 1000",
}
_PATTERNS = {
    kind: re.compile(re.sub(r"\\\{(\w+)\\\}", r"(?P<\1>\\d+(?:\\.\\d+)?)", re.escape(shape)))
    for kind, shape in SHAPES.items()
}

_NAMES = ("Maya", "Omar", "Lena", "Tomas", "Priya", "Jonas", "Aiko", "Kwame", "Sofia", "Ravi", "Elif", "Noah")
# (mover, lowest and highest speed in km/h): a rate phrasing names one that goes that fast.
_MOVERS = (
    ("cyclist", 12, 32), ("ferry", 18, 45), ("coach", 30, 90), ("delivery van", 40, 120),
    ("high-speed train", 60, 180),
)  # fmt: skip


@dataclass(frozen=True)
class Phrasing:
    """A ``str.format`` template over the operands, ``{name}`` (a person), ``{s}`` (one of ``settings``:
    nouns and verbs that fit together), ``{mover}`` (rate problems) and ``{counted}``."""

    text: str
    settings: tuple[tuple[str, ...], ...] = ((),)
    # The operand that counts ``{counted}``: the setting's s[0] when it is 1, its plural s[1] otherwise.
    counted_by: str | None = None

    def fill(self, rng: random.Random, operands: Mapping[str, str]) -> str:
        s = rng.choice(self.settings)
        fields = {"name": rng.choice(_NAMES), "s": s, **operands}
        if "speed" in operands:
            speed = float(operands["speed"])
            fields["mover"] = rng.choice([m for m, low, high in _MOVERS if low <= speed <= high])
        if self.counted_by:
            fields["counted"] = s[0] if operands[self.counted_by] == "1" else s[1]
        return self.text.format(**fields)


P = Phrasing
PHRASINGS: dict[str, tuple[Phrasing, ...]] = {
    "add": (
        P(
            "{name} had {a} {s[0]} in a savings account and was paid {b} {s[0]} more on Friday. "
            "How many {s[0]} are in the account now?",
            (("dollars",), ("euros",), ("pounds",)),
        ),
        P(
            "How many {s[1]} does the {s[0]} have after a delivery of {b} more, if it already had {a}?",
            (
                ("bookshop", "books"),
                ("garden centre", "plants"),
                ("toy shop", "puzzles"),
                ("school", "chairs"),
            ),
        ),
        P(
            "{b} new {s[0]} signed up for a {s[1]} that already had {a} {s[0]}. "
            "How many {s[0]} does the {s[1]} have now?",
            (("members", "club"), ("runners", "marathon"), ("volunteers", "charity"), ("players", "league")),
        ),
        P(
            "Each year a {s[0]} buys more {s[1]}. It had {a} {s[1]} last year and bought {b} this year. "
            "How many {s[1]} does it have now?",
            (("library", "books"), ("museum", "paintings"), ("toy library", "games")),
        ),
        P(
            "On a long trip {name} {s[0]} {a} km in the first week and {b} km in the second. "
            "How many km was that over the two weeks?",
            (("drove",), ("cycled",), ("sailed",)),
        ),
        P(
            "A bakery had {a} {s[0]} left after the morning and baked {b} more for the evening. "
            "How many {s[0]} does it have for the evening?",
            (("rolls",), ("muffins",), ("buns",)),
        ),
        P(
            "A farmer harvested {a} kg of {s[0]} from one field and {b} kg from another. "
            "What is the combined harvest, in kg?",
            (("potatoes",), ("wheat",), ("apples",), ("carrots",)),
        ),
    ),
    "subtract": (
        P(
            "{name} had {a} {s[0]} saved and spent {b} {s[0]} on {s[1]}. How many {s[0]} are left?",
            (("dollars", "a used car"), ("euros", "a holiday"), ("pounds", "a new roof")),
        ),
        P(
            "How many {s[1]} are left in a {s[0]} that held {a} {s[1]} after {b} were {s[2]}?",
            (
                ("warehouse", "parcels", "shipped out"),
                ("seed bank", "seeds", "planted"),
                ("stockroom", "screws", "used up"),
            ),
        ),
        P(
            "A {s[0]} gave away {b} of its {a} {s[1]}. How many {s[1]} does it have now?",
            (("library", "books"), ("charity shop", "coats"), ("plant nursery", "seedlings")),
        ),
        P(
            "Each of the {a} seats in a {s[0]} was checked before the {s[1]}, and {b} of them had been sold. "
            "How many seats were still unsold?",
            (("stadium", "match"), ("concert hall", "concert"), ("theatre", "show")),
        ),
        P(
            "A school needs {a} dollars for {s[0]} and has raised {b} dollars so far. "
            "How many more dollars does it need?",
            (("a class trip",), ("a new playground",), ("a science lab",)),
        ),
        P(
            "A {s[0]} is {a} metres long. A group has {s[1]} {b} metres of it. "
            "How many metres are still ahead of them?",
            (("hiking trail", "walked"), ("canal towpath", "cycled"), ("river route", "paddled")),
        ),
        P(
            "A factory made {a} {s[0]} this month, but {b} of them failed the quality check. "
            "How many {s[0]} passed?",
            (("lamps",), ("bicycles",), ("phone cases",)),
        ),
    ),
    "multiply": (
        P(
            "{name} buys {count} packets of {s[0]} with {each} {s[0]} in each packet. "
            "How many {s[0]} is that altogether?",
            (("seeds",), ("stickers",), ("beads",)),
        ),
        P(
            "How many {s[3]} are in a {s[0]} with {count} {s[1]}, if every {s[2]} has {each} {s[3]}?",
            (
                ("hall", "rows", "row", "chairs"),
                ("fruit farm", "rows", "row", "trees"),
                ("car park", "levels", "level", "spaces"),
            ),
        ),
        P(
            "A {s[0]} makes {each} {s[1]} a day. How many {s[1]} does it make in {count} days?",
            (("workshop", "chairs"), ("bakery", "loaves"), ("dairy", "cheeses")),
        ),
        P(
            "A field is divided into {count} plots, and {each} {s[0]} are planted in every plot. "
            "How many {s[0]} are planted in all?",
            (("trees",), ("cabbages",), ("rose bushes",)),
        ),
        P(
            "A teacher shares out {each} {s[0]} to every one of the {count} pupils in a year group. "
            "How many {s[0]} does the teacher give out?",
            (("stickers",), ("pencils",), ("sheets of paper",)),
        ),
        P(
            "Over {count} weeks, {name} puts {each} {s[0]} a week into a savings jar. "
            "How many {s[0]} are in the jar at the end?",
            (("dollars",), ("euros",)),
        ),
    ),
    "divide": (
        P(
            "{name} has {total} {s[0]} to pack into bags of {each}. How many bags can be filled?",
            (("marbles",), ("cookies",), ("screws",)),
        ),
        P(
            "How many teams can be formed from {total} {s[0]} if every team has {each} {s[0]}?",
            (("players",), ("students",), ("volunteers",)),
        ),
        P(
            "A {s[0]} costs {total} dollars in total, and each {s[1]} pays {each} dollars. "
            "How many {s[2]} are going?",
            (
                ("school trip", "pupil", "pupils"),
                ("wedding dinner", "guest", "guests"),
                ("club outing", "member", "members"),
            ),
        ),
        P(
            "Each jar holds {each} grams of {s[0]}. A {s[1]} has {total} grams to put in jars. "
            "How many jars does that fill?",
            (("honey", "beekeeper"), ("jam", "cook"), ("pepper", "spice merchant")),
        ),
        P(
            "A {s[0]} {s[1]} {each} {s[2]} a minute. How many minutes does it take to {s[3]} {total} {s[2]}?",
            (
                ("printer", "prints", "pages", "print"),
                ("bottling machine", "fills", "bottles", "fill"),
                ("sawmill", "cuts", "planks", "cut"),
            ),
        ),
        P(
            "A {s[0]} {total} {s[1]} long is cut into {s[2]} of {each} {s[1]}. How many {s[2]} are there?",
            (
                ("road", "metres", "sections"),
                ("ribbon", "centimetres", "pieces"),
                ("rope", "centimetres", "lengths"),
            ),
        ),
        P(
            "A farmer plants {total} {s[0]}, {each} to a row. How many rows does the farmer plant?",
            (("seedlings",), ("bulbs",), ("vines",)),
        ),
    ),
    "rate": (
        P(
            "A {mover} travels for {hours} hours, keeping to {speed} km/h the whole way. "
            "What distance does it cover, in km?"
        ),
        P(
            "{name} is paid {speed} dollars for every hour of {s[0]}. "
            "How many dollars does {name} earn for {hours} hours?",
            (("tutoring",), ("plumbing work",), ("translation",)),
        ),
        P(
            "A leaking {s[0]} loses {speed} litres an hour. How many litres does it lose in {hours} hours?",
            (("tank",), ("pipe",), ("water main",)),
        ),
        P("In {hours} hours, how many kilometres will a {mover} cover if it holds a speed of {speed} km/h?"),
        P(
            "A {s[0]} {s[2]} {speed} {s[1]} per hour. After {hours} hours, how many {s[1]} has it {s[3]}?",
            (
                ("pump", "litres of water", "moves", "moved"),
                ("mill", "kg of flour", "grinds", "ground"),
                ("loom", "metres of cloth", "weaves", "woven"),
            ),
        ),
        P(
            "A {mover} set off at noon and kept up an average of {speed} km/h for {hours} hours. "
            "What total distance did it travel, in km?"
        ),
    ),
    "percent": (
        P(
            "{name} wants a {s[0]} priced at {price} dollars, and the shop takes {off}% off. "
            "How much does {name} pay, in dollars?",
            (("jacket",), ("bicycle helmet",), ("kettle",)),
        ),
        P(
            "After a {off}% discount, how many dollars does a {s[0]} that normally costs {price} dollars "
            "cost?",
            (("board game",), ("rucksack",), ("desk lamp",)),
        ),
        P(
            "A {s[0]} costs {price} dollars a month, and {s[1]} get {off}% off. "
            "How many dollars a month does a {s[2]} pay?",
            (
                ("gym membership", "students", "student"),
                ("music subscription", "pensioners", "pensioner"),
                ("bus pass", "trainees", "trainee"),
            ),
        ),
        P(
            "A storm destroyed {off}% of a farm's {price} tonnes of {s[0]}. How many tonnes are left?",
            (("wheat",), ("hay",), ("potatoes",)),
        ),
        P(
            "A new {s[0]} holds {price} watt-hours. Years later it has lost {off}% of that. "
            "How many watt-hours does it hold now?",
            (("phone battery",), ("laptop battery",), ("camera battery",)),
        ),
        P(
            "A recipe needs {price} grams of {s[0]}. A lighter version uses {off}% less. "
            "How many grams does the lighter version use?",
            (("sugar",), ("butter",), ("cream",)),
        ),
        P(
            "A bill for {s[0]} comes to {price} dollars in total, and a voucher takes {off}% off the total. "
            "How many dollars are left to pay?",
            (("a family meal",), ("a hotel night",), ("a car repair",)),
        ),
    ),
    "two_items": (
        P(
            "{name} bought {a} {s[0]} for {p} dollars each and {b} {s[1]} for {q} dollars each. "
            "How much was spent in total, in dollars?",
            (("notebooks", "pens"), ("plants", "pots"), ("T-shirts", "caps")),
        ),
        P(
            "{b} {s[1]} at {q} dollars each and {a} {s[0]} at {p} dollars each were ordered for {s[2]}. "
            "What did the order cost, in dollars?",
            (
                ("desks", "chairs", "an office"),
                ("tents", "sleeping bags", "a scout camp"),
                ("saws", "hammers", "a workshop"),
            ),
        ),
        P(
            "How many dollars did a {s[0]} raise by selling {a} {s[1]} at {p} dollars each "
            "and {b} {s[2]} at {q} dollars each?",
            (
                ("school fair", "cakes", "lemonades"),
                ("charity stall", "books", "mugs"),
                ("football club", "scarves", "programmes"),
            ),
        ),
        P(
            "A {s[0]} worked {a} hours on one job at {p} dollars an hour and {b} hours on another "
            "at {q} dollars an hour. How many dollars did the {s[0]} earn?",
            (("plumber",), ("carpenter",), ("tiler",)),
        ),
        P(
            "A market stall charges {p} dollars for a {s[0]} and {q} dollars for a {s[1]}. "
            "Today it sold {a} {s[2]} and {b} {s[3]}. How many dollars did it take?",
            (
                ("bag of apples", "jar of honey", "bags of apples", "jars of honey"),
                ("loaf", "pie", "loaves", "pies"),
                ("bunch of flowers", "potted plant", "bunches of flowers", "potted plants"),
            ),
        ),
        P(
            "A café ran out of stock and reordered {a} bags of {s[0]} at {p} dollars a bag "
            "and {b} bags of {s[1]} at {q} dollars a bag. How many dollars did the reorder cost?",
            (("coffee", "tea"), ("flour", "sugar"), ("rice", "beans")),
        ),
    ),
    "share": (
        P(
            "{count} families each bring {each} {s[2]} to a fair, and the {s[2]} are set out evenly on "
            "{groups} {counted}. How many {s[2]} go on each {s[0]}?",
            (
                ("table", "tables", "cookies"),
                ("tray", "trays", "cupcakes"),
                ("plate", "plates", "sandwiches"),
            ),
            counted_by="groups",
        ),
        P(
            "How many {s[2]} does each {s[0]} get if {count} {s[3]} of {each} {s[2]} are split equally "
            "among {groups} {counted}?",
            (
                ("collector", "collectors", "stamps", "albums"),
                ("gardener", "gardeners", "seeds", "packets"),
                ("class", "classes", "pencils", "boxes"),
            ),
            counted_by="groups",
        ),
        P(
            "A farm picks {each} {s[2]} from each of its {count} {s[3]} and loads them equally onto "
            "{groups} {counted}. How many {s[2]} does one {s[0]} carry?",
            (
                ("truck", "trucks", "punnets", "strawberry rows"),
                ("van", "vans", "crates", "apple trees"),
                ("lorry", "lorries", "boxes", "greenhouses"),
            ),
            counted_by="groups",
        ),
        P(
            "{groups} {counted} split the cost of {s[2]} equally. It came to {count} {s[3]} at {each} "
            "dollars per {s[4]}. How many dollars does each {s[0]} pay?",
            (
                ("friend", "friends", "a holiday flat", "nights", "night"),
                ("colleague", "colleagues", "a conference room", "days", "day"),
                ("cousin", "cousins", "a hired boat", "hours", "hour"),
            ),
            counted_by="groups",
        ),
        P(
            "A {s[4]} adds up the {s[2]} on {count} {s[3]} of {each} {s[2]} and hands the total out evenly "
            "to {groups} {counted}. How many {s[2]} does each {s[0]} get?",
            (
                ("pupil", "pupils", "stickers", "sheets", "teacher"),
                ("scout", "scouts", "badges", "cards", "scout leader"),
                ("player", "players", "tokens", "strips", "game host"),
            ),
            counted_by="groups",
        ),
    ),
    "convert": (
        P(
            "How many kilometres does {name} {s[0]} in {minutes} minutes at {per_minute} metres a minute?",
            (("cycle",), ("row",), ("skate",)),
        ),
        P(
            "A machine winds {per_minute} metres of {s[0]} onto a reel per minute. After {minutes} minutes, "
            "how many kilometres of {s[0]} are on the reel?",
            (("cable",), ("paper",), ("thread",)),
        ),
        P(
            "A {s[0]} fills an empty {s[1]} at {per_minute} millilitres a minute. "
            "How many litres are in the {s[1]} after {minutes} minutes?",
            (("tap", "tank"), ("hose", "paddling pool"), ("pump", "trough")),
        ),
        P(
            "A mill grinds {per_minute} grams of {s[0]} every minute. "
            "How many kilograms does it grind in {minutes} minutes?",
            (("flour",), ("coffee",), ("pepper",)),
        ),
        P(
            "A swimmer spends {minutes} minutes doing laps and covers {per_minute} metres in each of those "
            "minutes. What distance is that, in kilometres?"
        ),
        P(
            "Over {minutes} minutes, a walking group keeps a pace of {per_minute} metres per minute. "
            "How far do they walk, in kilometres?"
        ),
    ),
}


def operands(kind: str, expression: str) -> dict[str, str]:
    """The named operands of a reference expression of ``kind``, as written in it."""
    found = _PATTERNS[kind].fullmatch(expression)
    if found is None:
        raise ValueError(f"{expression!r} is not a {kind} expression ({SHAPES[kind]})")
    return found.groupdict()


def vary_training_phrasings(rng: random.Random, train: list[dict[str, object]]) -> list[dict[str, object]]:
    """``train`` with each question phrased anew, drawn from its kind's phrasings and the template it had
    (kept as it was), so a few rows still read as ``test`` does; every other field stays the same."""
    varied = []
    for row in train:
        kind, expression = str(row["kind"]), str(row["expression"])
        pick = rng.randrange(len(PHRASINGS[kind]) + 1)
        if pick < len(PHRASINGS[kind]):
            row = {**row, "question": PHRASINGS[kind][pick].fill(rng, operands(kind, expression))}
        varied.append(row)
    return varied
