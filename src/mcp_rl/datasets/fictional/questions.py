"""The questions over the fictional world: every single- and two-hop question the entities support, then a
balanced sample of them split into train and test."""

from __future__ import annotations

import random
from dataclasses import dataclass

from mcp_rl.datasets.fictional.entities import Entities, Mountain, River, Town


@dataclass(frozen=True)
class Candidate:
    template: str
    question: str
    answers: list[str]
    supporting_ids: list[str]
    bridge: str | None = None


def _town_answers(t: Town) -> list[str]:
    return [t.name]


def _river_answers(r: River) -> list[str]:
    return [r.name, r.core, f"River {r.core}"]


def _mountain_answers(m: Mountain) -> list[str]:
    return [m.name, m.core]


def _province_answers(t: Town) -> list[str]:
    return [t.province, f"{t.province} Province"]


def candidates(
    rng: random.Random, w: Entities
) -> tuple[dict[str, list[Candidate]], dict[str, list[Candidate]]]:
    """All candidate questions, grouped by template (single-hop, two-hop)."""
    towns, rivers, mountains, people, orgs = w.towns, w.rivers, w.mountains, w.people, w.orgs
    inventions, events = w.inventions, w.events
    single: dict[str, list[Candidate]] = {}
    double: dict[str, list[Candidate]] = {}

    def q1(template: str, phrasings: list[str], answers: list[str], pid: str) -> None:
        single.setdefault(template, []).append(Candidate(template, rng.choice(phrasings), answers, [pid]))

    def q2(
        template: str, phrasings: list[str], answers: list[str], pid1: str, pid2: str, bridge: str
    ) -> None:
        double.setdefault(template, []).append(
            Candidate(template, rng.choice(phrasings), answers, [pid1, pid2], bridge)
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
