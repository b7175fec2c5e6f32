"""A broad curriculum of arithmetic word problems, for the ``train_broad`` split (:func:`broad_problems`).

The other training splits tell a few kinds of problem, so a model trained on them can pick the operator
from surface cues ("more" means add, "each" means multiply) and still fail a problem whose meaning asks
for another one. This module covers the semantic categories of one-step word problems that
mathematics-education research sorts them into (Carpenter & Moser, Riley, Greeno & Heller for the additive
ones: join, separate, part-part-whole and compare, each with each quantity unknown; Vergnaud and Greer for
the multiplicative ones: equal groups, partitive and quotative division, rates, prices, multiplicative
comparison, area, averages), and two-step problems that compose them the way everyday stories do (buying
and getting change, saving and a gift, pooling and sharing, a loss and a gain).

Every category has several templates, and each template draws its people (many cultures, with their
pronouns), settings, verbs and currency independently. Some templates tell the question first or state the
numbers out of the expression's order, and some use a word that usually signals another operation ("each"
in an addition, "altogether" in a subtraction or a division, "more" in a subtraction), so the operator has
to be read from what the story means. A template names the operands of its category's expression
(``{a}``, ``{b}``, ``{c}``), so the question states exactly the numbers the expression uses.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Collection
from dataclasses import dataclass
from fractions import Fraction

from mcp_rl.datasets.arithmetic.composed import APPLY, DRAWS, money_text, short, with_cents, worked

# A person and the pronoun the stories use for them (he / she, so every verb agrees as written).
_PEOPLE = (
    ("Aisha", "she"), ("Mateo", "he"), ("Yuki", "she"), ("Kofi", "he"), ("Ingrid", "she"), ("Arjun", "he"),
    ("Fatima", "she"), ("Liam", "he"), ("Mei", "she"), ("Tariq", "he"), ("Olga", "she"), ("Diego", "he"),
    ("Amina", "she"), ("Kenji", "he"), ("Chiara", "she"), ("Emeka", "he"), ("Leila", "she"), ("Pavel", "he"),
    ("Ana", "she"), ("Hamid", "he"), ("Sun-hee", "she"), ("Tane", "he"), ("Nia", "she"), ("Bjorn", "he"),
    ("Priya", "she"), ("Jamal", "he"), ("Sofia", "she"), ("Minh", "he"), ("Zanele", "she"), ("Rafael", "he"),
    ("Esra", "she"), ("Wiremu", "he"), ("Lucia", "she"), ("Dawit", "he"), ("Hana", "she"), ("Santiago", "he"),
)  # fmt: skip
_PRONOUNS = {"he": ("he", "him", "his"), "she": ("she", "her", "her")}
_CURRENCIES = ("dollars", "euros", "pounds", "francs", "rupees")

# Settings shared by several templates: nouns (and their containers) that read naturally together.
_COLLECTIONS = (("stickers",), ("marbles",), ("stamps",), ("shells",), ("badges",), ("postcards",))
_CONTAINERS = (
    ("crate", "crates", "bottles"), ("box", "boxes", "pencils"), ("carton", "cartons", "eggs"),
    ("bag", "bags", "oranges"), ("tray", "trays", "cupcakes"), ("sack", "sacks", "potatoes"),
    ("packet", "packets", "seeds"), ("envelope", "envelopes", "letters"),
)  # fmt: skip
_GOODS = (
    ("pen", "pens"), ("notebook", "notebooks"), ("mug", "mugs"), ("ticket", "tickets"),
    ("paintbrush", "paintbrushes"), ("football", "footballs"), ("plant pot", "plant pots"),
    ("towel", "towels"),
)  # fmt: skip
_WHOLES = (
    ("school", "boys", "girls", "pupils"), ("farm", "cows", "sheep", "animals"),
    ("library", "novels", "picture books", "books"), ("orchard", "apple trees", "pear trees", "trees"),
    ("car park", "cars", "vans", "vehicles"), ("choir", "sopranos", "altos", "singers"),
)  # fmt: skip
_PURCHASES = (("a jacket",), ("groceries",), ("a bicycle helmet",), ("concert tickets",), ("garden tools",))
_GIVE = ("gave away", "lost", "sold", "traded", "donated")
_GET = ("found", "was given", "bought", "won", "collected")


@dataclass(frozen=True)
class Template:
    """A ``str.format`` template over the category's operands ``{a}``, ``{b}`` (and ``{c}``), a person
    (``{name}``, ``{he}``, ``{him}``, ``{his}``, capitalised ``{He}``, ``{His}``), a second person
    (``{other}``), a currency (``{cur}``), one of ``settings`` (``{s[0]}``, ...) and one of ``verbs``
    (``{v}``). The operands named in ``money`` are amounts of money and may carry cents."""

    text: str
    settings: tuple[tuple[str, ...], ...] = ((),)
    verbs: tuple[str, ...] = ("",)
    money: str = ""


@dataclass(frozen=True)
class Category:
    """The expression over ``a``, ``b`` (, ``c``) every template of the category means, the draw of its
    integer operands (sized so the result is positive and every division exact), and its templates."""

    pattern: str
    draw: Callable[[random.Random], tuple[int | Fraction, ...]]
    templates: tuple[Template, ...]


def _pair(lo_a: int, hi_a: int, lo_b: int, hi_b: int) -> Callable[[random.Random], tuple[int, int]]:
    return lambda rng: (rng.randint(lo_a, hi_a), rng.randint(lo_b, hi_b))


def _gap(rng: random.Random) -> tuple[int, int]:
    """``a > b`` by at least 8, so a difference or a remainder is never tiny."""
    b = rng.randint(12, 900)
    return b + rng.randint(8, 900), b


def _exact(lo_div: int, hi_div: int, lo_q: int, hi_q: int) -> Callable[[random.Random], tuple[int, int]]:
    """``a`` a multiple of ``b``: the quotient is drawn first, so every division comes out whole."""

    def draw(rng: random.Random) -> tuple[int, int]:
        b = rng.randint(lo_div, hi_div)
        return b * rng.randint(lo_q, hi_q), b

    return draw


def _speed_and_time(rng: random.Random) -> tuple[int, Fraction]:
    # half hours (or minutes) keep the product short while the time itself is not always whole
    return rng.randint(12, 120), Fraction(rng.randint(3, 24), 2)


T = Template
CATEGORIES: dict[str, Category] = {
    # --- one step, additive: join (a start gets more), a = start, b = change, or a = end ---
    "join_result": Category("a + b", _pair(15, 960, 15, 960), (
        T("{name} had {a} {s[0]}. Then {he} {v} {b} more. How many {s[0]} does {he} have now?",
          _COLLECTIONS, _GET),
        T("How many {s[1]} are in the {s[0]} now, if it held {a} {s[1]} and then {b} more were {v}?",
          (("library", "books"), ("warehouse", "parcels"), ("school hall", "chairs"),
           ("greenhouse", "seedlings")),
          ("delivered", "added", "brought in", "unloaded")),
        T("A farm had {a} {s[0]}. Each spring new animals arrive, and this spring {b} {s[0]} were born. How "
          "many {s[0]} does the farm have now?", (("sheep",), ("goats",), ("pigs",), ("rabbits",))),
        T("{name}'s travel card had {a} {cur} on it. {His} uncle {v} {b} {cur} to it. How many {cur} are on "
          "the card now?", verbs=("added", "put", "loaded"), money="ab"),
        T("{name} walked {a} steps before lunch and {b} steps after lunch. How many steps did {he} walk "
          "that day?"),
    )),
    # b = start, a = end: how many were added
    "join_change": Category("a - b", _gap, (
        T("{name} had {b} {s[0]}. Then {he} {v} some more and now has {a} {s[0]} altogether. How many "
          "{s[0]} did {he} get?", _COLLECTIONS, ("bought", "was given", "found", "collected")),
        T("A {s[0]} held {b} litres of water. After it was topped up it held {a} litres. How many litres "
          "were added?", (("tank",), ("water butt",), ("paddling pool",), ("cistern",))),
        T("How many {cur} did {name} earn this week, if {his} savings grew from {b} {cur} to {a} {cur}?",
          money="ab"),
        T("A {s[0]} had {b} {s[1]} in the morning. More {s[1]} {v} during the day, and by evening there "
          "were {a}. How many {s[1]} {v} during the day?",
          (("car park", "cars"), ("campsite", "tents"), ("harbour", "boats"), ("stable", "horses")),
          ("arrived", "came in", "turned up")),
        T("{name} needs {a} points to reach the next level of a game and already has {b}. How many more "
          "points does {he} need to score?"),
    )),
    # a = end, b = change: how many there were at first
    "join_start": Category("a - b", _gap, (
        T("{name} {v} {b} {s[0]} at the fair. Now {he} has {a} {s[0]}. How many {s[0]} did {he} have before "
          "the fair?", _COLLECTIONS, ("won", "was given", "bought")),
        T("After the bank paid in {b} {cur} of interest, {name}'s account held {a} {cur}. How many {cur} "
          "were in it before?", money="ab"),
        T("How many {s[1]} were on the {s[0]} at first, if {b} more {s[1]} were put on it and now there are "
          "{a}?", (("shelf", "jars"), ("tree", "decorations"), ("table", "plates"), ("wall", "posters"))),
        T("Some children were playing in the park. {b} more children joined them, and then there were {a} "
          "children in all. How many children were playing at first?"),
    )),
    # --- separate (a start loses some): a = start, b = taken or left ---
    "separate_result": Category("a - b", _gap, (
        T("{name} had {a} {s[0]} and {v} {b} of them. How many {s[0]} does {he} have left?",
          _COLLECTIONS, _GIVE),
        T("A {s[0]} had {a} {s[1]} in stock. It {v} {b} {s[1]} on Saturday. How many {s[1]} are still in "
          "stock?",
          (("bakery", "loaves"), ("toy shop", "kites"), ("bookshop", "novels"), ("garden centre", "plants")),
          ("sold", "sold off", "shipped out", "gave away")),
        T("How many {s[0]} are left in the jar if it held {a} and the children {v} {b}?",
          (("sweets",), ("biscuits",), ("raisins",), ("nuts",)), ("ate", "took", "shared out")),
        T("A roll of {s[0]} was {a} cm long. {name} cut off {b} cm to wrap a present. How long is the roll "
          "now, in cm?", (("ribbon",), ("wrapping paper",), ("string",))),
        T("{name} had {a} {cur} and {v} {b} {cur} on {s[0]}. How many {cur} does {he} still have?",
          _PURCHASES, ("spent", "splashed out"), money="ab"),
    )),
    "separate_change": Category("a - b", _gap, (
        T("{name} had {a} {s[0]}. {He} {s[1]} and had {b} left. How many {s[0]} did {he} {s[2]}?",
          (("stickers", "gave some away", "give away"), ("marbles", "lost some", "lose"),
           ("apples", "ate some", "eat"), ("stamps", "sold some", "sell"),
           ("cards", "swapped some", "swap"))),
        T("A tank held {a} litres of {s[0]}. Some was {v}, and {b} litres remain. How many litres were {v}?",
          (("water",), ("fuel",), ("milk",)), ("used", "pumped out", "drained")),
        T("How many {s[1]} were sold today, if the {s[0]} opened with {a} {s[1]} and closes with {b}?",
          (("bakery", "pies"), ("flower stall", "bunches"), ("cinema", "tickets"), ("kiosk", "newspapers"))),
        T("The pupils set off on a school trip with {a} sandwiches and came home with {b} uneaten. How many "
          "sandwiches were eaten altogether?"),
    )),
    # a = left, b = taken: how many there were to begin with
    "separate_start": Category("a + b", _pair(15, 960, 15, 960), (
        T("{name} {v} {b} {s[0]} and has {a} left. How many {s[0]} did {he} have to begin with?",
          _COLLECTIONS, _GIVE),
        T("After spending {b} {cur} on {s[0]}, {name} has {a} {cur} left. How many {cur} did {he} have "
          "before?", _PURCHASES, money="ab"),
        T("How many {s[1]} were in the {s[0]} before {b} were taken out, if {a} are still in it?",
          (("box", "crayons"), ("crate", "melons"), ("drawer", "socks"), ("basket", "eggs"))),
        T("A bakery sold {b} {s[0]} this morning, and {a} are left on the shelves. How many {s[0]} did it "
          "start the day with?", (("rolls",), ("croissants",), ("muffins",), ("bagels",))),
    )),
    # --- part-part-whole: a, b the parts, or a = whole, b = one part ---
    "part_whole": Category("a + b", _pair(15, 960, 15, 960), (
        T("A {s[0]} has {a} {s[1]} and {b} {s[2]}. How many {s[3]} are there in all?", _WHOLES),
        T("{name} threaded {a} red beads and {b} blue beads onto one string. How many beads are on the "
          "string?"),
        T("In a car park {a} cars are white and the other {b} are not. How many cars are in the car park?"),
        T("{name} spent {a} {cur} on {s[0]} and {b} {cur} on {s[1]}. How much did {he} spend, in {cur}?",
          (("bread", "cheese"), ("paint", "brushes"), ("a lamp", "bulbs"), ("seeds", "compost")), money="ab"),
        T("How many passengers are on the ferry, if {a} of them sit inside and each of the other {b} stands "
          "on deck?"),
    )),
    "part_unknown": Category("a - b", _gap, (
        T("A {s[0]} has {a} {s[3]}. {b} of them are {s[1]} and the rest are {s[2]}. How many {s[2]} are "
          "there?", _WHOLES),
        T("{name} has {a} {s[0]} altogether: {b} are {s[1]} and the rest are {s[2]}. How many are {s[2]}?",
          (("marbles", "glass", "steel"), ("books", "paperbacks", "hardbacks"),
           ("socks", "striped", "plain"))),
        T("How many {cur} did the {s[1]} cost, if {name} paid {a} {cur} for a {s[0]} and {s[1]} together "
          "and the {s[0]} cost {b} {cur}?",
          (("racket", "balls"), ("lamp", "bulbs"), ("bike", "helmet")), money="ab"),
        T("A journey of {a} km is made partly by train and partly by bus. The train part is {b} km. How "
          "many km is the bus part?"),
    )),
    # --- compare: a = larger, b = smaller, or a = referent, b = difference ---
    "compare_difference": Category("a - b", _gap, (
        T("{name} has {a} {s[0]} and {other} has {b}. How many more {s[0]} does {name} have than {other}?",
          _COLLECTIONS),
        T("{name}'s kite flew {a} metres high and {his} brother's kite flew {b} metres high. How much "
          "higher did {name}'s kite fly, in metres?"),
        T("How many fewer {s[0]} did the {s[1]} sell than the {s[2]}, if the {s[2]} sold {a} and the {s[1]} "
          "sold {b}?",
          (("tickets", "museum", "zoo"), ("ice creams", "kiosk", "cafe"), ("maps", "station", "hotel"))),
        T("One hiking trail is {a} metres long and another is {b} metres long. What is the difference in "
          "their lengths, in metres?"),
        T("{name} scored {b} points and {other} scored {a}. How many more points would {name} have needed "
          "to match {other}?"),
        T("The town hall is {a} years old and the library is {b} years old. How many years older is the "
          "town hall?"),
    )),
    "compare_larger": Category("a + b", _pair(15, 960, 15, 960), (
        T("{other} has {a} {s[0]}. {name} has {b} more {s[0]} than {other}. How many {s[0]} does {name} "
          "have?", _COLLECTIONS),
        T("The bridge is {a} metres long, and the tunnel is {b} metres longer than the bridge. How long is "
          "the tunnel, in metres?"),
        T("How much does the {s[0]} cost, if it is {b} {cur} dearer than the {s[1]}, which costs {a} {cur}?",
          (("sofa", "armchair"), ("coat", "jacket"), ("laptop", "tablet"), ("bed", "desk")), money="ab"),
        T("{name} has {a} {s[0]}. That is {b} fewer than {other} has. How many {s[0]} does {other} have?",
          _COLLECTIONS),
        T("The old oak is {a} years old, and the castle beside it is {b} years older. How old is the "
          "castle?"),
    )),
    "compare_smaller": Category("a - b", _gap, (
        T("{name} has {a} {s[0]}. {other} has {b} fewer {s[0]} than {name}. How many {s[0]} does {other} "
          "have?", _COLLECTIONS),
        T("{name} has {a} {s[0]}, which is {b} more than {other} has. How many {s[0]} does {other} have?",
          _COLLECTIONS),
        T("How long is the short trail, if the long trail is {a} metres and is {b} metres longer than the "
          "short one?"),
        T("A {s[0]} costs {a} {cur}. That is {b} {cur} more than a {s[1]}. What does a {s[1]} cost, in "
          "{cur}?",
          (("sofa", "armchair"), ("coat", "jacket"), ("laptop", "tablet"), ("bed", "desk")), money="ab"),
        T("The cathedral is {a} years old, {b} years older than the town hall. How old is the town hall?"),
    )),
    # --- one step, multiplicative: a = number of groups, b = size of each ---
    "equal_groups": Category("a * b", _pair(3, 48, 12, 250), (
        T("There are {a} {s[1]} with {b} {s[2]} in each. How many {s[2]} are there?", _CONTAINERS),
        T("{name} bought {a} {s[1]} of {s[2]}, each with {b} {s[2]}. How many {s[2]} did {he} buy?",
          _CONTAINERS),
        T("How many {s[2]} are needed to fill {a} {s[1]}, if one {s[0]} takes {b}?", _CONTAINERS),
        T("A cinema has {a} rows with {b} seats in every row. How many seats does it have?"),
        T("{b} {s[2]} fit in one {s[0]}. How many {s[2]} fit in {a} {s[1]}?", _CONTAINERS),
    )),
    # a = total, b = number of groups: how many in each
    "partitive": Category("a / b", _exact(3, 24, 12, 150), (
        T("{name} shares {a} {s[0]} equally among {b} friends. How many {s[0]} does each friend get?",
          _COLLECTIONS),
        T("{a} {s[2]} are packed equally into {b} {s[1]}. How many {s[2]} are in each {s[0]}?", _CONTAINERS),
        T("How many {cur} does each of {b} {s[0]} receive if {a} {cur} is split equally among them?",
          (("charities",), ("grandchildren",), ("team members",), ("schools",)), money="a"),
        T("A road of {a} km is divided into {b} sections of equal length. How many km long is each section?"),
        T("Altogether {a} pupils are put into {b} teams of the same size. How many pupils are on each team?"),
        T("{b} volunteers share the painting of {a} metres of fence equally. How many metres does each one "
          "paint?"),
    )),
    # a = total, b = size of each group: how many groups
    "quotative": Category("a / b", _exact(6, 48, 12, 150), (
        T("{name} has {a} {s[0]} and puts {b} in each bag. How many bags does {he} fill?", _COLLECTIONS),
        T("How many {s[1]} are needed to pack {a} {s[2]}, if each {s[0]} holds {b}?", _CONTAINERS),
        T("A rope is {a} cm long. How many pieces of {b} cm can be cut from it?"),
        T("A bus seats {b} passengers. How many buses does a school need for {a} pupils, if every bus is "
          "full?"),
        T("{name} saves {b} {cur} every week. How many weeks does it take {him} to save {a} {cur}?"),
    )),
    # a = rate, b = time
    "rate_time": Category("a * b", _speed_and_time, (
        T("A {s[0]} travels at {a} km/h. How many km does it go in {b} hours?",
          (("train",), ("coach",), ("ferry",), ("delivery van",))),
        T("A pump moves {a} litres a minute. How many litres does it move in {b} minutes?"),
        T("How many words does {name} type in {b} minutes at {a} words a minute?"),
        T("A printer prints {a} pages every minute. How many pages does it print in {b} minutes?"),
        T("{name} cycles at a steady {a} km/h for {b} hours. How many km does {he} ride?"),
    )),
    # a = quantity, b = price of one
    "price_total": Category("a * b", _pair(2, 48, 2, 120), (
        T("One {s[0]} costs {b} {cur}. What do {a} {s[1]} cost, in {cur}?", _GOODS, money="b"),
        T("{name} buys {a} {s[1]} at {b} {cur} each. How many {cur} does {he} pay?", _GOODS, money="b"),
        T("How many {cur} does a shop take in by selling {a} {s[1]} for {b} {cur} apiece?",
          _GOODS, money="b"),
        T("A {s[0]} is priced at {b} {cur}. A school orders {a} of them. What is the bill, in {cur}?",
          _GOODS, money="b"),
    )),
    # a = total paid, b = quantity: the price of one
    "unit_price": Category("a / b", _exact(2, 12, 2, 95), (
        T("{name} paid {a} {cur} for {b} {s[1]}, all at the same price. How much did one {s[0]} cost, in "
          "{cur}?", _GOODS, money="a"),
        T("{b} {s[1]} cost {a} {cur} altogether. What is the price of one {s[0]}, in {cur}?",
          _GOODS, money="a"),
        T("How many {cur} does each {s[0]} cost, if a pack of {b} {s[1]} sells for {a} {cur}?",
          _GOODS, money="a"),
        T("A club spent {a} {cur} on {b} identical {s[1]}. How much was each {s[0]}, in {cur}?",
          _GOODS, money="a"),
    )),
    # a = the referent, b = the factor
    "times_larger": Category("a * b", _pair(12, 400, 2, 12), (
        T("{other} has {a} {s[0]}. {name} has {b} times as many. How many {s[0]} does {name} have?",
          _COLLECTIONS),
        T("A small box weighs {a} grams. A crate weighs {b} times as much. How many grams does the crate "
          "weigh?"),
        T("How many visitors came on Sunday, if {a} came on Monday and {b} times as many came on Sunday?"),
        T("A rope is {b} times as long as a hose that is {a} cm long. How long is the rope, in cm?"),
    )),
    # a = the larger amount, b = the factor: the referent
    "times_smaller": Category("a / b", _exact(2, 12, 12, 400), (
        T("{name} has {a} {s[0]}, which is {b} times as many as {other} has. How many {s[0]} does {other} "
          "have?", _COLLECTIONS),
        T("A {s[0]} costs {a} {cur}, {b} times the price of a {s[1]}. What does a {s[1]} cost, in {cur}?",
          (("sofa", "chair"), ("bicycle", "scooter"), ("guitar", "ukulele")), money="a"),
        T("How many {s[0]} did the {s[1]} collect, if the {s[2]} collected {b} times as many as the {s[1]}, "
          "namely {a}?", (("cans", "first class", "second class"), ("coats", "youth club", "church"))),
        T("A rope is {a} cm long. That is {b} times the length of a piece of string. How long is the "
          "string, in cm?"),
    )),
    "area": Category("a * b", _pair(3, 95, 3, 95), (
        T("A rectangular {s[0]} is {a} m long and {b} m wide. What is its area, in square metres?",
          (("garden",), ("field",), ("car park",), ("playground",))),
        T("How many square metres of carpet cover a rectangular hall floor {a} m by {b} m?"),
        T("A rectangle measures {a} cm by {b} cm. What is its area, in square centimetres?"),
        T("{name} tiles a rectangular patio {b} m wide and {a} m long. How many square metres does {he} "
          "tile?"),
    )),
    # a = amount per period, b = number of periods
    "period_total": Category("a * b", _pair(12, 250, 3, 52), (
        T("{name} saves {a} {cur} a week. How many {cur} has {he} saved after {b} weeks?", money="a"),
        T("A hen house gives {a} eggs each day. How many eggs does it give in {b} days?"),
        T("How many km does {name} run in {b} weeks if {he} runs {a} km every week?"),
        T("A factory makes {a} {s[0]} per day. How many {s[0]} does it make in {b} days?",
          (("chairs",), ("bicycles",), ("teapots",), ("lamps",))),
    )),
    # a = total over the periods, b = number of periods: the amount per period
    "period_rate": Category("a / b", _exact(3, 52, 12, 250), (
        T("{name} read a book of {a} pages in {b} days, the same number of pages each day. How many pages "
          "did {he} read a day?"),
        T("A farm sold {a} litres of milk in {b} weeks, the same amount every week. How many litres a week "
          "is that?"),
        T("How many {cur} did {name} earn per day, if {he} earned {a} {cur} for {b} days of work at the "
          "same daily pay?", money="a"),
        T("A bakery uses {a} kg of flour over {b} days, the same amount each day. How many kg does it use "
          "per day?"),
    )),
    # a = total, b = count: the mean
    "average": Category("a / b", _exact(3, 12, 12, 150), (
        T("{b} {s[0]} together weigh {a} kg. What is their average weight, in kg?",
          (("suitcases",), ("sacks of grain",), ("pumpkins",), ("parcels",))),
        T("Over {b} games a team scored {a} points. How many points did it score per game on average?"),
        T("The total rainfall over {b} days was {a} mm. What was the average daily rainfall, in mm?"),
        T("{name} spent {a} {cur} on {b} meals. On average, how many {cur} did each meal cost?", money="a"),
    )),
    # --- two steps: the forms of :mod:`.composed`, told as everyday stories ---
    "remove_groups": Category("a - b * c", DRAWS["a - b * c"], (
        T("{name} pays for {b} {s[1]} at {c} {cur} each with {a} {cur}. How much change does {he} get, in "
          "{cur}?", _GOODS, money="ac"),
        T("A book has {a} pages. {name} reads {c} pages a day for {b} days. How many pages are left to "
          "read?"),
        T("How many {s[2]} are left in a store of {a} {s[2]}, if {b} {s[1]} of {c} were sent out?",
          _CONTAINERS),
        T("A water tank holds {a} litres. A garden uses {c} litres a day. How many litres are left after "
          "{b} days?"),
        T("Altogether {a} people came to a concert. {b} buses brought {c} people each, and the rest walked. "
          "How many people walked?"),
    )),
    "groups_plus": Category("a * b + c", DRAWS["a * b + c"], (
        T("{name} saves {b} {cur} every week for {a} weeks and then gets {c} {cur} as a gift. How many "
          "{cur} does {he} have now?", money="bc"),
        T("{name}, a baker, fills {a} trays with {b} rolls each and has {c} rolls left over. How many rolls "
          "did {he} bake?"),
        T("How many {s[2]} are there, if there are {a} full {s[1]} of {b} and {c} loose ones?", _CONTAINERS),
        T("{name} earned {c} {cur} on Monday. Then {he} worked {a} hours at {b} {cur} an hour. How many "
          "{cur} did {he} earn in all?", money="bc"),
    )),
    "groups_minus": Category("a * b - c", DRAWS["a * b - c"], (
        T("A shop had {a} {s[1]} of {b} {s[2]}. Then {c} {s[2]} were {v}. How many {s[2]} remain?",
          (("carton", "cartons", "eggs"), ("crate", "crates", "bottles"), ("tray", "trays", "cupcakes")),
          ("broken", "sold", "lost", "given away")),
        T("{name} bought {a} packs of {b} cards and gave {c} cards to {his} cousin. How many cards does "
          "{he} have?"),
        T("How many {cur} does {name} owe after buying {a} {s[1]} at {b} {cur} each and using a coupon "
          "worth {c} {cur}?", _GOODS, money="bc"),
        T("A farmer planted {a} rows of {b} {s[0]}, and {c} of the plants did not come up. How many plants "
          "grew?", (("cabbages",), ("lettuces",), ("sunflowers",), ("leeks",))),
    )),
    "combine_share": Category("(a + b) / c", DRAWS["(a + b) / c"], (
        T("{name} has {a} {s[0]} and {other} has {b}. They put them together and share them equally among "
          "{c} friends. How many does each friend get?", _COLLECTIONS),
        T("A class raised {a} {cur} one week and {b} {cur} the next, and divided the money equally among "
          "{c} charities. How many {cur} did each charity get?", money="ab"),
        T("How many {s[0]} go in each box, if {a} red and {b} green {s[0]} are packed equally into {c} "
          "boxes?", (("apples",), ("peppers",), ("pencils",), ("balloons",))),
        T("{c} friends split a bill equally. The food cost {a} {cur} and the drinks cost {b} {cur}. How "
          "much does each friend pay, in {cur}?", money="ab"),
    )),
    "remove_share": Category("(a - b) / c", DRAWS["(a - b) / c"], (
        T("{name} had {a} {s[0]}, kept {b} and shared the rest equally among {c} cousins. How many did each "
          "cousin get?", _COLLECTIONS),
        T("A bakery made {a} cookies. {b} were broken, and the rest were packed equally into {c} tins. How "
          "many cookies are in each tin?"),
        T("How many {cur} does each of {c} players pay, if a trip costs {a} {cur}, the club pays {b} {cur} "
          "of it and the players split the rest equally?", money="ab"),
        T("A rope of {a} m has {b} m cut off, and the rest is cut into {c} equal pieces. How many m long is "
          "each piece?"),
    )),
    "loss_gain": Category("a - b + c", DRAWS["a - b + c"], (
        T("{name} had {a} {s[0]}. {He} {s[1]} {b} of them and then {s[2]} {c} more. How many {s[0]} does "
          "{he} have now?",
          (("marbles", "lost", "won"), ("stickers", "gave away", "got"), ("stamps", "sold", "bought"),
           ("shells", "dropped", "found"))),
        T("A bus had {a} passengers. At a stop {b} got off and {c} got on. How many passengers are on the "
          "bus now?"),
        T("How many {cur} are in {name}'s account, if it held {a} {cur}, {he} paid {b} {cur} for {s[0]} and "
          "then {he} was paid {c} {cur}?", _PURCHASES, money="abc"),
        T("A library had {a} books out on loan. This week {b} were returned and {c} more were borrowed. How "
          "many books are out on loan now?"),
    )),
    "gain_loss": Category("a + b - c", DRAWS["a + b - c"], (
        T("{name} had {a} {cur}, earned {b} {cur} babysitting and spent {c} {cur} on {s[0]}. How many {cur} "
          "does {he} have now?", _PURCHASES, money="abc"),
        T("An animal shelter had {a} dogs. {b} more dogs arrived this month and {c} were adopted. How many "
          "dogs are in the shelter now?"),
        T("How many {s[0]} does a shop have after a delivery of {b} adds to its {a} {s[0]}, if it then "
          "sells {c}?", (("umbrellas",), ("kettles",), ("scarves",), ("torches",))),
        T("A tank held {a} litres. Another {b} litres were pumped in, and then {c} litres were used. How "
          "many litres are in the tank?"),
    )),
    "two_kinds_price": Category("(a + b) * c", DRAWS["(a + b) * c"], (
        T("{name} buys {a} adult tickets and {b} child tickets. Every ticket costs {c} {cur}. How many "
          "{cur} does {he} pay?", money="c"),
        T("A shop sold {a} red {s[1]} and {b} blue {s[1]}, all at {c} {cur} each. How many {cur} did it "
          "take?", _GOODS, money="c"),
        T("How many {s[0]} do {a} boys and {b} girls get, if every child gets {c}?", _COLLECTIONS),
        T("On Saturday {a} people visited a {s[0]} and on Sunday {b} people. Entry costs {c} {cur} a "
          "person. How many {cur} did it take over the weekend?",
          (("museum",), ("zoo",), ("castle",)), money="c"),
    )),
    "price_gap_times": Category("(a - b) * c", DRAWS["(a - b) * c"], (
        T("A {s[0]} costs {a} {cur} at one shop and {b} {cur} at another. How many {cur} does {name} save "
          "by buying {c} at the cheaper shop?", _GOODS, money="ab"),
        T("{name} sells {s[1]} for {a} {cur} each that cost {b} {cur} each to make. How much profit does "
          "{he} make on {c} of them, in {cur}?", _GOODS, money="ab"),
        T("How many more km does a fast train cover in {c} hours at {a} km/h than a slow train at {b} km/h?"),
        T("{name} earns {a} {cur} an hour, and {b} {cur} of each hour's pay goes in tax. How many {cur} "
          "does {he} keep from {c} hours of work?", money="ab"),
    )),
    "share_plus": Category("a / b + c", DRAWS["a / b + c"], (
        T("A prize of {a} {cur} is split equally among {b} winners, and one of them also wins a bonus of "
          "{c} {cur}. How many {cur} does that winner get?", money="ac"),
        T("{a} pupils are split equally into {b} groups, and then {c} late pupils join the first group. How "
          "many pupils are in the first group?"),
        T("A walk of {a} km is split into {b} equal stages, and on the first stage the group adds a detour "
          "of {c} km. How many km do they walk on the first stage?"),
        T("{name} gets an equal share of {a} {s[0]} split between {b} children, plus {c} more from {his} "
          "grandmother. How many {s[0]} does {he} get?", _COLLECTIONS),
    )),
    "share_minus": Category("a / b - c", DRAWS["a / b - c"], (
        T("{a} cherries are shared equally among {b} children. Each child eats {c} straight away. How many "
          "cherries does each child have left?"),
        T("{name} splits {a} {cur} equally over {b} months and spends {c} {cur} of each month's share on "
          "{s[0]}. How many {cur} of each share are left?", (("rent",), ("food",), ("travel",)), money="ac"),
        T("A ferry company has {a} seats across {b} identical boats. If {c} passengers are on one boat, how "
          "many empty seats does that boat have?"),
        T("A fence of {a} m is painted in {b} equal parts. {name} has painted {c} m of one part. How many m "
          "of that part are still to paint?"),
    )),
    "share_two_groups": Category("a / (b + c)", DRAWS["a / (b + c)"], (
        T("A teacher has {a} {s[0]} for a class of {b} girls and {c} boys and gives every child the same "
          "number. How many {s[0]} does each child get?", _COLLECTIONS),
        T("How many {cur} is each ticket, if a group of {b} adults and {c} children pays {a} {cur} and all "
          "tickets cost the same?", money="a"),
        T("A farmer plants {a} trees, {b} rows on the hill and {c} rows by the river, with the same number "
          "in each row. How many trees are in each row?"),
        T("{name} worked {b} hours in the first week and {c} hours in the second and earned {a} {cur} in "
          "all at the same hourly rate. What is {his} hourly rate, in {cur}?", money="a"),
    )),
    "remove_twice": Category("a - b - c", DRAWS["a - b - c"], (
        T("{name} had {a} {cur}. {He} spent {b} {cur} on {s[0]} and {c} {cur} on {s[1]}. How many {cur} are "
          "left?", (("books", "lunch"), ("a scarf", "gloves"), ("paint", "canvas")), money="abc"),
        T("A family plans a trip of {a} km. On day one they drive {b} km and on day two {c} km. How many km "
          "are still to go?"),
        T("How many {s[0]} are still on the tree, if there were {a}, {name} picked {b} and the wind knocked "
          "down {c}?", (("apples",), ("plums",), ("pears",), ("lemons",))),
        T("A school printed {a} programmes for a play. {b} were handed out on the first night and {c} on "
          "the second. How many programmes are left?"),
    )),
}  # fmt: skip

# question, reference expression, its exact value, category, operations a careful solver does one at a time
Problem = tuple[str, str, Fraction, str, int]


def value_of(pattern: str, operands: tuple[Fraction, ...]) -> Fraction | None:
    """The pattern's value, or None when it (or, in two steps, the value found first) is not a positive
    integer or a short decimal."""
    if len(operands) == 3:
        return worked(pattern, *operands)
    value = APPLY[pattern.split()[1]](*operands)
    return value if short(value) else None


def _text(value: Fraction, money: bool) -> str:
    """An operand as both the question and the expression write it: 48, 2.5 (hours), a price 12.50."""
    text = money_text(value)
    return text if money or "." not in text else text.rstrip("0")


def _fill(rng: random.Random, template: Template, texts: dict[str, str]) -> str:
    (name, pronoun), (other, _) = rng.sample(_PEOPLE, 2)
    he, him, his = _PRONOUNS[pronoun]
    return template.text.format(
        **texts, name=name, other=other, he=he, him=him, his=his, He=he.capitalize(), His=his.capitalize(),
        cur=rng.choice(_CURRENCIES), s=rng.choice(template.settings), v=rng.choice(template.verbs),
    )  # fmt: skip


def broad_problems(rng: random.Random, n: int, taken: Collection[str] = ()) -> list[Problem]:
    """``n`` problems, the categories in turn, each told by one of its templates; no question repeats or is
    one of ``taken`` (the other splits' questions)."""
    kinds = list(CATEGORIES)
    seen = set(taken)
    problems: list[Problem] = []
    while len(problems) < n:
        kind = kinds[len(problems) % len(kinds)]
        category = CATEGORIES[kind]
        template = rng.choice(category.templates)
        plain = tuple(Fraction(n) for n in category.draw(rng))
        operands = with_cents(
            rng, plain, template.money, lambda ops, p=category.pattern: value_of(p, ops) is not None, tries=40
        )
        value = value_of(category.pattern, operands)
        assert value is not None, (kind, operands)  # the draws guarantee it
        texts = {name: _text(n, name in template.money) for name, n in zip("abc", operands, strict=False)}
        question = _fill(rng, template, texts)
        if question in seen:
            continue
        seen.add(question)
        expression = "".join(texts.get(ch, ch) for ch in category.pattern)
        problems.append((question, expression, value, kind, len(operands) - 1))
    return problems
