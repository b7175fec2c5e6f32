"""The world: islands in named seas, their towns, and the people, ships, observatories, guilds, expeditions,
festivals and manuscripts that refer to one another, with years that keep a plausible chronology (a ship
is launched in its captain's working life, a festival starts after the death of the person it honours).

Each entity has ``facts`` (what questions ask about: another entity, a year or a word) and ``notes``
(distractor facts only a passage states: a second year, a second town, a number), which make a passage
more than a list of the answers.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from .lexicon import FEMININE_ENDS, MASCULINE_ENDS, PROFESSIONS, TRADES, Lexicon, Name

MONTHS = (
    "January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
    "November", "December",
)  # fmt: skip
SHIP_TYPES = ("brig", "schooner", "frigate", "barque", "sloop", "galleon", "cutter", "ketch")


@dataclass(frozen=True)
class WorldSize:
    """How many of each kind of thing a world holds (seas and peaks come with the islands)."""

    seas: int = 8
    islands: int = 70
    towns: int = 220
    people: dict[str, int] = field(default_factory=lambda: {"sea": 170, "sky": 90, "land": 130, "art": 310})
    ships: int = 450
    observatories: int = 150
    guilds: int = 250
    expeditions: int = 300
    festivals: int = 220
    manuscripts: int = 350


@dataclass(eq=False)
class Entity:
    """One thing of the world. ``doc_id`` is its passage's id; seas and peaks have no passage."""

    kind: str
    name: Name
    doc_id: str | None = None
    label: str = ""  # what it is, in a word or two: a profession, a ship's rig, a guild's trade
    pronoun: str = "it"
    role: str = ""  # a person's part in the world: "sea" (captains), "sky" (observatories), "land", "art"
    facts: dict[str, Entity | int | str] = field(default_factory=dict)
    notes: dict[str, dict[str, str]] = field(default_factory=dict)

    def year(self, fact: str) -> int:
        value = self.facts[fact]
        assert isinstance(value, int)
        return value

    def entity(self, fact: str) -> Entity:
        value = self.facts[fact]
        assert isinstance(value, Entity)
        return value


@dataclass
class World:
    by_kind: dict[str, list[Entity]] = field(default_factory=dict)

    def add(self, entity: Entity) -> Entity:
        group = self.by_kind.setdefault(entity.kind, [])
        if entity.kind not in ("sea", "peak"):
            entity.doc_id = f"{entity.kind}-{len(group):04d}"
        group.append(entity)
        return entity

    def documented(self) -> list[Entity]:
        """Every entity with a passage, kind by kind."""
        return [e for group in self.by_kind.values() for e in group if e.doc_id is not None]


def build_world(rng: random.Random, size: WorldSize | None = None) -> World:
    size = size or WorldSize()
    lex = Lexicon(rng)
    world = World()
    _islands_and_towns(world, lex, rng, size)
    _people(world, lex, rng, size)
    _ships(world, lex, rng, size)
    _observatories(world, lex, rng, size)
    _guilds(world, lex, rng, size)
    _expeditions(world, lex, rng, size)
    _festivals(world, lex, rng, size)
    _manuscripts(world, lex, rng, size)
    return world


