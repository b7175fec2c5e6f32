"""A deterministic encyclopedia of fictional entities, with single- and two-hop questions over it.

Why fictional: a model cannot answer these questions from pre-training, so any gain after RL has to come
from learning to search and read. Names are built from syllables, facts are drawn from one
``random.Random(seed)``, and every question's answer is stated in a passage (two-hop answers in the
passage of the bridge entity, whose name is in the first passage).

Files (see :func:`write_world`): ``corpus.jsonl`` in the Search-R1 corpus format
(``{"id", "contents": "\\"Title\\"\\ntext"}``) and ``train.jsonl`` / ``test.jsonl`` in the FlashRAG format
(``{"id", "question", "golden_answers", "hops", "metadata"}``).

Command line: ``python -m mcp_rl.world --seed 0 --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

DATASETS_DIR = Path(__file__).parent / "datasets"
SPLITS = ("train", "test")
FILES = ("corpus.jsonl", "train.jsonl", "test.jsonl")

# ---------------------------------------------------------------------------------------------------------
# Public data model


@dataclass(frozen=True)
class Passage:
    id: str
    title: str
    text: str
    kind: str

    @property
    def contents(self) -> str:
        # Search-R1's corpus keeps the title quoted on the first line.
        return f'"{self.title}"\n{self.text}'


@dataclass(frozen=True)
class QA:
    id: str
    question: str
    golden_answers: list[str]
    hops: int
    template: str
    # Passages needed, in reading order: the subject's passage, then (two-hop) the bridge entity's passage.
    supporting_ids: list[str]
    # The bridge entity's name for two-hop questions (it appears in the first supporting passage).
    bridge: str | None = None


@dataclass
class World:
    seed: int
    passages: list[Passage]
    train: list[QA]
    test: list[QA]
    config: dict[str, int | float] = field(default_factory=dict)

    def passage(self, pid: str) -> Passage:
        return self.passages[int(pid)]

    def split(self, name: str) -> list[QA]:
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
        return self.train if name == "train" else self.test


# ---------------------------------------------------------------------------------------------------------
# Internal entities


@dataclass
class _Town:
    name: str
    province: str
    founded: int
    population: int
    origin: str
    river: _River | None = None
    mountain: _Mountain | None = None
    pid: str = ""


@dataclass
class _River:
    name: str  # "Selm River"
    core: str  # "Selm"
    length_km: int
    towns: list[_Town]
    source: _Mountain | None = None
    pid: str = ""


@dataclass
class _Mountain:
    name: str  # "Mount Arvel"
    core: str
    height_m: int
    town: _Town
    climber: _Person | None = None
    climb_year: int = 0
    pid: str = ""


@dataclass
class _Person:
    name: str
    female: bool
    born: int
    died: int
    town: _Town
    occupation: str
    org: _Org | None = None
    invention: _Invention | None = None
    mountain: _Mountain | None = None
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
class _Org:
    name: str  # "Kessin Guild"
    desc: str
    founder: _Person
    founded: int
    town: _Town
    pid: str = ""


@dataclass
class _Invention:
    name: str  # "Tolvane Loom"
    desc: str
    inventor: _Person
    year: int
    town: _Town
    pid: str = ""


@dataclass
class _Event:
    name: str  # "Ostrel Fair"
    desc: str
    town: _Town
    year: int
    org: _Org
    pid: str = ""


# ---------------------------------------------------------------------------------------------------------
# Names

# Simple onsets and vowels are repeated to weight them: short, pronounceable names tokenise into fewer
# pieces, which matters when a 135M model has to copy them into a query or an answer.
_ONSETS = "b b br d d dr f g g gr h k k kr l l m m n n p r r s s sk st t t th tr v v z c ch w".split()  # noqa: SIM905
_VOWELS = ["a", "a", "e", "e", "i", "o", "o", "u", "a", "e", "i", "o", "ai", "ei", "ou"]
_CODAS = ["", "", "", "", "n", "r", "l", "s", "th", "rn", "st", "m", "nd", "rk", "sk", "lt", "x"]
_FIRST_ENDS = ["a", "ia", "en", "o", "is", "el", "ine", "ar", "us", "", "", "an"]
_SUR_ENDS = ["", "", "an", "ek", "ov", "ett", "ard", "is", "ane", "orn", "ay", "ich"]
_TOWN_ENDS = ["el", "ar", "ost", "eth", "ova", "um", "is", "ane", "ir", "en", "ak", "ith", "ora", "", ""]
_PLAIN_ENDS = ["", "", "", "el", "an", "or", "en", "ia", "is", "ar"]
# Words our templates use: a name equal to one of them would make sentences and questions ambiguous.
_RESERVED = {
    "mount",
    "river",
    "town",
    "guild",
    "fair",
    "lake",
    "the",
    "and",
    "province",
    "born",
    "year",
    "sea",
    "north",
    "south",
    "east",
    "west",
    "city",
    "press",
    "lamp",
    "mill",
    "clock",
    "lock",
    "games",
}

# Real words and names the syllable generator can produce (found by intersecting millions of generated
# names with an English WordPiece vocabulary): such a name would carry pre-training knowledge, or read as
# an offensive or confusing word. Changing this list changes every generated world.
_REAL_WORDS = frozenset(
    """
    aboard adrian adult again agatha agenda aground aidan aiden aires akron alain alaska alexa alexia alexis
    alien altar amanda amara amelia amend amino amour anand arena ariel aroma around asean asian aston astor
    astoria atheist athena atrium avail avila bachelor bacon baden bahia baker banana banda barnard barnett
    baron basal basalt basel baseline baseman bases basil basin basis bastard bates baton bavaria bazaar
    beard began begin begun behind beige belarus belinda benin bernard bethel bihar biker bikes bipolar
    bison bites board bohemia bones bonus boris boston bother bound bowen brace braden brain brake brakes
    brand brasil brave braves bravo brazil bremen brenda brendan brest breton brewer brian bribe bribes
    bride brien brisk bristol britain broke broken broker brothel brother bruce brunei bruno brutal brute
    buchanan buren burnett buses buster cabin cache caden cafes cages caine cairo cakes calais calendar
    camel cameo camera canal canine canon cares carol caroline carousel cases caste castes catalan cater
    cavern caves cecil cecilia cedar celia celine cesar chain chair chapel chase chases chatham cheek
    chemist chest chester chiba chico chile chilean chili china choke chopin choral chores chorus chose
    chosen cigar cites civil cobalt cobra cocaine cochin cocoa codes codex cohen coleman colin colon colonel
    color colour comes conan condo condor cones conor coral cores costa coupe cousin coven cover cowan cuban
    custer custom dalai damian damien damon danes daniel dario darius dates davis debra debris decor defend
    delay delta demand demon demos denim denis depend derek detail deter devil devin devon diane digest
    diner distal diver domain domes donor dorian doris doses dover dozen dragon drain drake drama dramas
    draper drawer drive driven driver drives drone drones drove duane dubai dubois dukes duluth dunes duran
    dustin duval edith edouard eduard eileen either elaine elena elisa email emilia enamel erich estonia
    ethan ethel ether everett faber fabian fabio faces fades faith famine famous fares faster fastest fatal
    fates father favor favour felix feral fetal fever fewer fiber fibre files final finer fines finest fires
    focal foreman foremost forest forum foster found gabon gabriel gaines gaius galen gamer games gareth
    gases gasoline gaston gates gather gavin gazes genes genesis genius genoa genuine genus gerais gerard
    gibraltar giles given gives goran gotham govern governor grace grade grades graham grain grand grape
    grapes grave gravel graves greco greek green gregor greta grimes grind groan ground grove grover groves
    grupo guard hades hagen haifa haiti haitian hamas handel hapoel hasan haste hates haven hazel heard
    heidi helen helium helix henan heroine heron hides hindus hines hiram hires hogan holes homer homes
    honda honest honor honour hopes hostel hotel hound house houses houston human humane humor humour hunan
    huron india indus irina italia ivanov kabul kaiser kamal kamen kapoor karel karen karim karin katrina
    kazan keane keith kerala kernel kevin kinda kiran kochi korea korean kramer kristen kristin kruger kumar
    label labor labour laden lagos lakes lamar lanes laser later latest latham latin latino laval legal
    legend leger leiden leith leland lemon lenin lester lethal level lever levin lewis libel liberia libre
    ligand likes lilith linda linden linear linen liner lines linux listen lister liter lithium litre litres
    liver lives lobes local locus logan logos loren loser loses lotus louder louis lover loves lower lowest
    lucan lucas lucha lucia lucian lucien lukas lunar luther luton luzon mabel macon madam madeline madras
    mafia mahal maiden maine maison maize maker makes malaria malay males malta mania manila manor manuel
    marek maria marian marin marina marine mario maris marius marko markus mason master mateo mater mates
    matrix medal media median medina medium megan memoir menon metal meteor meter methane metis metre metres
    metro michael michel miguel milan milano miles milos minas miner mines minor minus miranda mister model
    modern modes modest modular mohan molina molten monday moral moran moreno moses motel mother motor mound
    mouse mouth moves mundane mundo munich mural muriel museo museum mustard muster nadia nagar naive names
    nasal natal natalia nathan naval nazareth nazis nedra negro neither nemesis nepal nestor never newark
    newer newest nexus niche nigel niger nigeria nobel nodes nokia nolan noses notes nothin notre novel
    obama ocean opera opium oskar other outer paces padre padres pagan pages paige pakistan palais paler
    panda panel papal paper parana paris pasta paste pastor patel patrol patron pavel pedal pedro penal
    penis peter petra petrol piles pines pipeline piper pipes pistol piston pixel podium poker poland polar
    poles popular poses postal poster pound power pupil putin racer races rachel racist radar radio radius
    rafael raider rainer raise raises ramon ramos rates rather ratio raven razor rebel reborn rebound refer
    regain regal regan regina regis regular reich relax relay remain remark remind remix renal repair resin
    resist result retail retain retro return revolt rican richer riches richest rider rides risen rises
    rites rival river robes robin robust roche rodeo roger rohan roland roles roman romania romano romeo
    romero ronan ronin ropes rosen roses roster rotor rouen rouge round rouse route routes rover rowan rower
    ruben rubin rufus ruler rules rumor runes rural saber sabre sabres safer saharan saigon sailor sakura
    salem sales salim saline salon samoa samuel satan satin saturn saves savior second secular sedan segunda
    seine seize selena seminar senior serena serum seton seven severn sewer siberia sichuan sides silas
    silesia similar simon sinai siren sirius sister sites sizes skate skater sober socio sodium sofia solar
    solos somalia sonar sonia sonora sound sousa south southend southern souza stade stadium stage stages
    stain stair stake stakes stale stalin stand standard stare stares stark state staten states steel stefan
    stefano stein steiner stereo stern steve steven stoke stokes stole stolen stone stones store stores
    stove studio sudan sugar sultan sunday super susan sustain sutra tabitha taboo tacoma tailor taipei
    taiwan taken takes tales talon tamara tamil tapes taste tastes tatar tatum tavern taxis tenor teresa
    thailand thames their theme themes there these thesis theta thomas thorn those thousand tidal tides
    tiger tiles timeline timer times timor tirana tires titan titular titus tobin token tomas tones total
    touches toulon tourist towel tower trace traces trade trader trades trail trailer train trainer traitor
    travel travis tremor trend trevor tribal tribe tribes tristan trois troupe truce truman trust truth
    tubes tubular tudor tulane tumor tunes tunis tunisia turin tutor ukraine urine vacuum valor vapor vegas
    vendor venom venus verona veteran vicar vidal video vigor vikram vimes vines viper viral virus visas
    vista vital vitro vivian vocal vogel volta voter votes vowel wages wagon waist waiter wakes wales wanda
    waste water waves weber weimar weren western weston widen wider wigan wines wires within wives woken
    woman women wound woven zebra zenith zones zurich
    """.split()  # noqa: SIM905
)


class _Namer:
    """Syllable-built names, unique across the whole world (case-insensitive)."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set(_RESERVED)

    def _word(self, syllables: int, ends: Sequence[str]) -> str:
        rng = self.rng
        parts: list[str] = []
        for i in range(syllables):
            onset = rng.choice(_ONSETS) if (i > 0 or rng.random() < 0.85) else ""
            # Codas only on the last syllable keep words pronounceable ("Drask", not "Drxkv").
            coda = rng.choice(_CODAS) if i == syllables - 1 else ""
            parts.append(onset + rng.choice(_VOWELS) + coda)
        word = "".join(parts) + rng.choice(ends)
        return word[:1].upper() + word[1:]

    def unique(
        self, syllables: tuple[int, int], ends: Sequence[str], min_len: int = 5, max_len: int = 9
    ) -> str:
        for _ in range(10_000):
            word = self._word(self.rng.randint(*syllables), ends)
            key = word.lower()
            if (
                min_len <= len(word) <= max_len
                and key not in self.used
                and key not in _REAL_WORDS
                and not _awkward(key)
            ):
                self.used.add(key)
                return word
        raise RuntimeError("name space exhausted; lower the entity counts")


