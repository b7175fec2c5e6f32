"""The passage text of each entity: an intro, the facts the questions ask about, and filler to vary length.

Each kind of passage is one row of a table (:class:`Page`): its intro phrasings, its fact sentences and its
filler. Every fact a question asks about is written with the entity's canonical name. The draws happen in
a fixed order (fields, intro, each fact in turn, then the filler and shuffle in :func:`_compose`), which is
what keeps the shipped corpus reproducible.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
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

_DIRECTIONS = ("north", "south", "east", "west")
_TOWN_ADJ = ["small", "quiet", "busy", "hillside", "walled", "market"]

_PERSON_FILLER = [
    "{Pron} was known among contemporaries for a patient, methodical temperament.",
    "Several of {poss} notebooks survive in private collections.",
    "{Pron} corresponded widely and kept detailed records of {poss} work.",
    "Later writers have described {obj} as stubborn but generous.",
    "{Poss} early education was largely informal and self-directed.",
    "A portrait of {obj} hangs in a small local museum.",
    "{Pron} trained several apprentices who carried on {poss} methods.",
    "{Poss} reputation grew slowly and peaked only late in life.",
    "{Pron} published little, preferring to teach in person.",
    "{Pron} married late and had two children.",
    "Accounts of {poss} life differ on many details, but the main facts are well attested.",
    "{Pron} rarely sought public office and declined several honours.",
    "Friends remembered {obj} as a tireless walker and a keen gardener.",
    "Much of {poss} correspondence was lost in a fire.",
]
_TOWN_FILLER = [
    "The town is known for its slate roofs and narrow stone bridges.",
    "A weekly market is held in the main square.",
    "Its economy has long depended on wool, timber and small workshops.",
    "The old quarter keeps much of its original street plan.",
    "Local tradition holds a lantern procession each winter.",
    "Most of its buildings are made of grey local stone.",
    "The surrounding farmland produces barley, apples and flax.",
    "A small library and a covered market stand near the centre.",
    "The town's coat of arms shows a heron and a key.",
    "It is linked to neighbouring settlements by old carriage roads.",
    "Winters there are long and the summers mild.",
    "Its church tower is the tallest building for many miles.",
]
_RIVER_FILLER = [
    "Its waters are slow in summer and swift after the spring thaw.",
    "Mills once lined much of its course.",
    "The river is navigable by small boats along its lower reaches.",
    "Several old stone bridges cross it.",
    "Its valley is noted for orchards and water meadows.",
    "Floods were common until embankments were built.",
    "Otters and herons are common along its banks.",
    "It eventually empties into the sea through a wide, marshy estuary.",
    "Anglers prize its upper reaches for trout.",
]
_MOUNTAIN_FILLER = [
    "Its upper slopes are bare rock and stay under snow for much of the year.",
    "Pine forest covers the lower flanks.",
    "The usual route to the summit follows a long southern ridge.",
    "Shepherds have grazed its lower meadows for centuries.",
    "Its summit offers wide views over the surrounding valleys.",
    "Sudden storms make it dangerous in late autumn.",
    "A small stone hut stands below the final climb.",
    "Glaciers once covered its northern face.",
]
_ORG_FILLER = [
    "It began with a handful of members meeting in rented rooms.",
    "Its archive holds letters, ledgers and minutes going back to its first years.",
    "Membership was at first restricted but later opened to the public.",
    "It publishes a yearly report on its activities.",
    "The organisation grew steadily through the following decades.",
    "It has been reorganised several times but never dissolved.",
    "Its emblem is a silver wheel on a green field.",
    "Its members meet twice a year in a general assembly.",
    "It funds apprenticeships and small research grants.",
]
_INVENTION_FILLER = [
    "Early versions were heavy and expensive to build.",
    "The design was copied widely within a few decades.",
    "It was improved by several later makers.",
    "Only a few original examples survive.",
    "The device made a common task far faster and cheaper.",
    "Its basic principle is still taught in technical schools.",
    "Contemporary reports describe it as ingenious but fragile.",
    "The original drawings are kept in a private archive.",
]
_EVENT_FILLER = [
    "It drew visitors from across the region.",
    "Contemporary newspapers reported large crowds.",
    "The programme included lectures, competitions and a closing dinner.",
    "It lasted several days and ended with a procession.",
    "Accounts of it survive in letters and pamphlets.",
    "It was considered a great success and widely imitated.",
    "Bad weather disrupted part of the programme.",
    "Several of the participants later became well known.",
]

MIN_WORDS = 40
MAX_WORDS = 90


def _compose(rng: random.Random, intro: str, facts: list[str], filler: list[str]) -> str:
    """Intro first, then facts and filler in a random order, padded to a random length within bounds."""
    target = rng.randint(48, 78)
    body = list(facts)
    words = len(intro.split()) + sum(len(s.split()) for s in body)
    pool = list(filler)
    rng.shuffle(pool)
    for sentence in pool:
        if words >= target:
            break
        n = len(sentence.split())
        if words + n <= MAX_WORDS:
            body.append(sentence)
            words += n
    rng.shuffle(body)
    return " ".join([intro, *body])


def _always(e: Entity) -> bool:
    return True


def _no_fields(rng: random.Random, e: Entity) -> dict[str, str]:
    return {}


@dataclass(frozen=True)
class Sentence(Generic[E]):
    """One sentence of a passage: str.format templates over ``e`` and the page's fields; one is drawn."""

    phrasings: tuple[str, ...]
    # Whether the entity has the fact (not every town lies on a river).
    when: Callable[[E], bool] = _always


