"""Passages: an entity's facts and notes written as a short encyclopedia entry in varied words and order.

A template names the facts it states by field (``{born}``, ``{shipyard}``), so one template may state two
facts at once; every fact is stated exactly once per passage. The subject is written as ``{N}`` (its name,
in the opening sentence), ``{S}``/``{s}`` (name, short name, pronoun or "the ship" as a sentence's subject),
``{o}`` (name or "the ship" as an object) and ``{P}``/``{p}`` (possessive). Notes (distractor facts) go in at
random places; when a passage would run past :data:`MAX_WORDS` they are dropped, last first.
"""

from __future__ import annotations

import random
import re
import string

from .world import Entity

MAX_WORDS = 110  # one passage must fit the search recipe's observation budget (~200 tokens) whole

INTROS: dict[str, tuple[str, ...]] = {
    "person": (
        "{N} was a {profession}.",
        "{N} was a {profession} of some renown.",
        "{N} is remembered as a {profession}.",
        "{N} ({born}–{died}) was a {profession}.",
        "{N} was a {profession} born in {birthplace}.",
    ),
    "town": ("{N} is a {label}.", "{N} is a {label} on {island}.", "{N} is a {label} founded in {founded}."),
    "island": ("{N} is a {label} island.", "{N} is a {label} island in {sea}."),
    "ship": (
        "{N} was a {label}.",
        "{N} was a {label} launched in {launched}.",
        "{N} was a {label} built at {shipyard}.",
        "{N} was a {label} under the command of {captain}.",
    ),
    "observatory": ("{N} is a {label} observatory.", "{N} is a {label} observatory on {island}."),
    "guild": (
        "{N} is a guild of {trade}.",
        "{N} is a guild of {trade} founded in {founded}.",
        "{N} brings together the {trade} of {seat}.",
    ),
    "expedition": (
        "{N} was a voyage of exploration.",
        "{N} was a voyage of exploration led by {leader}.",
        "{N} was a voyage to {destination}.",
    ),
    "festival": (
        "{N} is a festival held every year.",
        "{N} is a yearly festival in {town}.",
        "{N} is a festival held each {month}.",
    ),
    "manuscript": ("{N} is a {label} manuscript.", "{N} is a {label} manuscript by {author}."),
}

SENTENCES: dict[str, tuple[str, ...]] = {
    "person": (
        "{S} was born in {born}.",
        "{S} came into the world in {born}.",
        "The year of {p} birth was {born}.",
        "{S} died in {died}.",
        "{S} died in {died} after a long illness.",
        "{P} death came in {died}.",
        "{S} lived from {born} to {died}.",
        "{S} was born in {birthplace}.",
        "{S} grew up in {birthplace}, the town of {p} birth.",
        "{P} birthplace was {birthplace}.",
        "{S} was born in {birthplace} in {born}.",
        "{S} was born at {birthplace} in the year {born}.",
        "{S} trained under {mentor}.",
        "{S} was a pupil of {mentor}.",
        "{P} teacher was {mentor}.",
    ),
    "town": (
        "{S} lies on {island}.",
        "{S} stands on the coast of {island}.",
        "{S} is one of the towns of {island}.",
        "{S} was founded in {founded}.",
        "The first settlers reached {o} in {founded}.",
        "{S} dates from {founded}, when its first quay was built.",
        "{S} was founded on {island} in {founded}.",
    ),
    "island": (
        "{S} lies in {sea}.",
        "{S} is surrounded by the waters of {sea}.",
        "{S} rises from {sea}.",
        "{P} highest point is {peak}.",
        "{peak} is the highest summit on {o}.",
        "The tallest mountain of {o} is {peak}.",
        "{P} chief port is {capital}.",
        "{capital} is the chief port of {o}.",
        "The main harbour of {o} is at {capital}.",
    ),
    "ship": (
        "{S} was launched in {launched}.",
        "{S} first put to sea in {launched}.",
        "{S} left the slipway in {launched}.",
        "{S} was built at {shipyard}.",
        "{S} was built in the yards of {shipyard}.",
        "Shipwrights at {shipyard} built {o}.",
        "{S} was launched at {shipyard} in {launched}.",
        "{S} was commanded by {captain}.",
        "{P} captain was {captain}.",
        "{captain} commanded {o}.",
    ),
    "observatory": (
        "{S} was founded by {founder}.",
        "{founder} founded {o}.",
        "{S} owes its existence to {founder}.",
        "{S} opened in {opened}.",
        "{S} first opened its doors in {opened}.",
        "The first observations at {o} were made in {opened}.",
        "{founder} founded {o} in {opened}.",
        "{S} stands on {island}.",
        "{S} is on {island}, high above the sea.",
        "{S} was built on {island}.",
    ),
    "guild": (
        "{S} has its seat in {seat}.",
        "{S} meets in its hall at {seat}.",
        "The hall of {o} stands in {seat}.",
        "{S} was founded in {founded}.",
        "{S} received its charter in {founded}.",
        "{S} was founded at {seat} in {founded}.",
        "{P} first master was {master}.",
        "{master} was the first master of {o}.",
    ),
    "expedition": (
        "{S} was led by {leader}.",
        "{leader} led {o}.",
        "{leader} was in charge of {o}.",
        "{S} sailed aboard {ship}.",
        "{S} set out on {ship}.",
        "The ship of {o} was {ship}.",
        "{leader} led {o} aboard {ship}.",
        "{S} set out in {year}.",
        "{S} departed in {year}.",
        "{S} began in {year}.",
        "{S} was bound for {destination}.",
        "{P} goal was {destination}.",
        "{S} reached {destination} after many weeks at sea.",
        "{S} sailed for {destination} in {year}.",
    ),
    "festival": (
        "{S} is held in {town}.",
        "{S} takes place each year in {town}.",
        "The streets of {town} fill for {o}.",
        "{S} was first held in {first}.",
        "{S} dates back to {first}.",
        "{S} honours {honours}.",
        "{S} is held in memory of {honours}.",
        "{S} celebrates the life of {honours}.",
        "{S} falls in {month}.",
        "{S} is held every {month}.",
        "{S} is held in {town} every {month}.",
    ),
    "manuscript": (
        "{S} was written by {author}.",
        "{author} wrote {o}.",
        "{S} is the work of {author}.",
        "{S} was completed in {written}.",
        "{S} was written in {written}.",
        "{S} dates from {written}.",
        "{author} wrote {o} in {written}.",
        "{S} is kept at {kept}.",
        "{S} is held in the library of {kept}.",
        "Today {s} belongs to {kept}.",
    ),
}

