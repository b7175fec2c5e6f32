"""The entities of the fictional world (towns, rivers, mountains, people, organisations, inventions, events)
and the draws that create them and link them together."""

from __future__ import annotations

import random
from dataclasses import dataclass

from mcp_rl.datasets.fictional.names import FIRST_ENDS, PLAIN_ENDS, SUR_ENDS, TOWN_ENDS, Namer


@dataclass
class Town:
    name: str
    province: str
    founded: int
    population: int
    origin: str
    river: River | None = None
    mountain: Mountain | None = None
    pid: str = ""


@dataclass
class River:
    name: str  # "Selm River"
    core: str  # "Selm"
    length_km: int
    towns: list[Town]
    source: Mountain | None = None
    pid: str = ""


@dataclass
class Mountain:
    name: str  # "Mount Arvel"
    core: str
    height_m: int
    town: Town
    climber: Person | None = None
    climb_year: int = 0
    pid: str = ""


@dataclass
class Person:
    name: str
    female: bool
    born: int
    died: int
    town: Town
    occupation: str
    org: Org | None = None
    invention: Invention | None = None
    mountain: Mountain | None = None
    pid: str = ""

    @property
    def pron(self) -> str:
        return "she" if self.female else "he"

    @property
    def poss(self) -> str:
        return "her" if self.female else "his"

    @property
    def obj(self) -> str:
        return "her" if self.female else "him"


@dataclass
class Org:
    name: str  # "Kessin Guild"
    desc: str
    founder: Person
    founded: int
    town: Town
    pid: str = ""


@dataclass
class Invention:
    name: str  # "Tolvane Loom"
    desc: str
    inventor: Person
    year: int
    town: Town
    pid: str = ""


@dataclass
class Event:
    name: str  # "Ostrel Fair"
    desc: str
    town: Town
    year: int
    org: Org
    pid: str = ""


# Everything that has a passage: a name (its title) and a passage id (its line in the corpus).
Entity = Town | River | Mountain | Person | Org | Invention | Event


@dataclass
class Entities:
    towns: list[Town]
    rivers: list[River]
    mountains: list[Mountain]
    people: list[Person]
    orgs: list[Org]
    inventions: list[Invention]
    events: list[Event]


# ---------------------------------------------------------------------------------------------------------
# Vocabulary

_OCCUPATIONS = (  # noqa: SIM905
    "cartographer clockmaker physician engineer poet merchant astronomer botanist architect mathematician "
    "painter shipwright chemist historian composer judge glassmaker surveyor printer explorer "
    "weaver apothecary teacher geologist sculptor navigator"
).split()
_ORG_KINDS = [
    ("Guild", "craft guild"),
    ("Society", "learned society"),
    ("Company", "trading company"),
    ("Academy", "academy of arts and sciences"),
    ("Bank", "savings bank"),
    ("Institute", "research institute"),
    ("Brotherhood", "mutual aid brotherhood"),
    ("League", "league of merchants"),
    ("Foundation", "charitable foundation"),
    ("Circle", "literary circle"),
    ("Union", "workers' union"),
    ("Conservatory", "music school"),
]
_DEVICES = [
    ("Loom", "weaving machine"),
    ("Lantern", "signal lantern"),
    ("Engine", "steam engine"),
    ("Compass", "navigational compass"),
    ("Pump", "water pump"),
    ("Lens", "optical lens"),
    ("Kiln", "brick kiln"),
    ("Sextant", "surveying instrument"),
    ("Telegraph", "signalling telegraph"),
    ("Bellows", "forge bellows"),
    ("Plough", "iron plough"),
    ("Valve", "safety valve"),
    ("Gauge", "pressure gauge"),
    ("Barometer", "mercury barometer"),
    ("Lathe", "turning lathe"),
    ("Harrow", "farm harrow"),
]
_EVENT_KINDS = [
    ("Fair", "trade fair"),
    ("Festival", "music festival"),
    ("Congress", "scientific congress"),
    ("Exhibition", "industrial exhibition"),
    ("Regatta", "rowing regatta"),
    ("Assembly", "public assembly"),
    ("Symposium", "symposium on natural philosophy"),
    ("Tournament", "chess tournament"),
    ("Conference", "conference on trade"),
    ("Pageant", "historical pageant"),
]
_ORIGINS = [
    "river crossing",
    "trading post",
    "monastery settlement",
    "fortified village",
    "mining camp",
    "fishing village",
    "market settlement",
    "border garrison",
]


