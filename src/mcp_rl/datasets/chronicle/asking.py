"""Questions about the world, one hop or two, with their golden answers.

A :class:`Relation` holds the ways to ask for one fact of one kind of entity, written around ``{x}``: the
subject as a noun phrase. A one-hop question puts the subject's name there (``the ship Amber Gull``); a
two-hop question puts a phrase naming a *bridge* entity by one of the subject's facts (``the captain of the
Amber Gull``), so its answer is a fact of the bridge, which only the bridge's own passage states.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from .world import Entity, World

Value = Entity | int | str


@dataclass(frozen=True)
class Relation:
    kind: str  # the subject's kind
    fact: str
    asks: tuple[str, ...]  # question templates around {x} (or {X} at the start of a question)
    via: tuple[str, ...] = ()  # noun phrases naming the fact's value (an entity with a passage) by {x}

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.fact}"


_YEAR_OF = "When was {x} %s? Give the year."
RELATIONS: tuple[Relation, ...] = (
    Relation(
        "person",
        "born",
        (
            "In what year was {x} born?",
            "{X} was born in which year?",
            "What is the birth year of {x}?",
            "Give the year of birth of {x}.",
        ),
    ),
    Relation(
        "person",
        "died",
        ("In what year did {x} die?", "{X} died in which year?", "What year did {x} die in?"),
    ),
    Relation(
        "person",
        "birthplace",
        (
            "Where was {x} born?",
            "In which town was {x} born?",
            "What is the birthplace of {x}?",
            "Name the town where {x} was born.",
        ),
        ("the town where {x} was born", "the birthplace of {x}"),
    ),
    Relation(
        "person",
        "profession",
        ("What was the profession of {x}?", "What did {x} do for a living?", "What trade did {x} follow?"),
    ),
    Relation(
        "person",
        "mentor",
        (
            "Who taught {x}?",
            "Under whom did {x} train?",
            "Who was the teacher of {x}?",
            "Name the teacher of {x}.",
        ),
        ("the teacher of {x}", "the person who taught {x}"),
    ),
    Relation(
        "town",
        "island",
        (
            "On which island is {x}?",
            "{X} lies on which island?",
            "Which island is {x} on?",
            "Name the island on which {x} stands.",
        ),
        ("the island that is home to {x}",),
    ),
    Relation(
        "town",
        "founded",
        ("In what year was {x} founded?", _YEAR_OF % "founded", "What is the founding year of {x}?"),
    ),
    Relation(
        "island", "sea", ("In which sea does {x} lie?", "What sea surrounds {x}?", "Name the sea around {x}.")
    ),
    Relation(
        "island",
        "peak",
        (
            "What is the highest point of {x}?",
            "Which mountain is the highest on {x}?",
            "Name the highest peak on {x}.",
        ),
    ),
    Relation(
        "island",
        "capital",
        (
            "What is the chief port of {x}?",
            "Which town is the chief port of {x}?",
            "Name the chief port of {x}.",
        ),
        ("the chief port of {x}",),
    ),
    Relation(
        "ship",
        "launched",
        ("In what year was {x} launched?", "{X} was launched in which year?", _YEAR_OF % "launched"),
    ),
    Relation(
        "ship",
        "shipyard",
        ("Where was {x} built?", "In which port was {x} built?", "Name the town whose shipyards built {x}."),
        ("the port where {x} was built", "the town whose yards built {x}"),
    ),
    Relation(
        "ship",
        "captain",
        (
            "Who captained {x}?",
            "Who commanded {x}?",
            "Name the captain of {x}.",
            "Who was the captain of {x}?",
        ),
        ("the captain of {x}", "the person who commanded {x}"),
    ),
    Relation(
        "observatory",
        "founder",
        ("Who founded {x}?", "Name the founder of {x}.", "Who was the founder of {x}?"),
        ("the founder of {x}",),
    ),
    Relation(
        "observatory",
        "opened",
        ("In what year did {x} open?", "{X} opened in which year?", "When did {x} open? Give the year."),
    ),
    Relation(
        "observatory",
        "island",
        ("On which island does {x} stand?", "Where does {x} stand?", "Name the island where {x} stands."),
        ("the island where {x} stands",),
    ),
    Relation(
        "guild",
        "seat",
        (
            "Where does {x} have its seat?",
            "In which town does {x} meet?",
            "Name the town where {x} has its hall.",
        ),
        ("the town where {x} has its seat", "the seat of {x}"),
    ),
    Relation(
        "guild",
        "founded",
        (
            "In what year was {x} founded?",
            "When did {x} receive its charter? Give the year.",
            "{X} was founded in which year?",
        ),
    ),
    Relation(
        "guild",
        "master",
        (
            "Who was the first master of {x}?",
            "Name the first master of {x}.",
            "Who served as the first master of {x}?",
        ),
        ("the first master of {x}",),
    ),
    Relation(
        "guild",
        "trade",
        (
            "What trade do the members of {x} follow?",
            "Which craft does {x} bring together?",
            "Members of {x} work in which trade?",
        ),
    ),
    Relation(
        "expedition",
        "leader",
        ("Who led {x}?", "Name the leader of {x}.", "Who was in charge of {x}?"),
        ("the leader of {x}", "the person who led {x}"),
    ),
    Relation(
        "expedition",
        "ship",
        ("Which ship carried {x}?", "Aboard which ship did {x} sail?", "Name the ship of {x}."),
        ("the ship that carried {x}", "the vessel of {x}"),
    ),
    Relation(
        "expedition",
        "year",
        (
            "In what year did {x} set out?",
            "{X} departed in which year?",
            "When did {x} set out? Give the year.",
        ),
    ),
    Relation(
        "expedition",
        "destination",
        (
            "Which island was {x} bound for?",
            "Where was {x} headed?",
            "Name the island that {x} set out to reach.",
        ),
        ("the island {x} was bound for",),
    ),
    Relation(
        "festival",
        "town",
        ("Where is {x} held?", "In which town is {x} held?", "Name the town that hosts {x}."),
        ("the town that hosts {x}", "the town where {x} is held"),
    ),
    Relation(
        "festival",
        "first",
        (
            "In what year was {x} first held?",
            "When was {x} first held? Give the year.",
            "{X} was first held in which year?",
        ),
    ),
    Relation(
        "festival",
        "honours",
        ("Whom does {x} honour?", "In whose memory is {x} held?", "Name the person honoured by {x}."),
        ("the person honoured by {x}",),
    ),
    Relation(
        "festival",
        "month",
        (
            "In which month is {x} held?",
            "{X} falls in which month?",
            "During which month does {x} take place?",
        ),
    ),
    Relation(
        "manuscript",
        "author",
        ("Who wrote {x}?", "Name the author of {x}.", "Who was the author of {x}?"),
        ("the author of {x}", "the person who wrote {x}"),
    ),
    Relation(
        "manuscript",
        "written",
        (
            "In what year was {x} written?",
            "When was {x} completed? Give the year.",
            "{X} was written in which year?",
        ),
    ),
    Relation(
        "manuscript",
        "kept",
        ("Where is {x} kept?", "Which institution keeps {x}?", "Name the place that holds {x}."),
        ("the institution that keeps {x}", "the place where {x} is kept"),
    ),
)

# The one-hop ways to name a subject: {ref} as in a passage, {name} its canonical name, {label} its kind
# (a person's plain name is listed twice: drawn two times in three).
SUBJECT_REFS = {
    "person": ("{ref}", "{ref}", "the {label} {ref}"),
    "town": ("{ref}", "the town of {ref}"),
    "island": ("{ref}",),
    "ship": ("{ref}", "the ship {name}"),
    "observatory": ("{ref}",),
    "guild": ("{ref}",),
    "expedition": ("{ref}",),
    "festival": ("{ref}",),
    "manuscript": ("{ref}", "the manuscript {name}"),
}
ANSWER_TYPES = {
    "person": "person", "town": "place", "island": "place", "sea": "place", "peak": "place",
    "ship": "name", "guild": "name", "observatory": "name",
}  # fmt: skip


@dataclass(frozen=True)
class Question:
    text: str
    answer: Value
    subject: Entity
    relations: tuple[Relation, ...]
    bridge: Entity | None = None

    @property
    def hops(self) -> int:
        return len(self.relations)

    @property
    def golden_answers(self) -> list[str]:
        return answers_for(self.answer)

    @property
    def answer_type(self) -> str:
        if isinstance(self.answer, Entity):
            return ANSWER_TYPES[self.answer.kind]
        return "year" if isinstance(self.answer, int) else "word"


def answers_for(value: Value) -> list[str]:
    """The canonical answer first, then the other forms a reader would accept."""
    if isinstance(value, Entity):
        return value.name.answers
    if isinstance(value, int):
        return [str(value)]
    # "lens grinders" names a trade as its members; "lens grinder" is as good an answer.
    return [value, value[:-1]] if value.endswith("s") and " " in value else [value]


def _fill(template: str, x: str) -> str:
    return template.replace("{X}", x[:1].upper() + x[1:]).replace("{x}", x)


def subject_ref(entity: Entity, rng: random.Random) -> str:
    form = rng.choice(SUBJECT_REFS[entity.kind])
    return form.format(ref=entity.name.ref, name=entity.name.canonical, label=entity.label)


def one_hop(subject: Entity, relation: Relation, rng: random.Random) -> Question:
    text = _fill(rng.choice(relation.asks), subject_ref(subject, rng))
    return Question(text, subject.facts[relation.fact], subject, (relation,))


def two_hop(subject: Entity, first: Relation, second: Relation, rng: random.Random) -> Question:
    bridge = subject.entity(first.fact)
    phrase = _fill(rng.choice(first.via), subject_ref(subject, rng))
    text = _fill(rng.choice(second.asks), phrase)
    return Question(text, bridge.facts[second.fact], subject, (first, second), bridge)


def chains(world: World) -> list[tuple[Relation, Relation]]:
    """Every (first, second) relation pair a two-hop question can follow in ``world``: the first names an
    entity with a passage, of a kind the second asks about."""
    pairs = []
    for first in (r for r in RELATIONS if r.via):
        kinds = {e.entity(first.fact).kind for e in world.by_kind[first.kind] if first.fact in e.facts}
        pairs += [(first, second) for second in RELATIONS if second.kind in kinds]
    return pairs
