"""`mcp-rl eval` scores episodes with the recipe's own rewards, called as TRL calls them (the rubric)."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, TEST_QUESTIONS, TEST_SYSTEM

from mcp_rl.config.recipe import recipe_from_dict
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.evaluation import evaluate
from mcp_rl.rewards import Rubric, exact_match


def _episode(i: int, answer: str | None) -> Trajectory:
    return Trajectory(
        prompt_index=i,
        prompt_messages=[{"role": "user", "content": f"task {i}"}],
        prompt_ids=[],
        completion_ids=[1, 2, 3],
        answer=answer,
        finish_reason="answer",
    )


def test_the_rubric_calls_each_reward_as_trl_does_and_survives_a_failing_one() -> None:
    seen: dict[str, Any] = {}

    def by_column(*, completions: list[Any], level: list[int], trajectories: list[Trajectory], **kw: Any):
        seen.update(kw, completions=completions, level=level)
        return [float(t.answer == str(lvl)) for t, lvl in zip(trajectories, level, strict=True)]

    async def halves(*, prompts: list[Any], **kw: Any) -> list[float | None]:
        return [0.5, None][: len(prompts)]

    def broken(**kw: Any) -> list[float]:
        raise KeyError("expected")

    def too_few(**kw: Any) -> list[float]:
        return [1.0]

    rows = [
        {"task": "a", "level": 1, "golden_answers": ["1"]},
        {"task": "b", "level": 2, "golden_answers": ["x"]},
    ]
    rubric = Rubric([by_column, halves, broken, too_few, exact_match], weights=[1.0, 2.0, 1.0, 1.0, 0.0])
    scored = rubric.score([_episode(0, "1"), _episode(1, "3")], rows)
    assert scored.scores == {
        "by_column": [1.0, 0.0],
        "halves": [0.5, None],
        "broken": [None, None],
        "too_few": [None, None],
        "exact_match": [1.0, 0.0],
    }
    assert scored.errors == {
        "broken": {"episodes": 2, "first_error": "KeyError: 'expected'"},
        "too_few": {"episodes": 2, "first_error": "ValueError: returned 1 scores for 2 episodes"},
    }
    # Weighted as TRL weighs them: unscored left out, the zero-weight exact_match a metric only.
    assert scored.totals == [1.0 + 2 * 0.5, 0.0]
    assert scored.skipped() == {
        "halves": {"skipped": 1, "of": 2},
        "broken": {"skipped": 2, "of": 2},
        "too_few": {"skipped": 2, "of": 2},
    }
    # Every dataset column arrives as a list, beside TRL's own arguments.
    assert seen["task"] == ["a", "b"] and seen["golden_answers"] == [["1"], ["x"]]
    assert (
        seen["completion_ids"] == [[1, 2, 3], [1, 2, 3]] and seen["completions"][0][0]["role"] == "assistant"
    )
    assert {"trainer_state", "log_extra", "log_metric"} <= set(seen)


REWARDS_FILE = '''
def place_named(*, completions, place, **kwargs):
    """1 when the episode's text names the row's place (a custom column)."""
    return [float(p in c[0]["content"]) for c, p in zip(completions, place)]


def needs_a_column_that_is_not_there(*, missing_column, **kwargs):
    return [1.0] * len(missing_column)
'''


@pytest.fixture(scope="module")
def searching_model_dir(searching_tiny_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    model, tokenizer = searching_tiny_model
    folder = tmp_path_factory.mktemp("searching-model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def task_recipe(model_dir: Path, search_entry: dict[str, object], tmp_path: Path, **sections: object) -> Any:
    """A recipe over three test questions in a CSV file (columns ask, place), on the searching tiny model."""
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("ask,place\n" + "".join(f'"{q}",Draskel\n' for q in TEST_QUESTIONS))
    return recipe_from_dict(
        {
            "model": {"name_or_path": str(model_dir)},
            "data": {"train": str(tasks), "eval": str(tasks), "answer_column": "place"},
            "tools": {"mcpServers": {"search": search_entry}},
            "parser": {"name": "search_r1"},
            "prompt": {"system": TEST_SYSTEM, "user_template": "{ask}", "tools_in": "template"},
            **sections,
        },
        check_trainer=False,
    )


def test_eval_reports_the_recipes_rewards_and_writes_them_per_episode(
    searching_model_dir: Path,
    search_entry: dict[str, object],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / "task_rewards.py").write_text(REWARDS_FILE)
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = task_recipe(
        searching_model_dir,
        search_entry,
        tmp_path,
        rollout={"max_turns": 3, "max_new_tokens": 16},
        rewards=[
            {"name": "exact_match", "weight": 1.0},
            {"name": "task_rewards:place_named", "weight": 0.5},
            {"name": "task_rewards:needs_a_column_that_is_not_there"},
        ],
    )
    output = tmp_path / "eval.json"
    report = evaluate(recipe, output=output)
    assert report["n"] == 3
    assert report["rewards"]["exact_match"] == report["em"]
    assert report["rewards"]["needs_a_column_that_is_not_there"] is None
    assert report["reward_errors"] == {
        "needs_a_column_that_is_not_there": {
            "episodes": 3,
            "first_error": "TypeError: "
            "needs_a_column_that_is_not_there() missing 1 required keyword-only argument: 'missing_column'",
        }
    }
    assert json.loads(output.read_text())["rewards"] == report["rewards"]
    episodes = [
        json.loads(line) for line in output.with_suffix(".trajectories.jsonl").read_text().splitlines()
    ]
    assert [e["row"]["place"] for e in episodes] == ["Draskel"] * 3
    assert [e["task"] for e in episodes] == TEST_QUESTIONS
    for episode in episodes:
        scores = episode["rewards"]
        assert set(scores) == {"exact_match", "place_named", "needs_a_column_that_is_not_there"}
        assert scores["exact_match"] == episode["em"]
        assert episode["reward"] == pytest.approx(scores["exact_match"] + 0.5 * scores["place_named"])
        transcript = "".join(turn["text"] + (turn["observation"] or "") for turn in episode["turns"])
        assert scores["place_named"] == float("Draskel" in transcript)
    named = [e["rewards"]["place_named"] for e in episodes]
    assert report["rewards"]["place_named"] == pytest.approx(sum(named) / 3)
    assert report["reward"] == pytest.approx(sum(e["reward"] for e in episodes) / 3)


def bench(script: str, *arguments: str, ok: bool = True) -> subprocess.CompletedProcess[str]:
    """``python bench/SCRIPT ARGUMENTS`` with few bootstrap resamples; ``ok``: it must exit 0."""
    command = [sys.executable, str(ROOT / "bench" / script), *arguments, "--resamples", "200"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    assert not ok or done.returncode == 0, done.stderr
    return done


def test_sampled_eval_plays_each_task_n_times_and_compares_with_greedy_by_paired_bootstrap(
    searching_model_dir: Path, search_entry: dict[str, object], tmp_path: Path
) -> None:
    """``samples`` > 0 plays every task that many times at the recipe's temperature; bench/compare_evals.py
    pairs two reports on the same tasks and bounds their difference."""
    recipe = task_recipe(
        searching_model_dir,
        search_entry,
        tmp_path,
        rollout={"max_turns": 3, "max_new_tokens": 16, "temperature": 5.0},
        rewards=[{"name": "exact_match"}],
    )
    greedy = evaluate(recipe, output=tmp_path / "greedy.json")
    sampled = evaluate(recipe, output=tmp_path / "sampled.json", samples=2)
    assert greedy["decoding"] == "greedy" and greedy["samples_per_task"] == 1
    assert sampled["decoding"] == "sampled at temperature 5" and sampled["n"] == 2 * len(TEST_QUESTIONS)
    lines = (tmp_path / "sampled.trajectories.jsonl").read_text().splitlines()
    assert [json.loads(line)["task"] for line in lines] == [q for q in TEST_QUESTIONS for _ in range(2)]
    # At this temperature the samples are not the greedy episodes: the token streams differ somewhere.
    texts = {json.dumps(json.loads(line)["turns"]) for line in lines}
    greedy_texts = {
        json.dumps(json.loads(line)["turns"])
        for line in (tmp_path / "greedy.trajectories.jsonl").read_text().splitlines()
    }
    assert texts - greedy_texts
    # pass@1 is the sampled mean; pass@2 the share of tasks that one of their two samples solved.
    solved = [json.loads(line)["rewards"]["exact_match"] for line in lines]
    either = sum(max(solved[i : i + 2]) for i in range(0, len(solved), 2)) / len(TEST_QUESTIONS)
    assert sampled["pass_at_k"]["exact_match"] == {
        "1": pytest.approx(sampled["rewards"]["exact_match"]),
        "2": pytest.approx(either),
    }
    assert "pass_at_k" not in greedy
    # The same report against itself: a difference of exactly 0, and an interval around it.
    done = bench("compare_evals.py", str(tmp_path / "greedy.json"), str(tmp_path / "greedy.json"))
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["all"]["n"] == len(TEST_QUESTIONS)
    assert result["all"]["difference"] == 0 and result["all"]["ci95"] == [0, 0]
    assert result["all"]["before"] == greedy["em"]
    # A report kept with its episodes gzipped (as in docs/measurements) compares the same.
    kept = tmp_path / "kept"
    kept.mkdir()
    shutil.copy(tmp_path / "greedy.json", kept / "greedy.json")
    episodes = (tmp_path / "greedy.trajectories.jsonl").read_bytes()
    (kept / "greedy.trajectories.jsonl.gz").write_bytes(gzip.compress(episodes))
    done = bench("compare_evals.py", str(tmp_path / "greedy.json"), str(kept / "greedy.json"))
    assert json.loads(done.stdout.splitlines()[-1])["all"] == result["all"]
    # An episode left unscored (its server failed) counts as a failure, or with --drop-unscored its task is
    # left out on both sides.
    failed = [json.loads(line) for line in episodes.decode().splitlines()]
    failed[0]["rewards"]["exact_match"] = None
    (kept / "failed.trajectories.jsonl").write_text("".join(json.dumps(e) + "\n" for e in failed))
    shutil.copy(tmp_path / "greedy.json", kept / "failed.json")
    pair = [str(tmp_path / "greedy.json"), str(kept / "failed.json"), "--metric", "exact_match"]
    counted = json.loads(bench("compare_evals.py", *pair).stdout.splitlines()[-1])
    dropped = json.loads(bench("compare_evals.py", *pair, "--drop-unscored").stdout.splitlines()[-1])
    assert counted["unscored_tasks"] == dropped["unscored_tasks"] == dropped["dropped_unscored"] == 1
    assert (counted["all"]["n"], dropped["all"]["n"]) == (len(TEST_QUESTIONS), len(TEST_QUESTIONS) - 1)
    assert counted["all"]["after"] == pytest.approx(
        sum(e["rewards"]["exact_match"] or 0 for e in failed) / len(TEST_QUESTIONS)
    )
    # Greedy against sampled: paired by task (a task's samples averaged), so n is the number of tasks.
    done = bench("compare_evals.py", str(tmp_path / "greedy.json"), str(tmp_path / "sampled.json"))
    result = json.loads(done.stdout.splitlines()[-1])["all"]
    assert result["n"] == len(TEST_QUESTIONS)
    assert result["before"] == pytest.approx(greedy["em"]) and result["after"] == pytest.approx(sampled["em"])
    assert result["ci95"][0] <= result["difference"] <= result["ci95"][1]
    # pass@2 of the sampled report against itself: the report's own pass@2; pass@4 needs 4 samples a task.
    compare = [str(tmp_path / "sampled.json"), str(tmp_path / "sampled.json"), "--metric", "exact_match"]
    done = bench("compare_evals.py", *compare, "--pass-at", "2")
    passes = json.loads(done.stdout.splitlines()[-1])
    assert passes["metric"] == "exact_match pass@2"
    assert passes["all"]["before"] == pytest.approx(sampled["pass_at_k"]["exact_match"]["2"])
    done = bench("compare_evals.py", *compare, "--pass-at", "4", ok=False)
    assert done.returncode != 0 and "--samples 4" in done.stderr
    # The checkpoint curve pairs each report with the control the same way, and draws it.
    done = bench(
        "checkpoint_curve.py", str(tmp_path / "greedy.json"), f"sampled:2={tmp_path / 'sampled.json'}",
        f"greedy:1={tmp_path / 'greedy.json'}", "--out", str(tmp_path / "curve.png"),
    )  # fmt: skip
    curve = json.loads(done.stdout.splitlines()[-1])
    assert curve["control"]["success"] == pytest.approx(greedy["em"])
    assert curve["runs"]["sampled"][0]["difference"] == pytest.approx(result["difference"])
    assert curve["runs"]["greedy"][0]["ci95"] == [0, 0] and (tmp_path / "curve.png").stat().st_size > 0
