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
from dataclasses import dataclass
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
    ),
    Ask(
        "person_birth_year",
        ("In which year was {e.name} born?", "When was {e.name} born?"),
        lambda p: [str(p.born)],
    ),
    Ask(
        "person_org",
        ("Which organisation did {e.name} found?", "What organisation was founded by {e.name}?"),
        lambda p: [_known(p.org).name],
        when=lambda p: p.org is not None,
    ),
    Ask(
        "person_invention",
        ("What did {e.name} invent?",),
        lambda p: [_known(p.invention).name],
        when=lambda p: p.invention is not None,
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
    ),
    Ask(
        "birthplace_province",
        ("In which province is the town where {e.name} was born?", "In which province was {e.name} born?"),
        lambda p: _province(p.town),
        path=lambda p: (p, p.town),
    ),
    Ask(
        "inventor_org",
        ("Which organisation was founded by the inventor of the {e.invention.name}?",),
        lambda p: [_known(p.org).name],
        # Read from the invention's passage first, but listed with the people: moving it would move its draw.
        path=lambda p: (_known(p.invention), p),
        when=lambda p: p.invention is not None and p.org is not None,
    ),
)

TOWN_ASKS: tuple[Ask[Town], ...] = (
    Ask(
        "town_river",
        ("Which river flows through {e.name}?",),
        lambda t: _river(_known(t.river)),
        when=lambda t: t.river is not None,
    ),
    Ask(
        "town_province",
        ("In which province is {e.name}?", "{e.name} is a town in which province?"),
        _province,
    ),
    Ask(
        "town_founded",
        ("In which year was {e.name} founded?", "When was the town of {e.name} founded?"),
        lambda t: [str(t.founded)],
    ),
)

RIVER_ASKS: tuple[Ask[River], ...] = (
    Ask(
        "river_source",
        ("On which mountain does the {e.name} rise?", "On which mountain is the source of the {e.name}?"),
        lambda r: _mountain(_known(r.source)),
        when=lambda r: r.source is not None,
    ),
    Ask(
        "river_source_climber",
        ("Who first climbed the mountain on which the {e.name} rises?",),
        lambda r: [_known(_known(r.source).climber).name],
        path=lambda r: (r, _known(r.source)),
        when=lambda r: r.source is not None,
    ),
)

MOUNTAIN_ASKS: tuple[Ask[Mountain], ...] = (
    Ask(
        "mountain_town",
        ("Near which town is {e.name}?", "{e.name} is near which town?"),
        lambda m: _town(m.town),
    ),
    Ask(
        "mountain_climber",
        ("Who first climbed {e.name}?", "Who made the first ascent of {e.name}?"),
        lambda m: [_known(m.climber).name],
    ),
    Ask(
        "mountain_climb_year",
        ("In which year was {e.name} first climbed?", "When was the first ascent of {e.name}?"),
        lambda m: [str(m.climb_year)],
    ),
    Ask(
        "climber_birth_town",
        ("In which town was the first person to climb {e.name} born?",),
        lambda m: _town(_known(m.climber).town),
        path=lambda m: (m, _known(m.climber)),
    ),
    Ask(
        "climber_birth_year",
        ("In which year was the first person to climb {e.name} born?",),
        lambda m: [str(_known(m.climber).born)],
        path=lambda m: (m, _known(m.climber)),
    ),
)


