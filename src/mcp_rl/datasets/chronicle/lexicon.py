"""Invented words and the names built from them: no model has seen these names, so no model knows the facts.

Every invented word is used once in a world (a surname, a town, an observatory...), so a question's name
points the search at one passage; only given names and the plain English words of ship, guild and festival
names repeat. A name is a :class:`Name`: the canonical form (a passage title and the first golden answer),
the form used in running text (``the Amber Gull``) and the other answers a reader would accept.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

# Syllable parts. A word is one or two closed syllables and an open or closed last one; inner clusters stay
# pronounceable because a syllable after a coda starts with a single consonant.
_ONSETS = (
    "b", "br", "c", "d", "dr", "f", "g", "gr", "h", "k", "kr", "l", "m", "n", "p", "pr", "r", "s", "sk",
    "st", "t", "tr", "v", "w", "z", "th", "sh", "gw", "y", "fl", "cl",
)  # fmt: skip
_SINGLE_ONSETS = ("b", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "z")
_NUCLEI = ("a", "e", "i", "o", "u", "a", "e", "o", "a", "e", "i", "o", "ae", "ei", "ou", "y")
_CODAS = ("", "", "", "n", "r", "l", "s", "m", "rn", "ld", "nt", "st", "th", "sk", "v", "rd", "ll", "x")
_INNER_CODAS = ("", "", "n", "r", "l", "s", "m")

FEMININE_ENDS = ("a", "ine", "ette", "is", "wen", "ora", "elle", "ia")
MASCULINE_ENDS = ("o", "an", "ric", "as", "el", "in", "ard", "us")
SURNAME_ENDS = ("ley", "ford", "wick", "by", "ton", "sen", "ard", "more", "ell", "hurst")
TOWN_ENDS = ("mere", "holt", "wick", "haven", "stead", "ford", "gate", "mouth", "combe", "strand")
TOWN_WORDS = ("Harbour", "Landing", "Cross", "Quay", "Bay")

SHIP_ADJECTIVES = (
    "Amber", "Brass", "Crimson", "Dusky", "Ember", "Frost", "Gilded", "Grey", "Hollow", "Ivory", "Jade",
    "Midnight", "Northern", "Quiet", "Rowan", "Saffron", "Silver", "Storm", "Swift", "Tawny", "Umber",
    "Velvet", "Wild", "Winter", "Scarlet", "Morning", "Evening", "Restless", "Patient", "Lucky",
)  # fmt: skip
SHIP_NOUNS = (
    "Heron", "Kestrel", "Gull", "Petrel", "Cormorant", "Tern", "Osprey", "Wren", "Falcon", "Swan", "Lark",
    "Plover", "Curlew", "Albatross", "Fulmar", "Gannet", "Merlin", "Shrike", "Starling", "Raven", "Dolphin",
    "Otter", "Seal", "Marlin", "Hart", "Vixen", "Stag", "Hound", "Maiden", "Widow", "Duchess", "Pilgrim",
    "Wanderer", "Herald", "Promise", "Venture", "Fortune", "Resolve", "Errand", "Lantern",
)  # fmt: skip
GUILD_MATERIALS = (
    "Copper", "Tin", "Oak", "Linen", "Salt", "Ash", "Pewter", "Cedar", "Flint", "Wax", "Iron", "Horn",
    "Bronze", "Walnut", "Slate", "Hemp", "Birch", "Silk", "Chalk", "Lead",
)  # fmt: skip
GUILD_OBJECTS = (
    "Compass", "Anchor", "Lamp", "Quill", "Key", "Bell", "Needle", "Lens", "Kettle", "Loom", "Chisel",
    "Scale", "Spindle", "Sextant", "Hammer", "Ladle", "Trowel", "Shuttle", "Plumb", "Awl",
)  # fmt: skip
TRADES = (
    "lens grinders", "rope makers", "bell founders", "map engravers", "glass blowers", "sail makers",
    "clock makers", "cloth dyers", "printers", "salt merchants", "coopers", "chandlers", "tanners",
    "instrument makers", "stonemasons", "bookbinders",
)  # fmt: skip
FESTIVAL_THINGS = (
    "Lantern", "Kite", "Ember", "Harvest", "Tide", "Bell", "Ribbon", "Mask", "Candle", "Herring", "Apple",
    "Honey", "Barley", "Thistle", "Driftwood", "Oyster", "Chestnut", "Heather", "Bonfire", "Pearl",
)  # fmt: skip
# Not "Festival": every festival's passage says "the festival", so the word would not tell two apart.
FESTIVAL_EVENTS = ("Fair", "Feast", "Regatta", "Vigil", "Procession", "Carnival", "Games", "Market")
MANUSCRIPT_SUBJECTS = (
    "Tides", "Lanterns", "Winds", "Hours", "Shoals", "Stars", "Herbs", "Harbours", "Comets", "Reefs",
    "Currents", "Eclipses", "Storms", "Soundings",
)  # fmt: skip
MANUSCRIPT_KINDS = ("Codex", "Almanac", "Psalter", "Register", "Atlas", "Folio")

PROFESSIONS = {
    # role in the world -> the professions of the people who take it
    "sea": ("navigator", "sea captain", "merchant", "privateer"),
    "sky": ("astronomer", "instrument maker"),
    "land": ("cartographer", "botanist", "naturalist"),
    "art": ("composer", "poet", "painter", "physician", "archivist", "engraver"),
}


@dataclass(frozen=True)
class Name:
    """How one thing is named: ``canonical`` (title and first answer), ``ref`` (in running text, maybe with
    "the") and ``aliases`` (other answers that name it unambiguously)."""

    canonical: str
    ref: str
    aliases: tuple[str, ...] = ()

    @property
    def answers(self) -> list[str]:
        return [self.canonical, *self.aliases]


@dataclass
class Lexicon:
    """Draws names from ``rng``, never handing out the same invented word or full name twice."""

    rng: random.Random
    used: set[str] = field(default_factory=set)

    def _syllable(self, onsets: tuple[str, ...], codas: tuple[str, ...]) -> str:
        return self.rng.choice(onsets) + self.rng.choice(_NUCLEI) + self.rng.choice(codas)

    def _raw_word(self, syllables: int) -> str:
        if syllables == 1:
            return self._syllable(_ONSETS, _CODAS)
        middle = [self._syllable(_SINGLE_ONSETS, _INNER_CODAS) for _ in range(syllables - 2)]
        return "".join(
            [self._syllable(_ONSETS, _INNER_CODAS), *middle, self._syllable(_SINGLE_ONSETS, _CODAS)]
        )

    def claim(self, word: str) -> bool:
        """Reserve ``word`` (case-insensitively); False when it is already taken."""
        key = word.lower()
        if key in self.used:
            return False
        self.used.add(key)
        return True

    def word(self, ending: str = "", max_len: int = 9, syllables: int | None = None) -> str:
        """A new invented word, capitalised, with an optional fixed ending; two syllables, now and then
        three, unless ``syllables`` says."""
        while True:
            stem = self._raw_word(syllables or (3 if self.rng.random() < 0.1 else 2))
            # Stems ending in a vowel glue badly onto an ending that starts with one ("Koa" + "an").
            if ending and stem[-1] in "aeiouy" and ending[0] in "aeiouy":
                continue
            word = (stem + ending).capitalize()
            if 4 <= len(word) <= max_len and self.claim(word):
                return word

    def given_names(self, n: int, ends: tuple[str, ...]) -> list[str]:
        return [self.word(self.rng.choice(ends), max_len=8, syllables=1) for _ in range(n)]

    def surname(self) -> str:
        if self.rng.random() < 0.5:
            return self.word(self.rng.choice(SURNAME_ENDS), max_len=10, syllables=1)
        return self.word()

    def person(self, given: str, middle: str | None) -> Name:
        surname = self.surname()
        if middle is None:
            full = f"{given} {surname}"
            return Name(full, full)
        full = f"{given} {middle} {surname}"
        return Name(full, full, (f"{given} {surname}",))

    def town(self) -> Name:
        roll = self.rng.random()
        if roll < 0.45:
            word = self.word(
                self.rng.choice(TOWN_ENDS), max_len=11, syllables=1 if self.rng.random() < 0.6 else 2
            )
            return Name(word, word)
        word = self.word()
        full = f"Port {word}" if roll < 0.75 else f"{word} {self.rng.choice(TOWN_WORDS)}"
        return Name(full, full, (word,))

    def island(self) -> Name:
        word = self.word()
        if self.rng.random() < 0.4:
            return Name(f"Isle of {word}", f"the Isle of {word}", (word,))
        return Name(word, word, (f"{word} Island", f"Isle of {word}"))

    def peak(self) -> Name:
        word = self.word()
        return Name(f"Mount {word}", f"Mount {word}", (word,))

    def sea(self) -> Name:
        word = self.word()
        return Name(f"{word} Sea", f"the {word} Sea", (f"Sea of {word}", word))

    def river(self) -> str:
        return f"the {self.word()} river"

    def ship(self) -> Name:
        if self.rng.random() < 0.2:
            word = self.word()
            return Name(word, f"the {word}")
        while True:
            name = f"{self.rng.choice(SHIP_ADJECTIVES)} {self.rng.choice(SHIP_NOUNS)}"
            if self.claim(name):
                return Name(name, f"the {name}")

    def observatory(self) -> Name:
        word = self.word()
        if self.rng.random() < 0.3:
            full = f"{word} Hill Observatory"
            return Name(full, f"the {full}", (f"{word} Observatory", f"{word} Hill"))
        return Name(f"{word} Observatory", f"the {word} Observatory", (word,))

    def guild(self) -> Name:
        while True:
            short = f"{self.rng.choice(GUILD_MATERIALS)} {self.rng.choice(GUILD_OBJECTS)}"
            if self.claim(short):
                return Name(f"{short} Guild", f"the {short} Guild", (short,))

    def expedition(self) -> Name:
        word = self.word()
        if self.rng.random() < 0.3:
            return Name(f"Great {word} Expedition", f"the Great {word} Expedition", (f"{word} Expedition",))
        return Name(f"{word} Expedition", f"the {word} Expedition")

    def festival(self) -> Name:
        roll = self.rng.random()
        if roll < 0.6:
            while True:
                name = f"{self.rng.choice(FESTIVAL_THINGS)} {self.rng.choice(FESTIVAL_EVENTS)}"
                if self.claim(name):
                    return Name(name, f"the {name}")
        word = self.word()
        name = f"{word} {self.rng.choice(FESTIVAL_EVENTS)}" if roll < 0.8 else f"Feast of Saint {word}"
        return Name(name, f"the {name}")

    def manuscript(self) -> Name:
        roll = self.rng.random()
        # Each "Book of Tides" once: a "Krel Book of Tides" beside it could not be told apart by a search.
        if roll < 0.35 and self.claim(name := f"Book of {self.rng.choice(MANUSCRIPT_SUBJECTS)}"):
            return Name(name, f"the {name}")
        name = f"{self.word()} {self.rng.choice(MANUSCRIPT_KINDS)}"
        return Name(name, f"the {name}")

    def medal(self) -> str:
        return f"the {self.word()} Medal"

    def telescope(self) -> str:
        return f"the {self.word()} Glass"
