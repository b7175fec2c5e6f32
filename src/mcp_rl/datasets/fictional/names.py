"""Syllable-built names for the fictional world, unique across the whole world and never a real word."""

from __future__ import annotations

import random
from collections.abc import Sequence

# Simple onsets and vowels are repeated to weight them: short, pronounceable names tokenise into fewer
# pieces, which matters when a 135M model has to copy them into a query or an answer.
_ONSETS = "b b br d d dr f g g gr h k k kr l l m m n n p r r s s sk st t t th tr v v z c ch w".split()  # noqa: SIM905
_VOWELS = ["a", "a", "e", "e", "i", "o", "o", "u", "a", "e", "i", "o", "ai", "ei", "ou"]
_CODAS = ["", "", "", "", "n", "r", "l", "s", "th", "rn", "st", "m", "nd", "rk", "sk", "lt", "x"]
FIRST_ENDS = ["a", "ia", "en", "o", "is", "el", "ine", "ar", "us", "", "", "an"]
SUR_ENDS = ["", "", "an", "ek", "ov", "ett", "ard", "is", "ane", "orn", "ay", "ich"]
TOWN_ENDS = ["el", "ar", "ost", "eth", "ova", "um", "is", "ane", "ir", "en", "ak", "ith", "ora", "", ""]
PLAIN_ENDS = ["", "", "", "el", "an", "or", "en", "ia", "is", "ar"]
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


class Namer:
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