def build_entities(
    rng: random.Random,
    n_people: int,
    n_towns: int,
    n_rivers: int,
    n_mountains: int,
    n_orgs: int,
    n_inventions: int,
    n_events: int,
    n_provinces: int,
) -> Entities:
    """Draw every entity and its facts from ``rng``; the draws come first, before any passage text."""
    namer = Namer(rng)

    provinces = [namer.unique((2, 2), PLAIN_ENDS) for _ in range(n_provinces)]
    towns = [
        Town(
            name=namer.unique((2, 2), TOWN_ENDS),
            province=rng.choice(provinces),
            founded=rng.randint(600, 1500),
            population=rng.randint(8, 900) * 100,
            origin=rng.choice(_ORIGINS),
        )
        for _ in range(n_towns)
    ]

    # Rivers take disjoint runs of towns, so "which river flows through T" has exactly one answer.
    order = list(range(n_towns))
    rng.shuffle(order)
    rivers: list[River] = []
    pos = 0
    for _ in range(n_rivers):
        k = rng.randint(2, 4)
        if pos + k > n_towns:
            k = 2
        run = [towns[i] for i in order[pos : pos + k]]
        pos += k
        core = namer.unique((1, 2), PLAIN_ENDS, max_len=8)
        river = River(name=f"{core} River", core=core, length_km=rng.randint(40, 900), towns=run)
        for t in run:
            t.river = river
        rivers.append(river)

    mountain_towns = rng.sample(towns, n_mountains)
    mountains: list[Mountain] = []
    for t in mountain_towns:
        core = namer.unique((2, 2), PLAIN_ENDS)
        m = Mountain(name=f"Mount {core}", core=core, height_m=rng.randint(900, 4800), town=t)
        t.mountain = m
        mountains.append(m)
    # A mountain is the source of at most one river, so the mountain passage can name it unambiguously.
    for river, m in zip(rivers, rng.sample(mountains, min(len(mountains), len(rivers))), strict=False):
        if rng.random() < 0.8:
            river.source = m

    first_names = [namer.unique((1, 2), FIRST_ENDS, max_len=8) for _ in range(max(40, n_people // 4))]
    surnames = [namer.unique((1, 2), SUR_ENDS, max_len=8) for _ in range(max(80, (n_people * 3) // 4))]
    full_names: set[str] = set()
    people: list[Person] = []
    while len(people) < n_people:
        name = f"{rng.choice(first_names)} {rng.choice(surnames)}"
        if name in full_names:
            continue
        full_names.add(name)
        born = rng.randint(1500, 1930)
        people.append(
            Person(
                name=name,
                female=rng.random() < 0.5,
                born=born,
                died=born + rng.randint(40, 90),
                town=rng.choice(towns),
                occupation=rng.choice(_OCCUPATIONS),
            )
        )

    orgs: list[Org] = []
    for founder in rng.sample(people, n_orgs):
        suffix, desc = rng.choice(_ORG_KINDS)
        org = Org(
            name=f"{namer.unique((2, 2), PLAIN_ENDS)} {suffix}",
            desc=desc,
            founder=founder,
            founded=founder.born + rng.randint(22, min(60, founder.died - founder.born - 1)),
            town=rng.choice(towns),
        )
        founder.org = org
        orgs.append(org)

    inventions: list[Invention] = []
    for inventor in rng.sample(people, n_inventions):
        noun, desc = rng.choice(_DEVICES)
        inv = Invention(
            name=f"{namer.unique((2, 2), PLAIN_ENDS)} {noun}",
            desc=desc,
            inventor=inventor,
            year=inventor.born + rng.randint(20, min(65, inventor.died - inventor.born - 1)),
            town=rng.choice(towns),
        )
        inventor.invention = inv
        inventions.append(inv)

    for m, climber in zip(mountains, rng.sample(people, n_mountains), strict=True):
        m.climber = climber
        m.climb_year = climber.born + rng.randint(18, min(45, climber.died - climber.born - 1))
        climber.mountain = m

    events: list[Event] = []
    for _ in range(n_events):
        org = rng.choice(orgs)
        suffix, desc = rng.choice(_EVENT_KINDS)
        events.append(
            Event(
                name=f"{namer.unique((2, 2), PLAIN_ENDS)} {suffix}",
                desc=desc,
                town=rng.choice(towns),
                year=min(org.founded + rng.randint(1, 60), 2020),
                org=org,
            )
        )

    return Entities(towns, rivers, mountains, people, orgs, inventions, events)