ORG_ASKS: tuple[Ask[Org], ...] = (
    Ask(
        "org_founder",
        ("Who founded the {e.name}?", "Who was the founder of the {e.name}?"),
        lambda o: [o.founder.name],
    ),
    Ask(
        "org_year",
        ("In which year was the {e.name} founded?", "When was the {e.name} founded?"),
        lambda o: [str(o.founded)],
    ),
    Ask(
        "org_hq",
        ("In which town is the {e.name} headquartered?", "Where are the headquarters of the {e.name}?"),
        lambda o: _town(o.town),
    ),
    Ask(
        "founder_birth_year",
        (
            "In which year was the founder of the {e.name} born?",
            "When was the person who founded the {e.name} born?",
        ),
        lambda o: [str(o.founder.born)],
        path=lambda o: (o, o.founder),
    ),
    Ask(
        "founder_birth_town",
        (
            "In which town was the founder of the {e.name} born?",
            "Where was the founder of the {e.name} born?",
        ),
        lambda o: _town(o.founder.town),
        path=lambda o: (o, o.founder),
    ),
    Ask(
        "org_hq_province",
        ("In which province is the {e.name} headquartered?",),
        lambda o: _province(o.town),
        path=lambda o: (o, o.town),
    ),
    Ask(
        "org_hq_river",
        ("Which river flows through the town where the {e.name} is headquartered?",),
        lambda o: _river(_known(o.town.river)),
        path=lambda o: (o, o.town),
        when=lambda o: o.town.river is not None,
    ),
)

INVENTION_ASKS: tuple[Ask[Invention], ...] = (
    Ask("invention_inventor", ("Who invented the {e.name}?",), lambda i: [i.inventor.name]),
    Ask(
        "invention_year",
        ("In which year was the {e.name} invented?", "When was the {e.name} invented?"),
        lambda i: [str(i.year)],
    ),
    Ask("invention_town", ("In which town was the {e.name} first demonstrated?",), lambda i: _town(i.town)),
    Ask(
        "inventor_birth_town",
        ("In which town was the inventor of the {e.name} born?",),
        lambda i: _town(i.inventor.town),
        path=lambda i: (i, i.inventor),
    ),
    Ask(
        "inventor_birth_year",
        ("In which year was the inventor of the {e.name} born?",),
        lambda i: [str(i.inventor.born)],
        path=lambda i: (i, i.inventor),
    ),
)

EVENT_ASKS: tuple[Ask[Event], ...] = (
    Ask(
        "event_town",
        ("In which town was the {e.name} held?", "Where did the {e.name} take place?"),
        lambda e: _town(e.town),
    ),
    Ask(
        "event_year",
        ("In which year was the {e.name} held?", "When did the {e.name} take place?"),
        lambda e: [str(e.year)],
    ),
    Ask("event_org", ("Which organisation organised the {e.name}?",), lambda e: [e.org.name]),
    Ask(
        "event_org_founder",
        ("Who founded the organisation that organised the {e.name}?",),
        lambda e: [e.org.founder.name],
        path=lambda e: (e, e.org),
    ),
    Ask(
        "event_org_hq",
        ("In which town is the organisation that organised the {e.name} headquartered?",),
        lambda e: _town(e.org.town),
        path=lambda e: (e, e.org),
    ),
    Ask(
        "event_town_river",
        ("Which river flows through the town where the {e.name} was held?",),
        lambda e: _river(_known(e.town.river)),
        path=lambda e: (e, e.town),
        when=lambda e: e.town.river is not None,
    ),
)


def candidates(
    rng: random.Random, w: Entities
) -> tuple[dict[str, list[Candidate]], dict[str, list[Candidate]]]:
    """All candidate questions, grouped by template: (single-hop, two-hop)."""
    single: dict[str, list[Candidate]] = {}
    double: dict[str, list[Candidate]] = {}
    tables: tuple[tuple[Sequence[Entity], tuple[Ask, ...]], ...] = (
        (w.people, PERSON_ASKS),
        (w.towns, TOWN_ASKS),
        (w.rivers, RIVER_ASKS),
        (w.mountains, MOUNTAIN_ASKS),
        (w.orgs, ORG_ASKS),
        (w.inventions, INVENTION_ASKS),
        (w.events, EVENT_ASKS),
    )
    for entities, asks in tables:
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
                    Candidate(ask.template, question, ask.answers(e), [x.pid for x in path], bridge)
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
