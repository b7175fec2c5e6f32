"""Rewards declared in YAML that ask the tools: comparison operators, a reference-query check against a
real SQLite server, and a check of the state each episode left on its own per-episode instance."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SQLITE_SERVER

from mcp_rl.env.trajectory import Trajectory
from mcp_rl.rewards import build_reward_functions
from mcp_rl.rewards.compare import OPERATORS, first_number, value_at
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers


@pytest.mark.parametrize(
    ("operator", "actual", "expected", "options", "agrees"),
    [
        ("equals", "The Draskel.", "draskel", {}, True),
        ("equals", "42.0", "42", {}, True),
        ("equals", "Draskel", "Morvane", {}, False),
        ("number", "42 apples", "42.0000001", {"tolerance": 1e-3}, True),
        ("number", "41.9", "42", {"tolerance": 0.01}, False),
        ("number", "no digits", "42", {}, False),
        ("contains", "Doc 1: the fox lives in Draskel.", "Draskel", {}, True),
        ("contains", "the fox", "", {}, False),
        ("json_path", '{"result": {"rows": [{"n": 3}]}}', "3", {"path": "result.rows[0].n"}, True),
        ("json_path", '{"result": {"rows": []}}', "3", {"path": "result.rows[0].n"}, False),
        ("rows", '[[1, "a"], [2, "b"]]', '[[2, "B"], [1, "a"]]', {}, True),
        ("rows", "[[1], [1]]", "[[1]]", {}, False),
        ("rows", '[["Ada"], ["Bo"]]', "Bo, Ada", {}, True),
        ("rows", "[[3]]", "3.0", {}, True),
        ("rows", "not rows", "3", {}, False),
    ],
)
def test_operators(operator, actual, expected, options, agrees):
    assert OPERATORS[operator](actual, expected, **options) is agrees


def test_first_number_and_paths():
    assert first_number("about 1,234.5 m") == 1234.5 and first_number("1/4") == 0.25
    assert first_number("none") is None
    assert value_at({"a": [{"b": 2}]}, "$.a[0].b") == 2
    with pytest.raises(KeyError):
        value_at({"a": []}, "a[0]")


@pytest.fixture
def seed_db(tmp_path: Path) -> Path:
    path = tmp_path / "seed.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE towns (name TEXT, river TEXT)")
        db.executemany(
            "INSERT INTO towns VALUES (?, ?)", [("Draskel", "Ober"), ("Morvane", "Ober"), ("Ilt", "Sen")]
        )
    return path


def sqlite_entry(db: str, **extra: object) -> dict[str, object]:
    return {"command": sys.executable, "args": [SQLITE_SERVER, "--db", db], "cwd": str(ROOT), **extra}


def answered(answer: str | None, tools: object = None) -> Trajectory:
    trajectory = Trajectory(prompt_index=0, prompt_messages=[], prompt_ids=[], answer=answer)
    trajectory.tools = tools
    return trajectory


def test_reference_query_check_compares_rows_with_the_answer(seed_db):
    spec = {
        "name": "tool_verify",
        "options": {
            "tool": "sql",
            "arguments": {"query": "{reference_sql}"},
            "expected": "{answer}",
            "compare": "rows",
            "label": "sql_answer",
        },
    }
    with BlockingToolPool(parse_mcp_servers({"db": sqlite_entry(str(seed_db))})) as pool:
        (reward,), _ = build_reward_functions([spec], pool)
        query = "SELECT name FROM towns WHERE river = 'Ober'"
        scores = reward(
            trajectories=[answered("Morvane, Draskel"), answered("Draskel"), answered(None)],
            reference_sql=[query] * 3,
        )
    assert reward.__name__ == "sql_answer"
    assert scores == [1.0, 0.0, 0.0]  # both towns; one of two; no answer (no call made)


def test_state_check_runs_on_each_episodes_own_instance_after_the_episode(seed_db):
    entry = sqlite_entry(
        "${episode.dir}/towns.db",
        scope="episode",
        setup=[{"copy": str(seed_db), "to": "${episode.dir}/towns.db"}],
    )
    spec = {
        "name": "tool_verify",
        "options": {
            "tool": "sql",
            "arguments": {"query": "SELECT count(*) FROM towns WHERE name = '{town}'"},
            "expected": "1",
            "compare": "number",
        },
    }
    with BlockingToolPool(parse_mcp_servers({"db": entry})) as pool:
        (reward,), _ = build_reward_functions([spec], pool)
        right, twice, nothing = pool.open_episodes(3)
        right.call("sql", {"query": "INSERT INTO towns VALUES ('Kessin', 'Ober')"})
        for _ in range(2):
            twice.call("sql", {"query": "INSERT INTO towns VALUES ('Kessin', 'Ober')"})
        scores = reward(
            trajectories=[answered("done", right), answered("done", twice), answered("done", nothing)],
            town=["Kessin"] * 3,
        )
        assert scores == [1.0, 0.0, 0.0], "exactly once, on its own instance"
        # A hand-made correct episode scores 1 and a wrong one 0, whatever the others did.
        pool.close_episodes([right, twice, nothing])


def test_a_tool_that_answers_with_an_error_scores_the_failure_value_counted_not_raised(tmp_path):
    options = {"tool": "sql", "arguments": {"query": "{answer}"}, "expected": "1", "compare": "rows"}
    spec = {"name": "tool_verify", "options": options}
    with BlockingToolPool(parse_mcp_servers({"db": sqlite_entry(str(tmp_path / "x.db"))})) as pool:
        (reward,), _ = build_reward_functions([spec], pool)
        scores = reward(trajectories=[answered("SELEC nonsense"), answered("SELECT 1 = 1")])
    assert scores == [0.0, 1.0] and reward.counts["tool_error"] == 1 and reward.counts["skipped"] == 0


def test_a_failing_reference_query_skips_its_sample_and_is_counted(seed_db):
    options = {
        "tool": "sql",
        "arguments": {"query": "SELECT name FROM towns WHERE river = 'Ober'"},
        "reference": {"tool": "sql", "arguments": {"query": "{reference_sql}"}},
        "compare": "rows",
    }
    with BlockingToolPool(parse_mcp_servers({"db": sqlite_entry(str(seed_db))})) as pool:
        (reward,), _ = build_reward_functions([{"name": "tool_verify", "options": options}], pool)
        queries = ["SELECT name FROM towns WHERE river = 'Ober'", "SELECT nonsense FROM nowhere"]
        scores = reward(trajectories=[answered("x"), answered("x")], reference_sql=queries)
    assert scores == [1.0, None], "a broken reference is the data's fault, not the episode's"
    assert reward.counts["reference_error"] == 1


def test_unknown_tools_and_operators_are_refused_when_built(tmp_path):
    with BlockingToolPool(parse_mcp_servers({"db": sqlite_entry(str(tmp_path / "x.db"))})) as pool:
        with pytest.raises(ValueError, match="no tool named 'sqll'; the servers have: sql"):
            build_reward_functions(
                [{"name": "tool_verify", "options": {"tool": "sqll", "arguments": {}}}], pool
            )
        bad = {"tool": "sql", "arguments": {}, "compare": "approx", "expected": "1"}
        with pytest.raises(ValueError, match="compare must be one of equals, number"):
            build_reward_functions([{"name": "tool_verify", "options": bad}], pool)
        both = {"tool": "sql", "arguments": {}, "compare": "rows"}
        with pytest.raises(ValueError, match="exactly one of expected"):
            build_reward_functions([{"name": "tool_verify", "options": both}], pool)
