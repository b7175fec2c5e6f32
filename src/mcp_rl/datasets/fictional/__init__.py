"""A deterministic encyclopedia of fictional entities, with single- and two-hop questions over it.

Why fictional: a model cannot answer these questions from pre-training, so any gain after RL has to come
from learning to search and read. Names are built from syllables, facts are drawn from one
``random.Random(seed)``, and every question's answer is stated in a passage (two-hop answers in the
passage of the bridge entity, whose name is in the first passage).

The draws happen in a fixed order, which is what keeps the shipped files reproducible: entities
(:mod:`.entities`, names from :mod:`.names`), then passage texts (:mod:`.passages`), then questions and
their sampling (:mod:`.questions`).

Files (see :func:`write_world`): ``corpus.jsonl`` in the Search-R1 corpus format
(``{"id", "contents": "\\"Title\\"\\ntext"}``) and ``train.jsonl`` / ``test.jsonl`` in the FlashRAG format
(``{"id", "question", "golden_answers", "hops", "metadata"}``). ``train_varied.jsonl`` holds the same training
questions, each phrased anew from a wider set of phrasings that the test split never uses (a recipe picks it
with ``data.train_split: train_varied``). Seed 0 with the default arguments is the copy shipped next to this
file.

Command line: ``python -m mcp_rl.datasets.fictional --seed 0 --out DIR``.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mcp_rl.datasets.fictional.entities import build_entities
from mcp_rl.datasets.fictional.passages import entity_passages
from mcp_rl.datasets.fictional.questions import (
    Candidate,
    candidates,
    sample_and_split,
    vary_training_phrasings,
)

SPLITS = ("train", "train_varied", "test")


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
    # The training questions phrased anew (:func:`.questions.vary_training_phrasings`).
    train_varied: list[QA] = field(default_factory=list)
    config: dict[str, int | float] = field(default_factory=dict)

    def passage(self, pid: str) -> Passage:
        return self.passages[int(pid)]

    def split(self, name: str) -> list[QA]:
        if name not in SPLITS:
            raise ValueError(f"unknown split {name!r}; expected one of {SPLITS}")
        return {"train": self.train, "train_varied": self.train_varied, "test": self.test}[name]


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
    entities = build_entities(
        rng, n_people, n_towns, n_rivers, n_mountains, n_orgs, n_inventions, n_events, n_provinces
    )
    passages: list[Passage] = []
    for kind, entity, text in entity_passages(rng, entities):
        # The passage id is the corpus line number; questions cite it as a supporting id.
        entity.pid = str(len(passages))
        passages.append(Passage(id=entity.pid, title=entity.name, text=text, kind=kind))
    single, double = candidates(rng, entities)
    train, test = sample_and_split(rng, single, double, n_train, n_test, two_hop_fraction)
    # A generator of its own, so the files written before it existed stay as they were.
    varied = vary_training_phrasings(random.Random(f"training phrasings {seed}"), train)
    config: dict[str, int | float] = {
        "n_people": n_people, "n_towns": n_towns, "n_rivers": n_rivers, "n_mountains": n_mountains,
        "n_orgs": n_orgs, "n_inventions": n_inventions, "n_events": n_events, "n_provinces": n_provinces,
        "n_train": n_train, "n_test": n_test, "two_hop_fraction": two_hop_fraction,
    }  # fmt: skip
    return World(
        seed, passages, _to_qa("train", train), _to_qa("test", test), _to_qa("train", varied), config
    )


def _to_qa(split: str, items: list[Candidate]) -> list[QA]:
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
    """Write ``corpus.jsonl`` and a ``.jsonl`` per split into ``out_dir`` (created if needed)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    _dump(out / "corpus.jsonl", [{"id": p.id, "contents": p.contents} for p in world.passages])
    for split in SPLITS:
        _dump(out / f"{split}.jsonl", [qa_record(q) for q in world.split(split)])
    return out


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m mcp_rl.datasets.fictional",
        description="Generate the fictional encyclopedia and its questions.",
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
