"""The questions over the fictional world: every single- and two-hop question the entities support, then a
balanced sample of them split into train and test.

Each kind of question is one row of a table (:class:`Ask`): its phrasings, how the answer is read off the
entity, and which passages answer it. :func:`candidates` walks the tables in a fixed order, entity by entity
and row by row, drawing one phrasing per question: that order is what keeps the shipped files reproducible,
so new rows go at the end of a table (or in a new table at the end) unless the data is meant to change.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Generic, TypeVar

from mcp_rl.datasets.fictional.entities import (
    Entities,
    Entity,
    Event,
    Invention,
    Mountain,
    Org,
    Person,
    River,
    Town,
)

E = TypeVar("E", bound=Entity)
T = TypeVar("T")


@dataclass(frozen=True)
class Candidate:
    template: str
    question: str
    answers: list[str]
    supporting_ids: list[str]
    # The entity asked about, to phrase the question again for training (:func:`vary_training_phrasings`).
    subject: Entity = field(compare=False, repr=False)
    bridge: str | None = None


def _itself(e: Entity) -> tuple[Entity, ...]:
    return (e,)


def _always(e: Entity) -> bool:
    return True


@dataclass(frozen=True)
class Ask(Generic[E]):
    """One kind of question about an entity ``e`` of type ``E``."""

    template: str
    # str.format templates over ``e``; one is drawn per question.
    phrasings: tuple[str, ...]
    answers: Callable[[E], list[str]]
    # The entities whose passages answer the question, in reading order; its length is the hop count. A
    # two-hop question's second entity is the bridge: named in the first passage, stating the answer.
    path: Callable[[E], tuple[Entity, ...]] = _itself
    # Whether ``e`` has the facts the question needs (not every person founded an organisation).
    when: Callable[[E], bool] = _always
    # More phrasings for the ``train_varied`` split only, drawn together with ``phrasings`` by a generator
    # of their own, so the other files stay as they were. A model trained on a few templates per question
    # kind can key what it does on the template; these never reach the test split.
    training_phrasings: tuple[str, ...] = ()


# The answers a town, river, mountain or province is accepted under.
def _town(t: Town) -> list[str]:
    return [t.name]


def _river(r: River) -> list[str]:
    return [r.name, r.core, f"River {r.core}"]


def _mountain(m: Mountain) -> list[str]:
    return [m.name, m.core]


def _province(t: Town) -> list[str]:
    return [t.province, f"{t.province} Province"]


def _known(x: T | None) -> T:
    # Links filled in after an entity is built are typed optional; the row's ``when`` (or the generator,
    # which gives every mountain a first climber) guarantees them.
    assert x is not None
    return x


PERSON_ASKS: tuple[Ask[Person], ...] = (
    Ask(
        "person_birth_town",
        (
            "In which town was {e.name} born?",
            "Where was {e.name} born?",
            "What is the birthplace of {e.name}?",
        ),
        lambda p: _town(p.town),
        training_phrasings=(
            "{e.name} was born in which town?",
            "Name the hometown of {e.name}.",
            "What town was {e.name} born in?",
            "Where does {e.name} come from?",
        ),
    ),
    Ask(
        "person_birth_year",
        ("In which year was {e.name} born?", "When was {e.name} born?"),
        lambda p: [str(p.born)],
        training_phrasings=(
            "{e.name} was born in which year?",
            "Give the birth year of {e.name}.",
            "In what year was {e.name} born?",
        ),
    ),
    Ask(
        "person_org",
        ("Which organisation did {e.name} found?", "What organisation was founded by {e.name}?"),
        lambda p: [_known(p.org).name],
        when=lambda p: p.org is not None,
        training_phrasings=(
            "{e.name} founded which organisation?",
            "Name the organisation set up by {e.name}.",
            "What organisation was started by {e.name}?",
        ),
    ),
    Ask(
        "person_invention",
        ("What did {e.name} invent?",),
        lambda p: [_known(p.invention).name],
        when=lambda p: p.invention is not None,
        training_phrasings=(
            "{e.name} invented what?",
            "Name the invention of {e.name}.",
            "What is {e.name} known for inventing?",
        ),
    ),
    Ask(
        "birthplace_river",
        (
            "Which river flows through the birthplace of {e.name}?",
            "Which river flows through the town where {e.name} was born?",
        ),
        lambda p: _river(_known(p.town.river)),
        path=lambda p: (p, p.town),
        when=lambda p: p.town.river is not None,
        training_phrasings=(
            "{e.name} was born in a town on which river?",
            "Name the river that runs through the hometown of {e.name}.",
            "What river passes through the place {e.name} was born in?",
            "The town {e.name} came from lies on which river?",
        ),
    ),
    Ask(
        "birthplace_province",
        ("In which province is the town where {e.name} was born?", "In which province was {e.name} born?"),
        lambda p: _province(p.town),
        path=lambda p: (p, p.town),
        training_phrasings=(
            "{e.name}'s birthplace lies in which province?",
            "Name the province of the town {e.name} was born in.",
            "What province is the hometown of {e.name} in?",
            "The town where {e.name} was born belongs to which province?",
        ),
    ),
    Ask(
        "inventor_org",
        ("Which organisation was founded by the inventor of the {e.invention.name}?",),
        lambda p: [_known(p.org).name],
        # Read from the invention's passage first, but listed with the people: moving it would move its draw.
        path=lambda p: (_known(p.invention), p),
        when=lambda p: p.invention is not None and p.org is not None,
        training_phrasings=(
            "The person who invented the {e.invention.name} founded which organisation?",
            "Name the organisation set up by whoever invented the {e.invention.name}.",
            "What organisation did the {e.invention.name}'s inventor found?",
            "Which organisation was started by the creator of the {e.invention.name}?",
        ),
    ),
)

TOWN_ASKS: tuple[Ask[Town], ...] = (
    Ask(
        "town_river",
        ("Which river flows through {e.name}?",),
        lambda t: _river(_known(t.river)),
        when=lambda t: t.river is not None,
        training_phrasings=(
            "{e.name} lies on which river?",
            "Name the river that runs through {e.name}.",
            "What river passes through the town of {e.name}?",
        ),
    ),
    Ask(
        "town_province",
        ("In which province is {e.name}?", "{e.name} is a town in which province?"),
        _province,
        training_phrasings=(
            "Name the province that {e.name} belongs to.",
            "What province is {e.name} in?",
            "The town of {e.name} lies in which province?",
        ),
    ),
    Ask(
        "town_founded",
        ("In which year was {e.name} founded?", "When was the town of {e.name} founded?"),
        lambda t: [str(t.founded)],
        training_phrasings=(
            "{e.name} was founded in which year?",
            "Give the year {e.name} was founded.",
            "In what year was the town of {e.name} founded?",
        ),
    ),
)

RIVER_ASKS: tuple[Ask[River], ...] = (
    Ask(
        "river_source",
        ("On which mountain does the {e.name} rise?", "On which mountain is the source of the {e.name}?"),
        lambda r: _mountain(_known(r.source)),
        when=lambda r: r.source is not None,
        training_phrasings=(
            "The {e.name} rises on which mountain?",
            "Name the mountain where the {e.name} has its source.",
            "What mountain does the {e.name} flow from?",
        ),
    ),
    Ask(
        "river_source_climber",
        ("Who first climbed the mountain on which the {e.name} rises?",),
        lambda r: [_known(_known(r.source).climber).name],
        path=lambda r: (r, _known(r.source)),
        when=lambda r: r.source is not None,
        training_phrasings=(
            "The {e.name} rises on a mountain; who climbed it first?",
            "Name the first person to climb the mountain where the {e.name} has its source.",
            "Who made the first ascent of the mountain the {e.name} flows from?",
            "Which climber first reached the top of the {e.name}'s source mountain?",
        ),
    ),
)

MOUNTAIN_ASKS: tuple[Ask[Mountain], ...] = (
    Ask(
        "mountain_town",
        ("Near which town is {e.name}?", "{e.name} is near which town?"),
        lambda m: _town(m.town),
        training_phrasings=(
            "Name the town near {e.name}.",
            "What town lies near {e.name}?",
            "Which town is closest to {e.name}?",
        ),
    ),
    Ask(
        "mountain_climber",
        ("Who first climbed {e.name}?", "Who made the first ascent of {e.name}?"),
        lambda m: [_known(m.climber).name],
        training_phrasings=(
            "Name the first person to climb {e.name}.",
            "{e.name} was first climbed by whom?",
            "Which climber first reached the top of {e.name}?",
        ),
    ),
    Ask(
        "mountain_climb_year",
        ("In which year was {e.name} first climbed?", "When was the first ascent of {e.name}?"),
        lambda m: [str(m.climb_year)],
        training_phrasings=(
            "{e.name} was first climbed in which year?",
            "Give the year of the first ascent of {e.name}.",
            "In what year did someone first reach the top of {e.name}?",
        ),
    ),
    Ask(
        "climber_birth_town",
        ("In which town was the first person to climb {e.name} born?",),
        lambda m: _town(_known(m.climber).town),
        path=lambda m: (m, _known(m.climber)),
        training_phrasings=(
            "Where was the first climber of {e.name} born?",
            "{e.name} was first climbed by someone born in which town?",
            "Name the hometown of the person who made the first ascent of {e.name}.",
            "What town did the first person to reach the top of {e.name} come from?",
        ),
    ),
    Ask(
        "climber_birth_year",
        ("In which year was the first person to climb {e.name} born?",),
        lambda m: [str(_known(m.climber).born)],
        path=lambda m: (m, _known(m.climber)),
        training_phrasings=(
            "When was the first climber of {e.name} born?",
            "{e.name} was first climbed by someone born in which year?",
            "Give the birth year of the person who made the first ascent of {e.name}.",
            "In what year was the person who first reached the top of {e.name} born?",
        ),
    ),
)


ORG_ASKS: tuple[Ask[Org], ...] = (
    Ask(
        "org_founder",
        ("Who founded the {e.name}?", "Who was the founder of the {e.name}?"),
        lambda o: [o.founder.name],
        training_phrasings=(
            "The {e.name} was founded by whom?",
            "Name the founder of the {e.name}.",
            "Who set up the {e.name}?",
        ),
    ),
    Ask(
        "org_year",
        ("In which year was the {e.name} founded?", "When was the {e.name} founded?"),
        lambda o: [str(o.founded)],
        training_phrasings=(
            "The {e.name} was founded in which year?",
            "Give the year the {e.name} was founded.",
            "In what year was the {e.name} set up?",
        ),
    ),
    Ask(
        "org_hq",
        ("In which town is the {e.name} headquartered?", "Where are the headquarters of the {e.name}?"),
        lambda o: _town(o.town),
        training_phrasings=(
            "The {e.name} is based in which town?",
            "Name the town where the {e.name} has its headquarters.",
            "What town is home to the {e.name}?",
        ),
    ),
    Ask(
        "founder_birth_year",
        (
            "In which year was the founder of the {e.name} born?",
            "When was the person who founded the {e.name} born?",
        ),
        lambda o: [str(o.founder.born)],
        path=lambda o: (o, o.founder),
        training_phrasings=(
            "The {e.name} was founded by someone born in which year?",
            "Give the birth year of whoever founded the {e.name}.",
            "In what year was the {e.name}'s founder born?",
            "When was the person who set up the {e.name} born?",
        ),
    ),
    Ask(
        "founder_birth_town",
        (
            "In which town was the founder of the {e.name} born?",
            "Where was the founder of the {e.name} born?",
        ),
        lambda o: _town(o.founder.town),
        path=lambda o: (o, o.founder),
        training_phrasings=(
            "The {e.name} was founded by someone born in which town?",
            "Name the hometown of the person who set up the {e.name}.",
            "What town was the {e.name}'s founder born in?",
            "Where does the founder of the {e.name} come from?",
        ),
    ),
    Ask(
        "org_hq_province",
        ("In which province is the {e.name} headquartered?",),
        lambda o: _province(o.town),
        path=lambda o: (o, o.town),
        training_phrasings=(
            "The {e.name} has its headquarters in which province?",
            "Name the province where the {e.name} is based.",
            "What province is the home town of the {e.name} in?",
            "The town the {e.name} is based in belongs to which province?",
        ),
    ),
    Ask(
        "org_hq_river",
        ("Which river flows through the town where the {e.name} is headquartered?",),
        lambda o: _river(_known(o.town.river)),
        path=lambda o: (o, o.town),
        when=lambda o: o.town.river is not None,
        training_phrasings=(
            "The {e.name} is based in a town on which river?",
            "Name the river that runs through the town where the {e.name} has its headquarters.",
            "What river passes through the {e.name}'s home town?",
            "Which river flows through the town that is home to the {e.name}?",
        ),
    ),
)

INVENTION_ASKS: tuple[Ask[Invention], ...] = (
    Ask(
        "invention_inventor",
        ("Who invented the {e.name}?",),
        lambda i: [i.inventor.name],
        training_phrasings=(
            "The {e.name} was invented by whom?",
            "Name the inventor of the {e.name}.",
            "Who created the {e.name}?",
        ),
    ),
    Ask(
        "invention_year",
        ("In which year was the {e.name} invented?", "When was the {e.name} invented?"),
        lambda i: [str(i.year)],
        training_phrasings=(
            "The {e.name} was invented in which year?",
            "Give the year the {e.name} was invented.",
            "In what year was the {e.name} created?",
        ),
    ),
    Ask(
        "invention_town",
        ("In which town was the {e.name} first demonstrated?",),
        lambda i: _town(i.town),
        training_phrasings=(
            "Where was the {e.name} first demonstrated?",
            "Name the town where the {e.name} was first shown.",
            "What town saw the first demonstration of the {e.name}?",
        ),
    ),
    Ask(
        "inventor_birth_town",
        ("In which town was the inventor of the {e.name} born?",),
        lambda i: _town(i.inventor.town),
        path=lambda i: (i, i.inventor),
        training_phrasings=(
            "Where was the inventor of the {e.name} born?",
            "The {e.name} was invented by someone born in which town?",
            "Name the hometown of the person who invented the {e.name}.",
            "What town was the {e.name}'s inventor born in?",
        ),
    ),
    Ask(
        "inventor_birth_year",
        ("In which year was the inventor of the {e.name} born?",),
        lambda i: [str(i.inventor.born)],
        path=lambda i: (i, i.inventor),
        training_phrasings=(
            "When was the inventor of the {e.name} born?",
            "The {e.name} was invented by someone born in which year?",
            "Give the birth year of whoever invented the {e.name}.",
            "In what year was the {e.name}'s inventor born?",
        ),
    ),
)

EVENT_ASKS: tuple[Ask[Event], ...] = (
    Ask(
        "event_town",
        ("In which town was the {e.name} held?", "Where did the {e.name} take place?"),
        lambda e: _town(e.town),
        training_phrasings=(
            "The {e.name} was held in which town?",
            "Name the town that hosted the {e.name}.",
            "What town was the {e.name} held in?",
        ),
    ),
    Ask(
        "event_year",
        ("In which year was the {e.name} held?", "When did the {e.name} take place?"),
        lambda e: [str(e.year)],
        training_phrasings=(
            "The {e.name} was held in which year?",
            "Give the year of the {e.name}.",
            "In what year did the {e.name} take place?",
        ),
    ),
    Ask(
        "event_org",
        ("Which organisation organised the {e.name}?",),
        lambda e: [e.org.name],
        training_phrasings=(
            "The {e.name} was organised by which organisation?",
            "Name the organisation behind the {e.name}.",
            "What organisation runs the {e.name}?",
        ),
    ),
    Ask(
        "event_org_founder",
        ("Who founded the organisation that organised the {e.name}?",),
        lambda e: [e.org.founder.name],
        path=lambda e: (e, e.org),
        training_phrasings=(
            "The {e.name} was organised by an organisation founded by whom?",
            "Name the founder of the organisation behind the {e.name}.",
            "Who set up the organisation that runs the {e.name}?",
            "Who was the founder of the group that organised the {e.name}?",
        ),
    ),
    Ask(
        "event_org_hq",
        ("In which town is the organisation that organised the {e.name} headquartered?",),
        lambda e: _town(e.org.town),
        path=lambda e: (e, e.org),
        training_phrasings=(
            "Where is the organisation behind the {e.name} headquartered?",
            "The {e.name} was organised by an organisation based in which town?",
            "Name the home town of the organisation that organised the {e.name}.",
            "What town is the organiser of the {e.name} based in?",
        ),
    ),
    Ask(
        "event_town_river",
        ("Which river flows through the town where the {e.name} was held?",),
        lambda e: _river(_known(e.town.river)),
        path=lambda e: (e, e.town),
        when=lambda e: e.town.river is not None,
        training_phrasings=(
            "The {e.name} was held in a town on which river?",
            "Name the river that runs through the town where the {e.name} took place.",
            "What river passes through the town that hosted the {e.name}?",
            "Which river flows through the place where the {e.name} was held?",
        ),
    ),
)

# Each table with the ``Entities`` field it asks about, in the order :func:`candidates` draws them.
TABLES: tuple[tuple[str, tuple[Ask, ...]], ...] = (
    ("people", PERSON_ASKS),
    ("towns", TOWN_ASKS),
    ("rivers", RIVER_ASKS),
    ("mountains", MOUNTAIN_ASKS),
    ("orgs", ORG_ASKS),
    ("inventions", INVENTION_ASKS),
    ("events", EVENT_ASKS),
)
ALL_ASKS = tuple(ask for _, asks in TABLES for ask in asks)


def candidates(
    rng: random.Random, w: Entities
) -> tuple[dict[str, list[Candidate]], dict[str, list[Candidate]]]:
    """All candidate questions, grouped by template: (single-hop, two-hop)."""
    single: dict[str, list[Candidate]] = {}
    double: dict[str, list[Candidate]] = {}
    for field_name, asks in TABLES:
        entities: Sequence[Entity] = getattr(w, field_name)
        for e in entities:
            for ask in asks:
                if not ask.when(e):
                    continue
                path = ask.path(e)
                # A phrasing is drawn even when there is only one: the draw still advances the generator.
                question = rng.choice(ask.phrasings).format(e=e)
                bridge = path[-1].name if len(path) == 2 else None
                group = single if len(path) == 1 else double
                group.setdefault(ask.template, []).append(
                    Candidate(ask.template, question, ask.answers(e), [x.pid for x in path], e, bridge)
                )
    return single, double


def _round_robin(rng: random.Random, groups: dict[str, list[Candidate]], n: int) -> list[Candidate]:
    """Take ``n`` candidates, one template at a time, so rare templates are not drowned by common ones."""
    pools = {k: list(v) for k, v in sorted(groups.items())}
    for pool in pools.values():
        rng.shuffle(pool)
    total = sum(len(p) for p in pools.values())
    if n > total:
        raise ValueError(f"asked for {n} questions but the world only supports {total}; add entities")
    picked: list[Candidate] = []
    while len(picked) < n:
        for key in list(pools):
            if len(picked) == n:
                break
            if pools[key]:
                picked.append(pools[key].pop())
            else:
                del pools[key]
    return picked


def sample_and_split(
    rng: random.Random,
    single: dict[str, list[Candidate]],
    double: dict[str, list[Candidate]],
    n_train: int,
    n_test: int,
    two_hop_fraction: float,
) -> tuple[list[Candidate], list[Candidate]]:
    n_two = round((n_train + n_test) * two_hop_fraction)
    ones = _round_robin(rng, single, n_train + n_test - n_two)
    twos = _round_robin(rng, double, n_two)
    rng.shuffle(ones)
    rng.shuffle(twos)
    # The test split gets the same single/two-hop mix as the whole; questions never repeat across splits.
    test_two = round(n_test * two_hop_fraction)
    test_c = ones[: n_test - test_two] + twos[:test_two]
    train_c = ones[n_test - test_two :] + twos[test_two:]
    rng.shuffle(test_c)
    rng.shuffle(train_c)

    return train_c, test_c


def vary_training_phrasings(rng: random.Random, train: list[Candidate]) -> list[Candidate]:
    """``train`` with each question whose kind has training phrasings phrased anew, drawn from all of them."""
    asks = {ask.template: ask for ask in ALL_ASKS}
    varied = []
    for c in train:
        ask = asks[c.template]
        if ask.training_phrasings:
            c = replace(c, question=rng.choice(ask.phrasings + ask.training_phrasings).format(e=c.subject))
        varied.append(c)
    return varied