def _awkward(word: str) -> bool:
    # Triple letters and doubled-vowel runs read badly and tokenise into noise.
    vowels = set("aeiouy")
    run_v = run_c = 0
    for i, ch in enumerate(word):
        if i >= 2 and word[i - 2] == word[i - 1] == ch:
            return True
        if ch in vowels:
            run_v, run_c = run_v + 1, 0
        else:
            run_v, run_c = 0, run_c + 1
        if run_v > 2 or run_c > 3:
            return True
    return False


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _join(items: Sequence[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


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


# ---------------------------------------------------------------------------------------------------------
# Generation


def generate_world(
    seed: int = 0,
    n_people: int = 1000,
    n_towns: int = 450,
    n_rivers: int = 110,
    n_mountains: int = 110,
    n_orgs: int = 350,
    n_inventions: int = 220,
    n_events: int = 160,
    n_provinces: int = 12,
    n_train: int = 4000,
    n_test: int = 500,
    two_hop_fraction: float = 0.3,
) -> World:
    """Build the world for ``seed``: the same arguments always give the same passages and questions."""
    if n_mountains > n_towns or max(n_orgs, n_inventions, n_mountains) > n_people:
        raise ValueError("each mountain needs its own town and each org/invention/ascent its own person")
    if n_rivers * 2 > n_towns:
        raise ValueError("each river flows through at least two towns of its own; raise n_towns")
    if not 0.0 <= two_hop_fraction <= 1.0:
        raise ValueError("two_hop_fraction must be within [0, 1]")
    rng = random.Random(seed)
    namer = _Namer(rng)

    provinces = [namer.unique((2, 2), _PLAIN_ENDS) for _ in range(n_provinces)]
    towns = [
        _Town(
            name=namer.unique((2, 2), _TOWN_ENDS),
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
    rivers: list[_River] = []
    pos = 0
    for _ in range(n_rivers):
        k = rng.randint(2, 4)
        if pos + k > n_towns:
            k = 2
        run = [towns[i] for i in order[pos : pos + k]]
        pos += k
        core = namer.unique((1, 2), _PLAIN_ENDS, max_len=8)
        river = _River(name=f"{core} River", core=core, length_km=rng.randint(40, 900), towns=run)
        for t in run:
            t.river = river
        rivers.append(river)

    mountain_towns = rng.sample(towns, n_mountains)
    mountains: list[_Mountain] = []
    for t in mountain_towns:
        core = namer.unique((2, 2), _PLAIN_ENDS)
        m = _Mountain(name=f"Mount {core}", core=core, height_m=rng.randint(900, 4800), town=t)
        t.mountain = m
        mountains.append(m)
    # A mountain is the source of at most one river, so the mountain passage can name it unambiguously.
    for river, m in zip(rivers, rng.sample(mountains, min(len(mountains), len(rivers))), strict=False):
        if rng.random() < 0.8:
            river.source = m

    first_names = [namer.unique((1, 2), _FIRST_ENDS, max_len=8) for _ in range(max(40, n_people // 4))]
    surnames = [namer.unique((1, 2), _SUR_ENDS, max_len=8) for _ in range(max(80, (n_people * 3) // 4))]
    full_names: set[str] = set()
    people: list[_Person] = []
    while len(people) < n_people:
        name = f"{rng.choice(first_names)} {rng.choice(surnames)}"
        if name in full_names:
            continue
        full_names.add(name)
        born = rng.randint(1500, 1930)
        people.append(
            _Person(
                name=name,
                female=rng.random() < 0.5,
                born=born,
                died=born + rng.randint(40, 90),
                town=rng.choice(towns),
                occupation=rng.choice(_OCCUPATIONS),
            )
        )

    orgs: list[_Org] = []
    for founder in rng.sample(people, n_orgs):
        suffix, desc = rng.choice(_ORG_KINDS)
        org = _Org(
            name=f"{namer.unique((2, 2), _PLAIN_ENDS)} {suffix}",
            desc=desc,
            founder=founder,
            founded=founder.born + rng.randint(22, min(60, founder.died - founder.born - 1)),
            town=rng.choice(towns),
        )
        founder.org = org
        orgs.append(org)

    inventions: list[_Invention] = []
    for inventor in rng.sample(people, n_inventions):
        noun, desc = rng.choice(_DEVICES)
        inv = _Invention(
            name=f"{namer.unique((2, 2), _PLAIN_ENDS)} {noun}",
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

    events: list[_Event] = []
    for _ in range(n_events):
        org = rng.choice(orgs)
        suffix, desc = rng.choice(_EVENT_KINDS)
        events.append(
            _Event(
                name=f"{namer.unique((2, 2), _PLAIN_ENDS)} {suffix}",
                desc=desc,
                town=rng.choice(towns),
                year=min(org.founded + rng.randint(1, 60), 2020),
                org=org,
            )
        )

    passages: list[Passage] = []

    def add(kind: str, title: str, text: str) -> str:
        pid = str(len(passages))
        passages.append(Passage(id=pid, title=title, text=text, kind=kind))
        return pid

    for t in towns:
        t.pid = add("town", t.name, _town_text(rng, t))
    for r in rivers:
        r.pid = add("river", r.name, _river_text(rng, r))
    for m in mountains:
        m.pid = add("mountain", m.name, _mountain_text(rng, m))
    for p in people:
        p.pid = add("person", p.name, _person_text(rng, p))
    for o in orgs:
        o.pid = add("organisation", o.name, _org_text(rng, o))
    for inv in inventions:
        inv.pid = add("invention", inv.name, _invention_text(rng, inv))
    for e in events:
        e.pid = add("event", e.name, _event_text(rng, e))

    single, double = _questions(rng, towns, rivers, mountains, people, orgs, inventions, events)
    train, test = _sample_and_split(rng, single, double, n_train, n_test, two_hop_fraction)
    config: dict[str, int | float] = {
        "n_people": n_people, "n_towns": n_towns, "n_rivers": n_rivers, "n_mountains": n_mountains,
        "n_orgs": n_orgs, "n_inventions": n_inventions, "n_events": n_events, "n_provinces": n_provinces,
        "n_train": n_train, "n_test": n_test, "two_hop_fraction": two_hop_fraction,
    }  # fmt: skip
    return World(seed=seed, passages=passages, train=train, test=test, config=config)


# ---------------------------------------------------------------------------------------------------------
# Passages: every fact a question asks about is written with the entity's canonical name.


def _town_text(rng: random.Random, t: _Town) -> str:
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


def _river_text(rng: random.Random, r: _River) -> str:
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


def _mountain_text(rng: random.Random, m: _Mountain) -> str:
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


def _person_text(rng: random.Random, p: _Person) -> str:
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


def _org_text(rng: random.Random, o: _Org) -> str:
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


def _invention_text(rng: random.Random, inv: _Invention) -> str:
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


def _event_text(rng: random.Random, e: _Event) -> str:
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


# ---------------------------------------------------------------------------------------------------------
# Questions


@dataclass(frozen=True)
class _Candidate:
    template: str
    question: str
    answers: list[str]
    supporting_ids: list[str]
    bridge: str | None = None


def _town_answers(t: _Town) -> list[str]:
    return [t.name]


def _river_answers(r: _River) -> list[str]:
    return [r.name, r.core, f"River {r.core}"]


def _mountain_answers(m: _Mountain) -> list[str]:
    return [m.name, m.core]


def _province_answers(t: _Town) -> list[str]:
    return [t.province, f"{t.province} Province"]


def _questions(
    rng: random.Random,
    towns: list[_Town],
    rivers: list[_River],
    mountains: list[_Mountain],
    people: list[_Person],
    orgs: list[_Org],
    inventions: list[_Invention],
    events: list[_Event],
) -> tuple[dict[str, list[_Candidate]], dict[str, list[_Candidate]]]:
    """All candidate questions, grouped by template (single-hop, two-hop)."""
    single: dict[str, list[_Candidate]] = {}
    double: dict[str, list[_Candidate]] = {}

    def q1(template: str, phrasings: list[str], answers: list[str], pid: str) -> None:
        single.setdefault(template, []).append(_Candidate(template, rng.choice(phrasings), answers, [pid]))

    def q2(
        template: str, phrasings: list[str], answers: list[str], pid1: str, pid2: str, bridge: str
    ) -> None:
        double.setdefault(template, []).append(
            _Candidate(template, rng.choice(phrasings), answers, [pid1, pid2], bridge)
        )

    for p in people:
        q1(
            "person_birth_town",
            [
                f"In which town was {p.name} born?",
                f"Where was {p.name} born?",
                f"What is the birthplace of {p.name}?",
            ],
            _town_answers(p.town),
            p.pid,
        )
        q1(
            "person_birth_year",
            [f"In which year was {p.name} born?", f"When was {p.name} born?"],
            [str(p.born)],
            p.pid,
        )
        if p.org is not None:
            q1(
                "person_org",
                [f"Which organisation did {p.name} found?", f"What organisation was founded by {p.name}?"],
                [p.org.name],
                p.pid,
            )
        if p.invention is not None:
            q1("person_invention", [f"What did {p.name} invent?"], [p.invention.name], p.pid)
        t = p.town
        if t.river is not None:
            q2(
                "birthplace_river",
                [
                    f"Which river flows through the birthplace of {p.name}?",
                    f"Which river flows through the town where {p.name} was born?",
                ],
                _river_answers(t.river),
                p.pid,
                t.pid,
                t.name,
            )
        q2(
            "birthplace_province",
            [
                f"In which province is the town where {p.name} was born?",
                f"In which province was {p.name} born?",
            ],
            _province_answers(t),
            p.pid,
            t.pid,
            t.name,
        )
        if p.invention is not None and p.org is not None:
            q2(
                "inventor_org",
                [f"Which organisation was founded by the inventor of the {p.invention.name}?"],
                [p.org.name],
                p.invention.pid,
                p.pid,
                p.name,
            )

    for t in towns:
        if t.river is not None:
            q1("town_river", [f"Which river flows through {t.name}?"], _river_answers(t.river), t.pid)
        q1(
            "town_province",
            [f"In which province is {t.name}?", f"{t.name} is a town in which province?"],
            _province_answers(t),
            t.pid,
        )
        q1(
            "town_founded",
            [f"In which year was {t.name} founded?", f"When was the town of {t.name} founded?"],
            [str(t.founded)],
            t.pid,
        )

    for r in rivers:
        if r.source is not None:
            q1(
                "river_source",
                [
                    f"On which mountain does the {r.name} rise?",
                    f"On which mountain is the source of the {r.name}?",
                ],
                _mountain_answers(r.source),
                r.pid,
            )
            climber = r.source.climber
            assert climber is not None
            q2(
                "river_source_climber",
                [f"Who first climbed the mountain on which the {r.name} rises?"],
                [climber.name],
                r.pid,
                r.source.pid,
                r.source.name,
            )

    for m in mountains:
        c = m.climber
        assert c is not None
        q1(
            "mountain_town",
            [f"Near which town is {m.name}?", f"{m.name} is near which town?"],
            _town_answers(m.town),
            m.pid,
        )
        q1(
            "mountain_climber",
            [f"Who first climbed {m.name}?", f"Who made the first ascent of {m.name}?"],
            [c.name],
            m.pid,
        )
        q1(
            "mountain_climb_year",
            [f"In which year was {m.name} first climbed?", f"When was the first ascent of {m.name}?"],
            [str(m.climb_year)],
            m.pid,
        )
        q2(
            "climber_birth_town",
            [f"In which town was the first person to climb {m.name} born?"],
            _town_answers(c.town),
            m.pid,
            c.pid,
            c.name,
        )
        q2(
            "climber_birth_year",
            [f"In which year was the first person to climb {m.name} born?"],
            [str(c.born)],
            m.pid,
            c.pid,
            c.name,
        )

    for o in orgs:
        f = o.founder
        q1(
            "org_founder",
            [f"Who founded the {o.name}?", f"Who was the founder of the {o.name}?"],
            [f.name],
            o.pid,
        )
        q1(
            "org_year",
            [f"In which year was the {o.name} founded?", f"When was the {o.name} founded?"],
            [str(o.founded)],
            o.pid,
        )
        q1(
            "org_hq",
            [f"In which town is the {o.name} headquartered?", f"Where are the headquarters of the {o.name}?"],
            _town_answers(o.town),
            o.pid,
        )
        q2(
            "founder_birth_year",
            [
                f"In which year was the founder of the {o.name} born?",
                f"When was the person who founded the {o.name} born?",
            ],
            [str(f.born)],
            o.pid,
            f.pid,
            f.name,
        )
        q2(
            "founder_birth_town",
            [
                f"In which town was the founder of the {o.name} born?",
                f"Where was the founder of the {o.name} born?",
            ],
            _town_answers(f.town),
            o.pid,
            f.pid,
            f.name,
        )
        q2(
            "org_hq_province",
            [f"In which province is the {o.name} headquartered?"],
            _province_answers(o.town),
            o.pid,
            o.town.pid,
            o.town.name,
        )
        if o.town.river is not None:
            q2(
                "org_hq_river",
                [f"Which river flows through the town where the {o.name} is headquartered?"],
                _river_answers(o.town.river),
                o.pid,
                o.town.pid,
                o.town.name,
            )

    for inv in inventions:
        p = inv.inventor
        q1("invention_inventor", [f"Who invented the {inv.name}?"], [p.name], inv.pid)
        q1(
            "invention_year",
            [f"In which year was the {inv.name} invented?", f"When was the {inv.name} invented?"],
            [str(inv.year)],
            inv.pid,
        )
        q1(
            "invention_town",
            [f"In which town was the {inv.name} first demonstrated?"],
            _town_answers(inv.town),
            inv.pid,
        )
        q2(
            "inventor_birth_town",
            [f"In which town was the inventor of the {inv.name} born?"],
            _town_answers(p.town),
            inv.pid,
            p.pid,
            p.name,
        )
        q2(
            "inventor_birth_year",
            [f"In which year was the inventor of the {inv.name} born?"],
            [str(p.born)],
            inv.pid,
            p.pid,
            p.name,
        )

    for e in events:
        q1(
            "event_town",
            [f"In which town was the {e.name} held?", f"Where did the {e.name} take place?"],
            _town_answers(e.town),
            e.pid,
        )
        q1(
            "event_year",
            [f"In which year was the {e.name} held?", f"When did the {e.name} take place?"],
            [str(e.year)],
            e.pid,
        )
        q1("event_org", [f"Which organisation organised the {e.name}?"], [e.org.name], e.pid)
        q2(
            "event_org_founder",
            [f"Who founded the organisation that organised the {e.name}?"],
            [e.org.founder.name],
            e.pid,
            e.org.pid,
            e.org.name,
        )
        q2(
            "event_org_hq",
            [f"In which town is the organisation that organised the {e.name} headquartered?"],
            _town_answers(e.org.town),
            e.pid,
            e.org.pid,
            e.org.name,
        )
        if e.town.river is not None:
            q2(
                "event_town_river",
                [f"Which river flows through the town where the {e.name} was held?"],
                _river_answers(e.town.river),
                e.pid,
                e.town.pid,
                e.town.name,
            )

    return single, double


def _round_robin(rng: random.Random, groups: dict[str, list[_Candidate]], n: int) -> list[_Candidate]:
    """Take ``n`` candidates, one template at a time, so rare templates are not drowned by common ones."""
    pools = {k: list(v) for k, v in sorted(groups.items())}
    for pool in pools.values():
        rng.shuffle(pool)
    total = sum(len(p) for p in pools.values())
    if n > total:
        raise ValueError(f"asked for {n} questions but the world only supports {total}; add entities")
    picked: list[_Candidate] = []
    while len(picked) < n:
        for key in list(pools):
            if len(picked) == n:
                break
            if pools[key]:
                picked.append(pools[key].pop())
            else:
                del pools[key]
    return picked


def _sample_and_split(
    rng: random.Random,
    single: dict[str, list[_Candidate]],
    double: dict[str, list[_Candidate]],
    n_train: int,
    n_test: int,
    two_hop_fraction: float,
) -> tuple[list[QA], list[QA]]:
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

    def to_qa(split: str, items: list[_Candidate]) -> list[QA]:
        return [
            QA(
                id=f"{split}_{i}",
                question=c.question,
                golden_answers=list(c.answers),
                hops=len(c.supporting_ids),
                template=c.template,
                supporting_ids=list(c.supporting_ids),
                bridge=c.bridge,
            )
            for i, c in enumerate(items)
        ]

    return to_qa("train", train_c), to_qa("test", test_c)


# ---------------------------------------------------------------------------------------------------------
# Files


def _dump(path: Path, rows: list[dict[str, object]]) -> None:
    # Fixed key order, "\n" line ends and UTF-8 keep the bytes identical across runs and platforms.
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def qa_record(qa: QA) -> dict[str, object]:
    """The FlashRAG-style row written to ``train.jsonl`` / ``test.jsonl``."""
    return {
        "id": qa.id,
        "question": qa.question,
        "golden_answers": qa.golden_answers,
        "hops": qa.hops,
        "metadata": {"template": qa.template, "supporting_ids": qa.supporting_ids, "bridge": qa.bridge or ""},
    }


def write_world(world: World, out_dir: str | Path) -> Path:
    """Write ``corpus.jsonl``, ``train.jsonl`` and ``test.jsonl`` into ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _dump(out / "corpus.jsonl", [{"id": p.id, "contents": p.contents} for p in world.passages])
    for split in SPLITS:
        _dump(out / f"{split}.jsonl", [qa_record(q) for q in world.split(split)])
    return out


def available_datasets() -> list[str]:
    """Names of the datasets shipped inside the package."""
    if not DATASETS_DIR.is_dir():
        return []
    return sorted(d.name for d in DATASETS_DIR.iterdir() if d.is_dir() and (d / "corpus.jsonl").is_file())


def builtin_dataset_dir(name: str = "fictional") -> Path:
    """The folder of a shipped dataset (``corpus.jsonl``, ``train.jsonl``, ``test.jsonl``)."""
    names = available_datasets()
    if name not in names:
        raise ValueError(f"unknown built-in dataset {name!r}; available: {', '.join(names) or '(none)'}")
    return DATASETS_DIR / name


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_rl.world", description="Generate the fictional encyclopedia and its questions."
    )
    parser.add_argument("--seed", type=int, default=0, help="Random seed (0 is the shipped world).")
    parser.add_argument("--out", required=True, help="Output folder for corpus/train/test .jsonl files.")
    parser.add_argument("--n-people", type=int, default=1000)
    parser.add_argument("--n-towns", type=int, default=450)
    parser.add_argument("--n-train", type=int, default=4000)
    parser.add_argument("--n-test", type=int, default=500)
    parser.add_argument("--two-hop-fraction", type=float, default=0.3)
    args = parser.parse_args(argv)
    world = generate_world(
        seed=args.seed,
        n_people=args.n_people,
        n_towns=args.n_towns,
        n_train=args.n_train,
        n_test=args.n_test,
        two_hop_fraction=args.two_hop_fraction,
    )
    path = write_world(world, args.out)
    out(
        f"wrote {len(world.passages)} passages, {len(world.train)} train and {len(world.test)} test "
        f"questions to {path}"
    )


if __name__ == "__main__":
    main()