@dataclass(frozen=True)
class Page(Generic[E]):
    """One kind of passage, about an entity ``e`` of type ``E``."""

    kind: str
    intros: tuple[str, ...]
    facts: tuple[Sentence[E], ...]
    filler: Sequence[str]
    # Extra template fields (articles, pronouns); computed, and for towns drawn, before the intro.
    fields: Callable[[random.Random, E], dict[str, str]] = _no_fields


def _a(word: str) -> str:
    return f"{_article(word)} {word}"


def _a_desc(rng: random.Random, e: Org | Invention | Event) -> dict[str, str]:
    return {"a_desc": _a(e.desc)}


def _person_fields(rng: random.Random, p: Person) -> dict[str, str]:
    return {
        "a_occ": _a(p.occupation),
        "pron": p.pron,
        "Pron": _cap(p.pron),
        "poss": p.poss,
        "Poss": _cap(p.poss),
        "obj": p.obj,
    }


TOWN_PAGE: Page[Town] = Page(
    "town",
    (
        "{e.name} is {a_adj} town in the province of {e.province}.",
        "The town of {e.name} lies in the province of {e.province}.",
        "{e.name} is a town in {e.province} Province.",
    ),
    (
        Sentence(
            (
                "It was founded in {e.founded}.",
                "The town was founded in {e.founded} as {a_origin}.",
                "Records date its founding to {e.founded}, when it began as {a_origin}.",
            )
        ),
        Sentence(("It has a population of about {e.population:,}.",)),
        Sentence(
            (
                "The {e.river.name} flows through the town.",
                "{e.name} lies on the banks of the {e.river.name}.",
                "The {e.river.name} runs through the centre of {e.name}.",
            ),
            when=lambda t: t.river is not None,
        ),
        # One phrasing per direction, so drawing the phrasing draws the direction.
        Sentence(
            tuple(f"{{e.mountain.name}} rises to the {d} of the town." for d in _DIRECTIONS),
            when=lambda t: t.mountain is not None,
        ),
    ),
    _TOWN_FILLER,
    # The adjective is drawn even when the intro drawn next does not use it.
    fields=lambda rng, t: {"a_adj": _a(rng.choice(_TOWN_ADJ)), "a_origin": _a(t.origin)},
)

RIVER_PAGE: Page[River] = Page(
    "river",
    (
        "The {e.name} is a river that flows through {towns}.",
        "The {e.name} flows through {towns}.",
        "The {e.name} is a river in the region; along its course it passes through {towns}.",
    ),
    (
        Sentence(("It is {e.length_km} kilometres long.",)),
        Sentence(
            (
                "It rises on the slopes of {e.source.name}.",
                "Its source lies on {e.source.name}.",
                "The river rises on {e.source.name}.",
            ),
            when=lambda r: r.source is not None,
        ),
    ),
    _RIVER_FILLER,
    fields=lambda rng, r: {"towns": _join([t.name for t in r.towns])},
)

MOUNTAIN_PAGE: Page[Mountain] = Page(
    "mountain",
    (
        "{e.name} is a mountain near {e.town.name}, rising to {e.height_m:,} metres.",
        "{e.name} is a {e.height_m:,}-metre peak near the town of {e.town.name}.",
        "Rising to {e.height_m:,} metres, {e.name} stands near the town of {e.town.name}.",
    ),
    (
        Sentence(
            (
                "It was first climbed by {e.climber.name} in {e.climb_year}.",
                "The first ascent was made in {e.climb_year} by {e.climber.name}.",
                "{e.climber.name} reached its summit in {e.climb_year}, the first person to do so.",
            )
        ),
    ),
    _MOUNTAIN_FILLER,
)

