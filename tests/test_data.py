"""Loading QA data: the built-in world, FlashRAG jsonl, Search-R1 parquet, and the errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from mcp_rl.config.recipe import recipe_from_dict
from mcp_rl.env import data
from mcp_rl.env.data import check_data, load_qa, qa_from_rows, question_from_prompt
from mcp_rl.env.golden_answers import golden_list as as_answer_list
from mcp_rl.env.prompts import template_fields
from mcp_rl.errors import DataError

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
    # A FlashRAG file whose later row lost a column names the row and the columns it has.
    rows = [{"id": "1", "question": "q?", "golden_answers": ["x"]}, {"id": "2", "question": "r?"}]
    with pytest.raises(DataError, match=r"row 1 has no 'golden_answers' column \(columns: id, question\)"):
        load_qa(str(_write_jsonl(tmp_path / "a.jsonl", rows)))
    rows = [{"id": "1", "question": "q?", "golden_answers": ["x"]}, {"id": "2", "golden_answers": ["y"]}]
    with pytest.raises(DataError, match="row 1 has no 'question' column"):
        load_qa(str(_write_jsonl(tmp_path / "b.jsonl", rows)))
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


# -- data of any shape --------------------------------------------------------------------------------
TASKS = [
    {"task": "Add 2 and 3", "expected": "5", "level": 1},
    {"task": "Multiply 4 by 6", "expected": "24", "level": 2},
]


def _write_csv(path: Path, rows: list[dict[str, Any]]) -> Path:
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_jsonl_csv_and_parquet_of_any_columns_load_as_they_are(tmp_path: Path) -> None:
    paths = [
        _write_jsonl(tmp_path / "tasks.jsonl", TASKS),
        _write_csv(tmp_path / "tasks.csv", TASKS),
        tmp_path / "tasks.parquet",
    ]
    pd.DataFrame(TASKS).to_parquet(paths[2])
    for path in paths:
        plain = load_qa(str(path))
        assert plain.column_names == ["task", "expected", "level"], path  # no golden_answers invented
        assert plain["task"] == ["Add 2 and 3", "Multiply 4 by 6"]
        named = load_qa(str(path), answer_column="expected")
        assert named["golden_answers"] == [["5"], ["24"]], path
        assert named["expected"] == plain["expected"]  # the configured column is kept too
    assert load_qa(str(paths[1]))["level"] == ["1", "2"]  # CSV cells are text
    assert load_qa(str(paths[2]))["level"] == [1, 2]


def test_answer_column_of_lists_and_csv_json_lists(tmp_path: Path) -> None:
    rows = [{"q": "capital of Vell?", "refs": ["Draskel", "draskel city"]}, {"q": "river?", "refs": ["Ober"]}]
    ds = load_qa(str(_write_jsonl(tmp_path / "t.jsonl", rows)), answer_column="refs")
    assert ds["golden_answers"] == [["Draskel", "draskel city"], ["Ober"]]
    csv_rows = [{"q": r["q"], "refs": json.dumps(r["refs"])} for r in rows]
    assert (
        load_qa(str(_write_csv(tmp_path / "t.csv", csv_rows)), answer_column="refs")["golden_answers"]
        == ds["golden_answers"]
    )
    # An alias column of a file without `question` still feeds golden_answers (auto), kept under its name.
    alias = load_qa(str(_write_jsonl(tmp_path / "a.jsonl", [{"prompt_text": "x", "answer": 7}])))
    assert alias["golden_answers"] == [["7"]] and alias["answer"] == [7]


def test_answer_column_overrides_flashrag_golden_answers(tmp_path: Path) -> None:
    rows = [{"id": 1, "question": "q?", "golden_answers": ["old"], "short": "new"}]
    ds = load_qa(str(_write_jsonl(tmp_path / "f.jsonl", rows)), answer_column="short")
    assert ds["golden_answers"] == [["new"]] and ds["short"] == ["new"] and ds["id"] == ["1"]


def test_folder_of_mixed_files_by_split(tmp_path: Path) -> None:
    _write_jsonl(tmp_path / "train-0.jsonl", TASKS[:1])
    _write_csv(tmp_path / "train-1.csv", TASKS[1:])
    pd.DataFrame(TASKS).to_parquet(tmp_path / "test.parquet")
    train = load_qa(str(tmp_path), split="train", answer_column="expected")
    assert train["task"] == ["Add 2 and 3", "Multiply 4 by 6"]
    assert train["golden_answers"] == [["5"], ["24"]]
    assert train["level"] == ["1", "2"]  # the jsonl's 1 beside the CSV's "2": text, as in a CSV
    assert len(load_qa(str(tmp_path), split="train", limit=1)) == 1
    assert load_qa(str(tmp_path), split="test")["level"] == [1, 2]
    (tmp_path / "dev").mkdir()
    _write_csv(tmp_path / "dev" / "part.csv", TASKS)
    assert len(load_qa(str(tmp_path), split="dev")) == 2
    with pytest.raises(
        DataError, match=r"split 'valid'.*files there: test\.parquet, train-0\.jsonl, train-1\.csv"
    ):
        load_qa(str(tmp_path), split="valid")


def test_template_fields() -> None:
    assert template_fields("{task} at level {level}: {meta[year]} {task}") == ["task", "level", "meta"]
    assert template_fields("no fields {{here}}") == []


def _recipe(train: str, **data: Any) -> Any:
    return recipe_from_dict(
        {
            "data": {"train": train, **data},
            "prompt": {"user_template": "Task: {task}"},
            "rewards": [{"name": "format"}],
        }
    )


def test_check_data_names_the_missing_column_and_the_columns_there(tmp_path: Path) -> None:
    path = str(_write_csv(tmp_path / "tasks.csv", TASKS))
    assert check_data(_recipe(path)) == ["task", "expected", "level"]
    recipe = _recipe(path)
    recipe.prompt.user_template = "Solve {problem}"
    with pytest.raises(DataError) as error:
        check_data(recipe)
    assert str(error.value) == (
        f"prompt.user_template: {{problem}} is not a column of data.train ({path}, split train); "
        "its columns: task, expected, level"
    )
    with pytest.raises(
        DataError,
        match=r"data.answer_column: 'solution' is not a column of .*tasks\.csv; "
        r"its columns: task, expected, level",
    ):
        check_data(_recipe(path, answer_column="solution"))
    needs_answers = _recipe(path)
    needs_answers.rewards[0].name = "exact_match"
    with pytest.raises(DataError, match=r"rewards\[0\].name: exact_match compares .* set data.answer_column"):
        check_data(needs_answers)
    needs_answers.data.answer_column = "expected"
    assert "golden_answers" in check_data(needs_answers)
    # The eval side: data.eval when set, with its own split.
    evaluated = _recipe(path, eval=str(_write_jsonl(tmp_path / "e.jsonl", [{"other": 1}])))
    with pytest.raises(DataError, match=r"\{task\} is not a column of data.eval .*its columns: other"):
        check_data(evaluated, "eval")


def test_a_column_mixing_lists_and_text_is_refused_by_name(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "m.jsonl", [{"task": "a", "tags": ["x"]}, {"task": "b", "tags": "y"}])
    with pytest.raises(DataError, match=r"column 'tags' holds values of different types \(list, str\)"):
        load_qa(str(path))
