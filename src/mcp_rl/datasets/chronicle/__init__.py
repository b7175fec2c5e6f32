"""A second fictional world for the search tool, for evaluation only: an island chronicle.

Written apart from the ``fictional`` encyclopedia (which the search recipe trains on) so that a score on it
says whether a trained model learnt to search, not the first world's phrasings. Its own kinds of thing
(people, towns, islands, ships, observatories, guilds, expeditions, festivals, manuscripts), its own
sentence templates, its own questions, and answers of several shapes: full names of two or three words,
years, towns and islands, peaks and seas, ships and guilds, trades, months.

Files (see :func:`write`), there is no train split:

``corpus.jsonl``
    one passage per entity in the Search-R1 corpus format, ``{"id", "contents": "\\"Title\\"\\ntext"}``,
    each under :data:`~mcp_rl.datasets.chronicle.prose.MAX_WORDS` words.
``test.jsonl``
    FlashRAG questions: ``{"id", "question", "golden_answers", "hops", "metadata"}``; ``metadata`` holds
    the relation(s) asked, ``subject``, ``bridge`` (two-hop: the entity the first passage names, whose own
    passage holds the answer), ``supporting_ids`` (the passages that hold the chain, in order) and
    ``answer_type`` (person, place, name, year or word). About 30% of the questions are two-hop.

Seed 0 with the default sizes is the copy shipped next to this file. Command line:
``python -m mcp_rl.datasets.chronicle --seed 1 --out DIR`` (another seed: another world, the same kinds of
passage and question).
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from mcp_rl.datasets import write_jsonl
from mcp_rl.rewards.answers import normalize_answer

from .asking import RELATIONS, Question, chains, one_hop, two_hop
from .prose import Writer
from .world import Entity, World, WorldSize, build_world

N_QUESTIONS = 400
TWO_HOP_SHARE = 0.3
_TRIES = 200  # draws per question before a relation or chain is given up as unaskable


def generate(
    seed: int = 0,
    n_questions: int = N_QUESTIONS,
    two_hop_share: float = TWO_HOP_SHARE,
    size: WorldSize | None = None,
) -> dict[str, list[dict[str, object]]]:
    """``{"corpus": passages, "test": questions}``, everything drawn from ``Random(seed)``."""
    rng = random.Random(seed)
    world = build_world(rng, size)
    writer = Writer(rng)
    passages = {entity.doc_id: writer.passage(entity) for entity in world.documented()}
    corpus = [
        {"id": entity.doc_id, "contents": f'"{entity.name.canonical}"\n{passages[entity.doc_id]}'}
        for entity in world.documented()
    ]
    questions = _questions(world, passages, rng, n_questions, two_hop_share)
    rng.shuffle(questions)  # hops mixed, so the first N of a --limit run hold both kinds
    return {"corpus": corpus, "test": [_row(i, q) for i, q in enumerate(questions)]}


def _questions(
    world: World, passages: dict[str | None, str], rng: random.Random, n: int, two_hop_share: float
) -> list[Question]:
    n_two = round(n * two_hop_share)
    asked: set[str] = set()
    out: list[Question] = []

    def keep(draw: Callable[[], Question | None]) -> bool:
        for _ in range(_TRIES):
            question = draw()
            if question is not None and question.text not in asked and _fair(question, passages):
                asked.add(question.text)
                out.append(question)
                return True
        return False

    for i in range(n - n_two):
        relation = RELATIONS[i % len(RELATIONS)]
        subjects = [e for e in world.by_kind[relation.kind] if relation.fact in e.facts]
        if not keep(
            lambda relation=relation, subjects=subjects: one_hop(rng.choice(subjects), relation, rng)
        ):
            raise RuntimeError(f"could not draw a fair {relation.key} question; is the world too small?")
    pairs = chains(world)
    rng.shuffle(pairs)
    while len(out) < n:
        if not pairs:
            raise RuntimeError("could not draw enough fair two-hop questions; is the world too small?")
        first, second = pairs.pop(0)
        pairs.append((first, second))
        subjects = [e for e in world.by_kind[first.kind] if first.fact in e.facts]

        def draw(first=first, second=second, subjects=subjects) -> Question | None:
            subject = rng.choice(subjects)
            bridge = subject.facts[first.fact]
            if (
                not isinstance(bridge, Entity)
                or bridge.kind != second.kind
                or second.fact not in bridge.facts
            ):
                return None
            return two_hop(subject, first, second, rng)

        if not keep(draw):  # a chain that always leads back or gives itself away (a port's island's port)
            pairs.pop()
    return out


def _fair(question: Question, passages: dict[str | None, str]) -> bool:
    """No answer given away by the question, and a two-hop answer only in the bridge's passage."""
    asked = f" {normalize_answer(question.text)} "
    if any(f" {normalize_answer(a)} " in asked for a in question.golden_answers):
        return False
    if question.bridge is None:
        return True
    first = normalize_answer(passages[question.subject.doc_id])
    return normalize_answer(question.golden_answers[0]) not in first


def _row(i: int, question: Question) -> dict[str, object]:
    subject, bridge = question.subject, question.bridge
    supporting = [subject.doc_id] + ([bridge.doc_id] if bridge is not None else [])
    return {
        "id": f"test_{i}",
        "question": question.text,
        "golden_answers": question.golden_answers,
        "hops": question.hops,
        "metadata": {
            "relations": [r.key for r in question.relations],
            "subject": subject.name.canonical,
            "bridge": bridge.name.canonical if bridge is not None else None,
            "supporting_ids": supporting,
            "answer_type": question.answer_type,
        },
    }


def write(out_dir: str | Path, seed: int = 0, n_questions: int = N_QUESTIONS) -> Path:
    """Write ``corpus.jsonl`` and ``test.jsonl`` for ``seed`` into ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in generate(seed, n_questions).items():
        write_jsonl(out / f"{name}.jsonl", rows)
    return out


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_rl.datasets.chronicle",
        description="Generate the chronicle world: a search corpus and evaluation questions.",
    )
    parser.add_argument("--seed", type=int, default=0, help="Random seed (0 is the shipped copy).")
    parser.add_argument("--out", required=True, help="Output folder for corpus.jsonl and test.jsonl.")
    parser.add_argument("--n-questions", type=int, default=N_QUESTIONS, help="Questions in test.jsonl.")
    args = parser.parse_args(argv)
    path = write(args.out, args.seed, args.n_questions)
    out(f"wrote the chronicle corpus and {args.n_questions} test questions to {path}")
