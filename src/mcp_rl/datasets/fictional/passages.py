"""The passage text of each entity: an intro, the facts the questions ask about, and filler to vary length.

Every fact a question asks about is written with the entity's canonical name.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence

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

_DIRECTIONS = ["north", "south", "east", "west"]
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


def entity_passages(rng: random.Random, w: Entities) -> Iterator[tuple[str, Entity, str]]:
    """``(kind, entity, text)`` for every entity, in corpus order (the order of the draws)."""
    for t in w.towns:
        yield "town", t, _town_text(rng, t)
    for r in w.rivers:
        yield "river", r, _river_text(rng, r)
    for m in w.mountains:
        yield "mountain", m, _mountain_text(rng, m)
    for p in w.people:
        yield "person", p, _person_text(rng, p)
    for o in w.orgs:
        yield "organisation", o, _org_text(rng, o)
    for inv in w.inventions:
        yield "invention", inv, _invention_text(rng, inv)
    for e in w.events:
        yield "event", e, _event_text(rng, e)


def _town_text(rng: random.Random, t: Town) -> str:
    adj = rng.choice(_TOWN_ADJ)
    intro = rng.choice(
        [
            f"{t.name} is {_article(adj)} {adj} town in the province of {t.province}.",
            f"The town of {t.name} lies in the province of {t.province}.",
            f"{t.name} is a town in {t.province} Province.",
        ]
    )
    facts = [
        rng.choice(
            [
                f"It was founded in {t.founded}.",
                f"The town was founded in {t.founded} as {_article(t.origin)} {t.origin}.",
                f"Records date its founding to {t.founded}, when it began as "
                f"{_article(t.origin)} {t.origin}.",
            ]
        ),
        f"It has a population of about {t.population:,}.",
    ]
    if t.river is not None:
        facts.append(
            rng.choice(
                [
                    f"The {t.river.name} flows through the town.",
                    f"{t.name} lies on the banks of the {t.river.name}.",
                    f"The {t.river.name} runs through the centre of {t.name}.",
                ]
            )
        )
    if t.mountain is not None:
        facts.append(f"{t.mountain.name} rises to the {rng.choice(_DIRECTIONS)} of the town.")
    return _compose(rng, intro, facts, _TOWN_FILLER)


def _river_text(rng: random.Random, r: River) -> str:
    towns = _join([t.name for t in r.towns])
    intro = rng.choice(
        [
            f"The {r.name} is a river that flows through {towns}.",
            f"The {r.name} flows through {towns}.",
            f"The {r.name} is a river in the region; along its course it passes through {towns}.",
        ]
    )
    facts = [f"It is {r.length_km} kilometres long."]
    if r.source is not None:
        facts.append(
            rng.choice(
                [
                    f"It rises on the slopes of {r.source.name}.",
                    f"Its source lies on {r.source.name}.",
                    f"The river rises on {r.source.name}.",
                ]
            )
        )
    return _compose(rng, intro, facts, _RIVER_FILLER)


def _mountain_text(rng: random.Random, m: Mountain) -> str:
    assert m.climber is not None
    intro = rng.choice(
        [
            f"{m.name} is a mountain near {m.town.name}, rising to {m.height_m:,} metres.",
            f"{m.name} is a {m.height_m:,}-metre peak near the town of {m.town.name}.",
            f"Rising to {m.height_m:,} metres, {m.name} stands near the town of {m.town.name}.",
        ]
    )
    facts = [
        rng.choice(
            [
                f"It was first climbed by {m.climber.name} in {m.climb_year}.",
                f"The first ascent was made in {m.climb_year} by {m.climber.name}.",
                f"{m.climber.name} reached its summit in {m.climb_year}, the first person to do so.",
            ]
        )
    ]
    return _compose(rng, intro, facts, _MOUNTAIN_FILLER)


def _person_text(rng: random.Random, p: Person) -> str:
    occ = f"{_article(p.occupation)} {p.occupation}"
    intro = rng.choice(
        [
            f"{p.name} ({p.born}–{p.died}) was {occ} born in {p.town.name}.",
            f"{p.name} was {occ} born in {p.town.name} in {p.born}. {_cap(p.pron)} died in {p.died}.",
            f"Born in {p.town.name} in {p.born}, {p.name} became a well-known {p.occupation}. "
            f"{_cap(p.pron)} died in {p.died}.",
            f"{p.name} (born {p.born} in {p.town.name}, died {p.died}) was {occ}.",
            f"{p.name} was born in {p.born} in the town of {p.town.name} and worked as {occ} "
            f"until {p.poss} death in {p.died}.",
        ]
    )
    pron, cpron = p.pron, _cap(p.pron)
    facts: list[str] = []
    if p.org is not None:
        o = p.org
        facts.append(
            rng.choice(
                [
                    f"In {o.founded} {pron} founded the {o.name}.",
                    f"{cpron} founded the {o.name} in {o.founded}.",
                    f"{cpron} is best known as the founder of the {o.name}, which {pron} established in "
                    f"{o.founded}.",
                ]
            )
        )
    if p.invention is not None:
        inv = p.invention
        facts.append(
            rng.choice(
                [
                    f"{cpron} invented the {inv.name} in {inv.year}.",
                    f"{cpron} is credited with inventing the {inv.name} in {inv.year}.",
                    f"In {inv.year} {pron} invented the {inv.name}.",
                ]
            )
        )
    if p.mountain is not None:
        m = p.mountain
        facts.append(
            rng.choice(
                [
                    f"In {m.climb_year} {pron} made the first ascent of {m.name}.",
                    f"{cpron} was the first person to climb {m.name}, reaching the summit in {m.climb_year}.",
                ]
            )
        )
    filler = [
        s.format(Pron=cpron, pron=pron, Poss=_cap(p.poss), poss=p.poss, obj=p.obj) for s in _PERSON_FILLER
    ]
    return _compose(rng, intro, facts, filler)


def _org_text(rng: random.Random, o: Org) -> str:
    intro = rng.choice(
        [
            f"The {o.name} is {_article(o.desc)} {o.desc} founded in {o.founded} by {o.founder.name}.",
            f"The {o.name} is {_article(o.desc)} {o.desc}. "
            f"It was founded by {o.founder.name} in {o.founded}.",
            f"Founded in {o.founded} by {o.founder.name}, the {o.name} is {_article(o.desc)} {o.desc}.",
        ]
    )
    facts = [
        rng.choice(
            [
                f"Its headquarters are in {o.town.name}.",
                f"It is headquartered in {o.town.name}.",
                f"The {o.name} has its headquarters in {o.town.name}.",
            ]
        )
    ]
    return _compose(rng, intro, facts, _ORG_FILLER)


def _invention_text(rng: random.Random, inv: Invention) -> str:
    p = inv.inventor
    intro = rng.choice(
        [
            f"The {inv.name} is {_article(inv.desc)} {inv.desc} invented by {p.name} in {inv.year}.",
            f"The {inv.name} was invented in {inv.year} by {p.name}.",
            f"Invented by {p.name} in {inv.year}, the {inv.name} is {_article(inv.desc)} {inv.desc}.",
        ]
    )
    facts = [
        rng.choice(
            [
                f"It was first demonstrated in {inv.town.name}.",
                f"The first public demonstration took place in {inv.town.name}.",
            ]
        )
    ]
    return _compose(rng, intro, facts, _INVENTION_FILLER)


def _event_text(rng: random.Random, e: Event) -> str:
    intro = rng.choice(
        [
            f"The {e.name} was {_article(e.desc)} {e.desc} held in {e.town.name} in {e.year}.",
            f"The {e.name} took place in {e.town.name} in {e.year}.",
            f"In {e.year}, {e.town.name} hosted the {e.name}, {_article(e.desc)} {e.desc}.",
        ]
    )
    facts = [
        rng.choice(
            [
                f"It was organised by the {e.org.name}.",
                f"The {e.org.name} organised the event.",
            ]
        )
    ]
    return _compose(rng, intro, facts, _EVENT_FILLER)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]