PERSON_PAGE: Page[Person] = Page(
    "person",
    (
        "{e.name} ({e.born}–{e.died}) was {a_occ} born in {e.town.name}.",
        "{e.name} was {a_occ} born in {e.town.name} in {e.born}. {Pron} died in {e.died}.",
        "Born in {e.town.name} in {e.born}, {e.name} became a well-known {e.occupation}. "
        "{Pron} died in {e.died}.",
        "{e.name} (born {e.born} in {e.town.name}, died {e.died}) was {a_occ}.",
        "{e.name} was born in {e.born} in the town of {e.town.name} and worked as {a_occ} "
        "until {poss} death in {e.died}.",
    ),
    (
        Sentence(
            (
                "In {e.org.founded} {pron} founded the {e.org.name}.",
                "{Pron} founded the {e.org.name} in {e.org.founded}.",
                "{Pron} is best known as the founder of the {e.org.name}, which {pron} established in "
                "{e.org.founded}.",
            ),
            when=lambda p: p.org is not None,
        ),
        Sentence(
            (
                "{Pron} invented the {e.invention.name} in {e.invention.year}.",
                "{Pron} is credited with inventing the {e.invention.name} in {e.invention.year}.",
                "In {e.invention.year} {pron} invented the {e.invention.name}.",
            ),
            when=lambda p: p.invention is not None,
        ),
        Sentence(
            (
                "In {e.mountain.climb_year} {pron} made the first ascent of {e.mountain.name}.",
                "{Pron} was the first person to climb {e.mountain.name}, reaching the summit in "
                "{e.mountain.climb_year}.",
            ),
            when=lambda p: p.mountain is not None,
        ),
    ),
    _PERSON_FILLER,
    fields=_person_fields,
)

ORG_PAGE: Page[Org] = Page(
    "organisation",
    (
        "The {e.name} is {a_desc} founded in {e.founded} by {e.founder.name}.",
        "The {e.name} is {a_desc}. It was founded by {e.founder.name} in {e.founded}.",
        "Founded in {e.founded} by {e.founder.name}, the {e.name} is {a_desc}.",
    ),
    (
        Sentence(
            (
                "Its headquarters are in {e.town.name}.",
                "It is headquartered in {e.town.name}.",
                "The {e.name} has its headquarters in {e.town.name}.",
            )
        ),
    ),
    _ORG_FILLER,
    fields=_a_desc,
)

INVENTION_PAGE: Page[Invention] = Page(
    "invention",
    (
        "The {e.name} is {a_desc} invented by {e.inventor.name} in {e.year}.",
        "The {e.name} was invented in {e.year} by {e.inventor.name}.",
        "Invented by {e.inventor.name} in {e.year}, the {e.name} is {a_desc}.",
    ),
    (
        Sentence(
            (
                "It was first demonstrated in {e.town.name}.",
                "The first public demonstration took place in {e.town.name}.",
            )
        ),
    ),
    _INVENTION_FILLER,
    fields=_a_desc,
)

EVENT_PAGE: Page[Event] = Page(
    "event",
    (
        "The {e.name} was {a_desc} held in {e.town.name} in {e.year}.",
        "The {e.name} took place in {e.town.name} in {e.year}.",
        "In {e.year}, {e.town.name} hosted the {e.name}, {a_desc}.",
    ),
    (Sentence(("It was organised by the {e.org.name}.", "The {e.org.name} organised the event.")),),
    _EVENT_FILLER,
    fields=_a_desc,
)


def entity_passages(rng: random.Random, w: Entities) -> Iterator[tuple[str, Entity, str]]:
    """``(kind, entity, text)`` for every entity, in corpus order (the order of the draws)."""
    pages: tuple[tuple[Sequence[Entity], Page], ...] = (
        (w.towns, TOWN_PAGE),
        (w.rivers, RIVER_PAGE),
        (w.mountains, MOUNTAIN_PAGE),
        (w.people, PERSON_PAGE),
        (w.orgs, ORG_PAGE),
        (w.inventions, INVENTION_PAGE),
        (w.events, EVENT_PAGE),
    )
    for entities, page in pages:
        for e in entities:
            yield page.kind, e, _text(rng, page, e)


def _text(rng: random.Random, page: Page[E], e: E) -> str:
    fields = {"e": e, **page.fields(rng, e)}
    intro = _say(rng, page.intros, fields)
    facts = [_say(rng, s.phrasings, fields) for s in page.facts if s.when(e)]
    return _compose(rng, intro, facts, [s.format(**fields) for s in page.filler])


def _say(rng: random.Random, phrasings: tuple[str, ...], fields: dict[str, object]) -> str:
    # A sentence with a single phrasing takes no draw (unlike a question's), as the shipped corpus was made.
    phrasing = phrasings[0] if len(phrasings) == 1 else rng.choice(phrasings)
    return phrasing.format(**fields)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]
