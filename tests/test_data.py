"""Loading QA data: the built-in world, FlashRAG jsonl, Search-R1 parquet, and the errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mcp_rl import data
from mcp_rl.answers import golden_list as as_answer_list
from mcp_rl.data import load_qa, qa_from_rows, question_from_prompt

SEARCH_R1_INSTRUCTION = (
    "Answer the given question. You must conduct reasoning inside <think> and </think> first every time you "
    "get new information. ... For example, <answer> Beijing </answer>. Question: {q}\n"
)


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _search_r1_row(i: int, question: str, target: Any, source: str = "nq") -> dict[str, Any]:
    return {
        "data_source": source,
        "prompt": [{"role": "user", "content": SEARCH_R1_INSTRUCTION.format(q=question)}],
        "ability": "fact-reasoning",
        "reward_model": {"style": "rule", "ground_truth": {"target": target}},
        "extra_info": {"split": "train", "index": i},
    }


def test_builtin_train_and_test() -> None:
    train = load_qa("fictional")
    test = load_qa("fictional", split="test")
    assert (len(train), len(test)) == (4000, 500)
    assert train.column_names[:3] == ["id", "question", "golden_answers"]
    assert {"hops", "metadata"} <= set(train.column_names)
    row = test[0]
    assert isinstance(row["id"], str) and row["question"].endswith("?")
    assert isinstance(row["golden_answers"], list) and all(isinstance(a, str) for a in row["golden_answers"])
    assert len(load_qa("fictional", split="test", limit=7)) == 7
    assert len(load_qa("fictional", limit=0)) == 0


def test_flashrag_jsonl_file_and_folder(tmp_path: Path) -> None:
    rows = [
        {
            "id": 1,
            "question": " Who built the Tolvane Loom? ",
            "golden_answers": ["Velora Quint"],
            "extra": "x",
        },
        {"question": "When?", "golden_answers": [1842]},  # no id, numeric answer
        {"id": "c", "question": "Where?", "golden_answers": "Draskel", "extra": "y"},  # str answer
    ]
    path = _write_jsonl(tmp_path / "train.jsonl", rows)
    ds = load_qa(str(path))
    assert ds["id"] == ["1", "train_1", "c"]
    assert ds["question"][0] == "Who built the Tolvane Loom?"
    assert ds["golden_answers"] == [["Velora Quint"], ["1842"], ["Draskel"]]
    assert ds["extra"] == ["x", None, "y"]
    _write_jsonl(tmp_path / "test.jsonl", rows[:1])
    assert len(load_qa(str(tmp_path), split="test")) == 1
    assert len(load_qa(str(tmp_path), split="train", limit=2)) == 2


def test_search_r1_parquet_with_ndarray_targets(tmp_path: Path) -> None:
    df = pd.DataFrame(
        [
            _search_r1_row(0, "who wrote the velvet ledger?", np.array(["Mara Voss", "M. Voss"])),
            _search_r1_row(0, "when was the kessin guild founded?", np.array(["1880"]), source="hotpotqa"),
        ]
    )
    path = tmp_path / "nq_hotpot.parquet"
    df.to_parquet(path)
    ds = load_qa(str(path))
    assert ds["question"] == ["who wrote the velvet ledger?", "when was the kessin guild founded?"]
    assert ds["golden_answers"] == [["Mara Voss", "M. Voss"], ["1880"]]
    # Indices restart per source in Search-R1's merged files, so ids carry the source.
    assert ds["id"] == ["nq_0", "hotpotqa_0"]
    assert ds["data_source"] == ["nq", "hotpotqa"]
    assert "prompt" not in ds.column_names and "reward_model" not in ds.column_names

    # pandas hands nested list columns back as ndarrays: the in-memory path must cope too.
    records = pd.read_parquet(path).to_dict("records")
    assert isinstance(records[0]["reward_model"]["ground_truth"]["target"], np.ndarray)
    assert qa_from_rows(records)["golden_answers"] == ds["golden_answers"]


def test_search_r1_parquet_with_str_target_and_folder(tmp_path: Path) -> None:
    pd.DataFrame([_search_r1_row(3, "what is the capital of vell?", "Draskel")]).to_parquet(
        tmp_path / "test.parquet"
    )
    ds = load_qa(str(tmp_path), split="test")
    assert ds[0]["golden_answers"] == ["Draskel"] and ds[0]["id"] == "nq_3"


def test_question_and_answer_helpers() -> None:
    assert question_from_prompt(SEARCH_R1_INSTRUCTION.format(q="who is x?")) == "who is x?"
    assert question_from_prompt("  just a question?  ") == "just a question?"
    assert as_answer_list(np.array(["a", "b"])) == ["a", "b"]
    assert as_answer_list("a") == ["a"]
    assert as_answer_list(("a", 3)) == ["a", "3"]
    assert as_answer_list(None) == []


def test_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="not found"):
        load_qa(str(tmp_path / "missing.jsonl"))
    with pytest.raises(ValueError, match="no 'golden_answers' column"):
        load_qa(str(_write_jsonl(tmp_path / "a.jsonl", [{"id": "1", "question": "q?"}])))
    with pytest.raises(ValueError, match="no 'question' column"):
        load_qa(str(_write_jsonl(tmp_path / "b.jsonl", [{"id": "1", "golden_answers": ["x"]}])))
    with pytest.raises(ValueError, match="no golden answers"):
        load_qa(str(_write_jsonl(tmp_path / "c.jsonl", [{"question": "q?", "golden_answers": []}])))
    bad = tmp_path / "d.jsonl"
    bad.write_text('{"question": "q?", "golden_answers": ["x"]}\n{oops\n')
    with pytest.raises(ValueError, match=r"d\.jsonl:2"):
        load_qa(str(bad))
    with pytest.raises(ValueError, match=r"no dev\.jsonl"):
        load_qa("fictional", split="dev")
    row = _search_r1_row(0, "q?", ["x"])
    del row["reward_model"]["ground_truth"]
    pd.DataFrame([row]).to_parquet(tmp_path / "e.parquet")
    with pytest.raises(ValueError, match=r"reward_model\.ground_truth\.target"):
        load_qa(str(tmp_path / "e.parquet"))

    def offline(*args: Any, **kwargs: Any) -> None:
        raise ConnectionError("no network")

    monkeypatch.setattr(data.datasets, "load_dataset", offline)
    with pytest.raises(ValueError, match="hub"):
        load_qa("someone/some-qa-set")