NOTES: dict[str, tuple[str, ...]] = {
    "settled": ("In later life {s} settled in {place}.", "{S} spent {p} last years in {place}."),
    "medal": ("{S} was awarded {medal} in {year}.", "In {year} {s} received {medal}."),
    "river": ("{S} sits at the mouth of {river}.", "{S} stands where {river} meets the sea."),
    "bridge": (
        "{P} stone bridge was finished in {year}.",
        "A stone bridge was built across {p} harbour in {year}.",
    ),
    "area": ("{S} covers about {n} square miles.", "The island is some {n} square miles in size."),
    "guns": ("{S} carried {n} guns.", "{S} was armed with {n} guns."),
    "refit": ("{S} was refitted at {place} in {year}.", "In {year} {s} was refitted at {place}."),
    "telescope": ("{P} great telescope, {telescope}, was installed in {year}.",),
    "members": ("At its height {s} had {n} members.", "{S} once counted {n} members."),
    "return": (
        "The survivors came home in {year}, {n} men fewer.",
        "{S} returned in {year} having lost {n} men.",
    ),
    "crowd": ("Some {n} visitors come each year.", "{S} draws about {n} visitors."),
    "leaves": ("{S} runs to {n} leaves.", "{S} has {n} leaves."),
    "copy": ("A copy was made on {place} in {year}.", "In {year} a copy was made on {place}."),
}

KIND_NOUNS = {
    "town": ("the town",),
    "island": ("the island",),
    "ship": ("the ship", "the vessel"),
    "observatory": ("the observatory",),
    "guild": ("the guild",),
    "expedition": ("the expedition", "the voyage"),
    "festival": ("the festival",),
    "manuscript": ("the manuscript",),
}
SUBJECT_FIELDS = {"N", "label", "S", "s", "o", "P", "p"}  # template fields that are not facts
POSSESSIVES = {"he": "his", "she": "her", "it": "its"}


def fields_of(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def written(value: Entity | int | str) -> str:
    """A fact's value as running text: an entity by its reference (``the Amber Gull``), a year as digits."""
    return value.name.ref if isinstance(value, Entity) else str(value)


def cap(text: str) -> str:
    return text[:1].upper() + text[1:]


def _articles(text: str) -> str:
    """Templates write "a {profession}" whatever the word; this makes "a archivist" "an archivist"."""
    return re.sub(r"\b([Aa]) ([aeiou])", r"\1n \2", text)


class Writer:
    """Writes one entity's passage; every choice comes from ``rng``."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def _names(self, entity: Entity) -> list[str]:
        """Ways to name the subject again after the opening sentence."""
        if entity.kind == "person":
            surname = entity.name.canonical.rsplit(" ", 1)[1]
            return [entity.name.ref, surname]
        return [entity.name.ref, *KIND_NOUNS[entity.kind]]

    def _subject(self, entity: Entity) -> dict[str, str]:
        names = self._names(entity)
        subject = self.rng.choice([*names, entity.pronoun])
        possessive = POSSESSIVES[entity.pronoun]
        return {
            "S": cap(subject),
            "s": subject,
            "o": self.rng.choice(names),
            "P": cap(possessive),
            "p": possessive,
        }

    def _sentence(self, entity: Entity, template: str, values: dict[str, str]) -> str:
        return cap(template.format(**values, **self._subject(entity)))

    def passage(self, entity: Entity) -> str:
        facts = {name: written(value) for name, value in entity.facts.items()}
        opening = [t for t in INTROS[entity.kind] if _facts_in(t) <= facts.keys()]
        intro = self.rng.choice(opening)
        sentences = [intro.format(N=cap(entity.name.ref), label=entity.label, **facts)]
        left = [name for name in facts if name not in fields_of(intro)]
        self.rng.shuffle(left)
        body: list[str] = []
        while left:
            fits = [
                t for t in SENTENCES[entity.kind] if left[0] in fields_of(t) and _facts_in(t) <= set(left)
            ]
            template = self.rng.choice(fits)
            body.append(self._sentence(entity, template, facts))
            left = [name for name in left if name not in fields_of(template)]
        notes = []
        for name, values in entity.notes.items():
            notes.append(self._sentence(entity, self.rng.choice(NOTES[name]), values))
        while notes and _words(sentences + body + notes) > MAX_WORDS:
            notes.pop()
        for note in notes:
            body.insert(self.rng.randrange(len(body) + 1), note)
        text = _articles(" ".join(sentences + body))
        if _words([text]) > MAX_WORDS:
            raise ValueError(f"passage of {entity.name.canonical!r} runs to {_words([text])} words")
        return text


def _facts_in(template: str) -> set[str]:
    return fields_of(template) - SUBJECT_FIELDS


def _words(sentences: list[str]) -> int:
    return sum(len(s.split()) for s in sentences)