def _islands_and_towns(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    seas = [world.add(Entity("sea", lex.sea())) for _ in range(size.seas)]
    islands = []
    for _ in range(size.islands):
        island = Entity("island", lex.island(), label=rng.choice(("rocky", "wooded", "low", "windswept")))
        island.facts = {"sea": rng.choice(seas), "peak": world.add(Entity("peak", lex.peak()))}
        island.notes["area"] = {"n": str(rng.randrange(12, 900))}
        islands.append(world.add(island))
    for i in range(size.towns):
        town = Entity("town", lex.town(), label=rng.choice(("harbour town", "market town", "walled port")))
        # The first towns go one to an island, so every island has a chief port.
        island = islands[i] if i < len(islands) else rng.choice(islands)
        founded = rng.randrange(1100, 1540)
        town.facts = {"island": island, "founded": founded}
        town.notes["river"] = {"river": lex.river()}
        town.notes["bridge"] = {"year": str(founded + rng.randrange(40, 300))}
        world.add(town)
    for island in islands:
        on_island = [t for t in world.by_kind["town"] if t.facts["island"] is island]
        island.facts["capital"] = rng.choice(on_island)


def _people(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    given = {"she": lex.given_names(70, FEMININE_ENDS), "he": lex.given_names(70, MASCULINE_ENDS)}
    towns = world.by_kind["town"]
    for role, count in size.people.items():
        for _ in range(count):
            pronoun = rng.choice(("he", "she"))
            middle = rng.choice(given[rng.choice(("he", "she"))]) if rng.random() < 0.3 else None
            name = lex.person(rng.choice(given[pronoun]), middle)
            born = rng.randrange(1560, 1790)
            person = Entity("person", name, label=rng.choice(PROFESSIONS[role]), pronoun=pronoun)
            person.facts = {
                "born": born,
                "died": born + rng.randrange(30, 86),
                "birthplace": rng.choice(towns),
                "profession": person.label,
            }
            person.notes["settled"] = {"place": rng.choice(towns).name.ref}
            person.notes["medal"] = {"medal": lex.medal(), "year": str(born + rng.randrange(20, 29))}
            person.role = role
            world.add(person)
    people = world.by_kind["person"]
    for person in people:
        # Teachers are 15-45 years older; about two in three people name one.
        elders = [p for p in people if 15 <= person.year("born") - p.year("born") <= 45]
        if elders and rng.random() < 0.65:
            person.facts["mentor"] = rng.choice(elders)


def _in_role(world: World, *roles: str) -> list[Entity]:
    return [p for p in world.by_kind["person"] if p.role in roles]


def _working_year(rng: random.Random, person: Entity, low: int, high: int) -> int:
    """A year when ``person`` was between ``low`` and ``high`` years old, and alive."""
    born, died = person.year("born"), person.year("died")
    return rng.randrange(born + low, max(born + low + 1, min(born + high, died)))


def _towns_before(world: World, year: int) -> list[Entity]:
    return [t for t in world.by_kind["town"] if t.year("founded") < year]


def _ships(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    captains = _in_role(world, "sea")
    for _ in range(size.ships):
        captain = rng.choice(captains)
        launched = _working_year(rng, captain, 22, 50)
        ship = Entity("ship", lex.ship(), label=rng.choice(SHIP_TYPES), pronoun="she")
        ship.facts = {"launched": launched, "shipyard": rng.choice(_towns_before(world, launched))}
        ship.facts["captain"] = captain
        ship.notes["guns"] = {"n": str(rng.randrange(4, 60, 2))}
        ship.notes["refit"] = {
            "place": rng.choice(_towns_before(world, launched)).name.ref,
            "year": str(launched + rng.randrange(3, 25)),
        }
        world.add(ship)


def _observatories(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    founders = _in_role(world, "sky", "land")
    for _ in range(size.observatories):
        founder = rng.choice(founders)
        opened = _working_year(rng, founder, 30, 62)
        observatory = Entity(
            "observatory", lex.observatory(), label=rng.choice(("hilltop", "coastal", "royal"))
        )
        observatory.facts = {
            "founder": founder,
            "opened": opened,
            "island": rng.choice(world.by_kind["island"]),
        }
        observatory.notes["telescope"] = {
            "telescope": lex.telescope(),
            "year": str(opened + rng.randrange(4, 40)),
        }
        world.add(observatory)


def _guilds(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    people = world.by_kind["person"]
    for _ in range(size.guilds):
        master = rng.choice(people)
        founded = _working_year(rng, master, 28, 58)
        guild = Entity("guild", lex.guild(), label=rng.choice(TRADES))
        guild.facts = {
            "seat": rng.choice(_towns_before(world, founded)),
            "founded": founded,
            "master": master,
            "trade": guild.label,
        }
        guild.notes["members"] = {"n": str(rng.randrange(12, 400))}
        world.add(guild)


def _expeditions(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    leaders = _in_role(world, "land", "sea")
    ships = world.by_kind["ship"]
    while len(world.by_kind.get("expedition", [])) < size.expeditions:
        leader = rng.choice(leaders)
        year = _working_year(rng, leader, 25, 60)
        # A ship launched in the forty years before the voyage; a leader without one is drawn again.
        fleet = [s for s in ships if year - 40 <= s.year("launched") < year]
        if not fleet:
            continue
        expedition = Entity("expedition", lex.expedition())
        expedition.facts = {
            "leader": leader,
            "ship": rng.choice(fleet),
            "year": year,
            "destination": rng.choice(world.by_kind["island"]),
        }
        expedition.notes["return"] = {"year": str(year + rng.randrange(1, 5)), "n": str(rng.randrange(2, 40))}
        world.add(expedition)


def _festivals(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    honoured = _in_role(world, "art")
    for _ in range(size.festivals):
        person = rng.choice(honoured)
        festival = Entity("festival", lex.festival())
        festival.facts = {
            "town": rng.choice(world.by_kind["town"]),
            "first": person.year("died") + rng.randrange(1, 60),
            "honours": person,
            "month": rng.choice(MONTHS),
        }
        festival.notes["crowd"] = {"n": str(rng.randrange(2, 40) * 500)}
        world.add(festival)


def _manuscripts(world: World, lex: Lexicon, rng: random.Random, size: WorldSize) -> None:
    authors = _in_role(world, "art", "land", "sky")
    keepers = world.by_kind["observatory"] + world.by_kind["guild"]
    for _ in range(size.manuscripts):
        author = rng.choice(authors)
        written = _working_year(rng, author, 20, 70)
        manuscript = Entity("manuscript", lex.manuscript(), label=rng.choice(("vellum", "paper", "bound")))
        manuscript.facts = {"author": author, "written": written, "kept": rng.choice(keepers)}
        manuscript.notes["leaves"] = {"n": str(rng.randrange(20, 600))}
        manuscript.notes["copy"] = {
            "year": str(written + rng.randrange(10, 120)),
            "place": rng.choice(world.by_kind["island"]).name.ref,
        }
        world.add(manuscript)
