"""The fictional world: determinism, consistency of facts and answers, and the shipped copy."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from mcp_rl.datasets import FILES, available_datasets, builtin_dataset_dir
from mcp_rl.datasets.fictional import QA, World, generate_world, main, qa_record, questions, write_world
from mcp_rl.datasets.fictional.passages import MAX_WORDS, MIN_WORDS


@pytest.fixture(scope="module")
def world() -> World:
    return generate_world(seed=0)


def _read_bytes(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in FILES}


def test_same_seed_gives_byte_identical_files(world: World, tmp_path: Path) -> None:
    write_world(world, tmp_path / "a")
    write_world(generate_world(seed=0), tmp_path / "b")
    assert _read_bytes(tmp_path / "a") == _read_bytes(tmp_path / "b")


def test_different_seed_gives_different_names(world: World) -> None:
    other = generate_world(seed=1)
    a = {p.title for p in world.passages}
    b = {p.title for p in other.passages}
    assert len(a & b) < 0.05 * len(a)
    assert [q.question for q in world.test] != [q.question for q in other.test]


def test_shipped_dataset_equals_fresh_seed0_generation(world: World, tmp_path: Path) -> None:
    # If this fails, the generator changed: regenerate with `python -m mcp_rl.datasets.fictional --seed 0
    # --out src/mcp_rl/datasets/fictional` (and expect every result on the built-in data to move).
    write_world(world, tmp_path)
    assert _read_bytes(builtin_dataset_dir("fictional")) == _read_bytes(tmp_path)


def test_sizes(world: World) -> None:
    assert 2000 <= len(world.passages) <= 3000
    assert len(world.train) == 4000
    assert len(world.test) == 500
    for split in (world.train, world.test):
        two = sum(q.hops == 2 for q in split) / len(split)
        assert 0.25 <= two <= 0.35
        assert {q.hops for q in split} == {1, 2}
    words = [len(p.text.split()) for p in world.passages]
    assert min(words) >= MIN_WORDS and max(words) <= MAX_WORDS


def test_names_and_questions_are_unique(world: World) -> None:
    titles = [p.title for p in world.passages]
    assert len(set(titles)) == len(titles)
    assert [p.id for p in world.passages] == [str(i) for i in range(len(world.passages))]
    questions = [q.question for q in world.train + world.test]
    assert len(set(questions)) == len(questions)
    ids = [q.id for q in world.train + world.test]
    assert len(set(ids)) == len(ids)


def test_every_answer_is_stated_in_its_passages(world: World) -> None:
    for q in world.train + world.test:
        assert q.golden_answers and len(set(q.golden_answers)) == len(q.golden_answers)
        assert q.hops == len(q.supporting_ids)
        first = world.passage(q.supporting_ids[0])
        last = world.passage(q.supporting_ids[-1])
        if q.hops == 2:
            assert q.bridge is not None
            # The bridge is named in the first passage and is the title of the second.
            assert q.bridge in first.text, (q, first)
            assert last.title == q.bridge
        assert q.golden_answers[0] in last.contents, (q, last)


def test_train_varied_phrases_the_training_questions_anew(world: World) -> None:
    asks = {ask.template: ask for ask in questions.ALL_ASKS}

    def phrasing(q: QA) -> str:
        # The question with the name of the entity whose passage is read first taken out.
        title = world.passage(q.supporting_ids[0]).title
        assert title in q.question, q
        return q.question.replace(title, "…")

    def as_phrasings(templates: tuple[str, ...]) -> set[str]:
        return {re.sub(r"\{e[.a-z]*\.name\}", "…", t) for t in templates}

    shared = {t: as_phrasings(ask.phrasings) for t, ask in asks.items()}
    extra = {t: as_phrasings(ask.training_phrasings) for t, ask in asks.items()}
    assert all(extra.values()) and not any(shared[t] & extra[t] for t in asks)
    for q in world.train + world.test:
        assert phrasing(q) in shared[q.template], q
    assert [qa_record(q) | {"question": ""} for q in world.train] == [
        qa_record(q) | {"question": ""} for q in world.train_varied
    ]
    varied = []
    for q in world.train_varied:
        said = phrasing(q)
        assert said in shared[q.template] | extra[q.template], q
        varied.append(said in extra[q.template])
    # Most training questions get a phrasing the test split never uses, single- and two-hop alike.
    for hops in (1, 2):
        mine = [v for v, q in zip(varied, world.train_varied, strict=True) if q.hops == hops]
        assert sum(mine) > 0.6 * len(mine)


def test_town_answers_are_unambiguous(world: World) -> None:
    towns = {p.title for p in world.passages if p.kind == "town"}
    for q in world.train + world.test:
        if q.golden_answers[0] in towns:
            passage = world.passage(q.supporting_ids[-1])
            named = {w.strip(".,;()") for w in passage.text.split()} & towns
            assert named == {q.golden_answers[0]}, (q, passage)


def test_river_answers_are_unique_per_town(world: World) -> None:
    towns = {p.title for p in world.passages if p.kind == "town"}
    seen: dict[str, str] = {}
    for p in world.passages:
        if p.kind == "river":
            for word in p.text.replace(",", " ").replace(".", " ").split():
                if word in towns:
                    assert seen.setdefault(word, p.title) == p.title


def test_file_formats(world: World, tmp_path: Path) -> None:
    write_world(world, tmp_path)
    corpus = [json.loads(line) for line in (tmp_path / "corpus.jsonl").read_text().splitlines()]
    assert len(corpus) == len(world.passages)
    first = corpus[0]
    assert set(first) == {"id", "contents"} and isinstance(first["id"], str)
    assert first["contents"].startswith(f'"{world.passages[0].title}"\n')
    rows = [json.loads(line) for line in (tmp_path / "test.jsonl").read_text().splitlines()]
    assert len(rows) == len(world.test)
    assert {"id", "question", "golden_answers", "hops"} <= set(rows[0])
    assert all(isinstance(a, str) for r in rows for a in r["golden_answers"])


def test_builtin_dataset_dir() -> None:
    assert "fictional" in available_datasets()
    folder = builtin_dataset_dir()
    assert all((folder / name).is_file() for name in FILES)
    with pytest.raises(ValueError, match="available: arithmetic, chronicle, club, errands, fictional"):
        builtin_dataset_dir("nope")


def test_small_world_and_cli(tmp_path: Path) -> None:
    small = generate_world(
        seed=3, n_people=120, n_towns=60, n_rivers=15, n_mountains=15, n_orgs=40, n_inventions=30,
        n_events=20, n_train=200, n_test=50,
    )  # fmt: skip
    assert len(small.train) == 200 and len(small.test) == 50
    with pytest.raises(ValueError, match="only supports"):
        generate_world(seed=3, n_people=50, n_towns=30, n_rivers=5, n_mountains=5, n_orgs=5, n_inventions=5,
                       n_events=5, n_train=5000)  # fmt: skip
    lines: list[str] = []
    main(["--seed", "2", "--out", str(tmp_path), "--n-train", "100", "--n-test", "20"], out=lines.append)
    assert "wrote" in lines[0]
    assert len((tmp_path / "train.jsonl").read_text().splitlines()) == 100
