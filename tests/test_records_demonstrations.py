"""The records recipe's retry demonstrations: the mistake shown first (weight 0) changes nothing on the real
mcp-server-sqlite (``affected_rows: 0``), and the reference statement after it leaves the state the rewards
want. That a weight-0 turn is out of the loss is tested in test_warm_start.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_recipe_tasks import answered
from test_third_party import index_problem

from mcp_rl.config.recipe import load_recipe
from mcp_rl.env.data import load_qa
from mcp_rl.env.recipe_checks import recipe_servers
from mcp_rl.rewards import build_reward_functions
from mcp_rl.rewards.registry import import_object
from mcp_rl.tools import BlockingToolPool

SCRIPT = str(Path(__file__).resolve().parents[1] / "recipes" / "records_demonstrations.py")


@pytest.fixture(scope="module")
def statement_with_retries():
    return import_object(f"{SCRIPT}:statement_with_retries")


def sql_of(turn: str) -> str:
    assert turn.startswith("<sql> ") and turn.endswith(" </sql>"), turn
    return turn[len("<sql> ") : -len(" </sql>")]


def test_some_rows_that_name_a_member_get_a_mistake_of_weight_0_first(statement_with_retries) -> None:
    rows = load_qa("club", "tasks_train")
    scripts = [statement_with_retries(row) for row in rows]
    retried = [(row, script) for row, script in zip(rows, scripts, strict=True) if len(script) == 3]
    named = [row for row in rows if row["kind"] in {"move", "cancel", "relocate"}]
    assert len(named) / 4 < len(retried) < 3 * len(named) / 4
    for row, script in zip(rows, scripts, strict=True):
        *mistake, statement, done = script
        assert (sql_of(statement), done) == (row["reference_sql"], "<answer> done </answer>")
        if mistake:
            assert row["kind"] in {"move", "cancel", "relocate"} and mistake[0]["weight"] == 0
            wrong = sql_of(mistake[0]["content"])
            # The same statement with one quoted value shortened: a word or a letter dropped.
            assert wrong != row["reference_sql"] and len(wrong) < len(row["reference_sql"])
            assert wrong.split("'")[0] == row["reference_sql"].split("'")[0]


@pytest.mark.network
def test_the_mistake_changes_no_row_and_the_retry_leaves_the_wanted_state(statement_with_retries) -> None:
    if index_problem():
        pytest.skip(index_problem())
    recipe = load_recipe("records", ["tools.mcpServers.db.warm=0"])
    rows = [row for row in load_qa("club", "tasks_train") if len(statement_with_retries(row)) == 3][:6]
    with BlockingToolPool(recipe_servers(recipe)) as pool:
        rewards, _ = build_reward_functions(recipe.rewards, pool)
        episodes = pool.open_episodes(len(rows))
        for episode, row in zip(episodes, rows, strict=True):
            mistake, statement, _ = statement_with_retries(row)
            first = episode.call("write_query", {"query": sql_of(mistake["content"])})
            second = episode.call("write_query", {"query": sql_of(statement)})
            assert (first.text, second.text) == ("[{'affected_rows': 0}]", "[{'affected_rows': 1}]"), row
        columns = {key: [row[key] for row in rows] for key in ("check_sql", "state")}
        state = rewards[1](trajectories=[answered("done", episode) for episode in episodes], **columns)
        pool.close_episodes(episodes)
    assert state == [1.0] * len(rows)
