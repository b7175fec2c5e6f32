"""The calculator, sql and records recipes: their generated data, their tool-checked rewards against the real
servers (our calculator, the third-party mcp-server-sqlite from PyPI), and a 2-step training run of each."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from pathlib import Path

import pytest
from conftest import run_cli
from test_third_party import index_problem
from tiny import warm_up
from tiny_models import tiny_model_and_tokenizer

from mcp_rl.config.recipe import load_recipe
from mcp_rl.datasets import arithmetic, available_datasets, builtin_corpus, builtin_dataset_dir, club
from mcp_rl.env.data import load_qa
from mcp_rl.env.recipe_checks import recipe_servers
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.rewards import build_reward_functions
from mcp_rl.rewards.compare import rows as same_rows
from mcp_rl.tools import BlockingToolPool

RECIPES = ("calculator", "sql", "records")
# What each recipe's tiny model learns to write: one action with a real argument, then an answer.
TINY_EPISODES = {
    "calculator": ("<calc> 6 * 7 </calc>", "<result>42</result>", "<answer> 42 </answer>"),
    "sql": (
        "<sql> SELECT count(*) FROM members </sql>",
        "<result>[{'count(*)': 240}]</result>",
        "<answer> 240 </answer>",
    ),
    "records": (
        "<sql> DELETE FROM bookings WHERE 0 </sql>",
        "<result>[{'affected_rows': 0}]</result>",
        "<answer> done </answer>",
    ),
}


def files(folder: Path) -> dict[str, bytes]:
    return {
        path.name: path.read_bytes() for path in sorted(folder.iterdir()) if path.suffix in {".jsonl", ".db"}
    }


def db_rows(path: Path) -> list[str]:
    with sqlite3.connect(path) as db:
        dump = list(db.iterdump())
    db.close()
    return dump


# -- recipes and data --------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", RECIPES)
def test_recipe_validates_and_its_data_loads(name):
    recipe = load_recipe(name)
    rows = load_qa(recipe.data.train, recipe.data.train_split, limit=5)
    assert len(rows) == 5 and rows[0]["golden_answers"]
    if name != "calculator":
        assert recipe.data.corpus == str(builtin_corpus("club")) and recipe.data.corpus.endswith("seed.db")


def test_recipes_are_listed_with_one_line_each():
    listed = run_cli("recipes")
    assert listed.returncode == 0, listed.stderr
    lines = {line.split()[0]: line for line in listed.stdout.splitlines() if line.strip()}
    assert set(RECIPES) <= set(lines) and all(len(lines[name].split()) > 3 for name in RECIPES)


def test_datasets_are_listed():
    assert {"arithmetic", "club", "fictional"} <= set(available_datasets())


@pytest.mark.parametrize(
    ("module", "kwargs"),
    [(arithmetic, {"n_train": 200, "n_test": 50}), (club, {"n_tasks_train": 60, "n_tasks_test": 20})],
)
def test_generators_are_deterministic_and_seeds_differ(module, kwargs, tmp_path):
    module.write(tmp_path / "a", seed=3, **kwargs)
    module.write(tmp_path / "b", seed=3, **kwargs)
    module.write(tmp_path / "c", seed=4, **kwargs)
    assert files(tmp_path / "a") == files(tmp_path / "b")
    a, c = files(tmp_path / "a"), files(tmp_path / "c")
    assert a.keys() == c.keys() and all(a[name] != c[name] for name in a)


@pytest.mark.parametrize("module", [arithmetic, club])
def test_shipped_data_is_seed_0(module, tmp_path):
    # If this fails, the generator changed: regenerate with `python -m mcp_rl.datasets.NAME --seed 0 --out
    # src/mcp_rl/datasets/NAME`. The database is compared by content: its header names the SQLite version.
    name = module.__name__.rsplit(".", 1)[1]
    module.write(tmp_path, seed=0)
    shipped, fresh = files(builtin_dataset_dir(name)), files(tmp_path)
    assert shipped.keys() == fresh.keys()
    for file in shipped:
        if file.endswith(".db"):
            assert db_rows(builtin_dataset_dir(name) / file) == db_rows(tmp_path / file)
        else:
            assert shipped[file] == fresh[file], file


def test_arithmetic_golden_answer_is_the_calculators_value_of_the_expression():
    from tool_servers.calculator import calculate

    for split in ("train", "test"):
        rows = load_qa("arithmetic", split)
        assert all(calculate(r["expression"]) == r["golden_answers"][0] for r in rows)
        assert {r["kind"] for r in rows} == set(arithmetic.KINDS) and {r["steps"] for r in rows} == {1, 2}


def test_club_golden_answers_are_the_reference_queries_rows():
    seed = builtin_corpus("club")
    with sqlite3.connect(seed) as db:
        for split in ("train", "test"):
            for row in load_qa("club", split):
                result = [dict(zip(("v",), r, strict=True)) for r in db.execute(row["reference_sql"])]
                assert all(same_rows(json.dumps(result), gold) for gold in row["golden_answers"]), row
    db.close()
    test_questions = {r["question"] for r in load_qa("club", "test")}
    assert not test_questions & {r["question"] for r in load_qa("club", "train")}


def test_club_tasks_state_and_check_follow_from_the_reference_statement():
    seed = builtin_corpus("club")
    unchanged = club.state_after(seed, None)
    for row in load_qa("club", "tasks_test"):
        with sqlite3.connect(":memory:") as db:
            with sqlite3.connect(seed) as source:
                source.backup(db)
            source.close()
            assert db.execute(row["check_sql"]).fetchone() == (0,), row  # not done yet
            assert db.execute(row["reference_sql"]).rowcount == 1
            assert db.execute(row["check_sql"]).fetchone() == (1,), row
            assert f"{db.execute(club.STATE_SQL).fetchone()[0]:.0f}" == row["state"] != f"{unchanged:.0f}"
        db.close()


def test_records_recipe_holds_the_generators_state_query():
    recipe = load_recipe("records")
    (state,) = [r for r in recipe.rewards if r.options.get("label") == "state_correct"]
    assert state.options["arguments"]["query"] == club.STATE_SQL


def test_rows_compare_reads_the_sqlite_servers_python_repr():
    assert same_rows("[{'city': 'Estravik'}]", "Estravik")
    assert same_rows("[{'class': 'Yoga'}, {'class': 'Judo'}]", "Judo, Yoga")
    assert not same_rows("[{'class': 'Yoga'}, {'class': 'Judo'}]", "Judo")
    assert same_rows("[{'count(*)': 12}]", "12") and not same_rows("[{'count(*)': 12}]", "13")
    assert not same_rows("Database error: no such table: x", "x")


# -- rewards on the real servers ------------------------------------------------------------------------
def answered(answer: str | None, tools: object = None) -> Trajectory:
    trajectory = Trajectory(prompt_index=0, prompt_messages=[], prompt_ids=[], answer=answer)
    trajectory.tools = tools
    return trajectory


def test_calculator_reward_checks_the_answer_against_the_calculator():
    recipe = load_recipe("calculator")
    rows = load_qa("arithmetic", "test", limit=2)
    with BlockingToolPool(recipe_servers(recipe)) as pool:
        rewards, _ = build_reward_functions(recipe.rewards, pool)
        verified = rewards[0]
        gold = [row["golden_answers"][0] for row in rows]
        wrong = str(float(gold[1]) + 1)
        scores = verified(
            trajectories=[answered(gold[0]), answered(f"{gold[1]} km"), answered(wrong), answered(None)],
            expression=[rows[0]["expression"], rows[1]["expression"]] * 2,
        )
    assert verified.__name__ == "calculator_verified" and scores == [1.0, 1.0, 0.0, 0.0]


@pytest.mark.network
def test_sql_reward_runs_the_reference_query_on_the_third_party_server():
    if index_problem():
        pytest.skip(index_problem())
    recipe = load_recipe("sql")
    by_kind = {row["kind"]: row for row in load_qa("club", "test")}
    rows = [by_kind["city"], by_kind["count_class_city"], by_kind["classes_of"], by_kind["city"]]
    answers = [
        rows[0]["golden_answers"][0],
        rows[1]["golden_answers"][0],
        rows[2]["golden_answers"][-1],
        "Nowhere",
    ]
    with BlockingToolPool(recipe_servers(recipe)) as pool:
        rewards, _ = build_reward_functions(recipe.rewards, pool)
        scores = rewards[0](
            trajectories=[answered(a) for a in answers], reference_sql=[r["reference_sql"] for r in rows]
        )
    assert scores == [1.0, 1.0, 1.0, 0.0]


@pytest.mark.network
def test_records_state_check_scores_a_correct_episode_1_and_wrong_ones_0():
    """Hand-made episodes on their own per-episode instances; the rewards query each one afterwards."""
    if index_problem():
        pytest.skip(index_problem())
    recipe = load_recipe("records", ["tools.mcpServers.db.warm=0"])
    tasks = load_qa("club", "tasks_test")
    move = next(row for row in tasks if row["kind"] == "move")
    book = next(row for row in tasks if row["kind"] == "book")
    member = move["reference_sql"].split("member = ")[1].split(" AND")[0]
    bump = "UPDATE members SET joined = joined + 1 WHERE name = (SELECT min(name) FROM members)"
    book_member = book["reference_sql"].split("VALUES ('")[1].split("'")[0]
    middle = len(book_member) // 2
    letter = "a" if book_member[middle] != "a" else "e"
    misspelled = book_member[:middle] + letter + book_member[middle + 1 :]
    episodes_by_case = {  # case: (task, statements the episode ran)
        "correct": (move, [move["reference_sql"]]),
        "correct_booking": (book, [book["reference_sql"]]),
        "booked_twice": (book, [book["reference_sql"]] * 2),
        "every_booking_moved": (move, [move["reference_sql"].replace(f"member = {member} AND ", "")]),
        "nothing": (move, []),
        "and_something_else": (move, [move["reference_sql"], bump]),
        # One letter of the name wrong (inside the name, not at either end): the asked-for row is missing.
        "misspelled": (book, [book["reference_sql"].replace(book_member, misspelled)]),
    }
    with BlockingToolPool(recipe_servers(recipe)) as pool:
        rewards, _ = build_reward_functions(recipe.rewards, pool)
        change, state = rewards[0], rewards[1]
        episodes = pool.open_episodes(len(episodes_by_case))
        for episode, (_, statements) in zip(episodes, episodes_by_case.values(), strict=True):
            for sql in statements:
                assert episode.call("write_query", {"query": sql}).ok
        trajectories = [answered("done", episode) for episode in episodes]
        rows = [task for task, _ in episodes_by_case.values()]
        columns = {key: [row[key] for row in rows] for key in ("check_sql", "state")}
        made, right = (
            change(trajectories=trajectories, **columns),
            state(trajectories=trajectories, **columns),
        )
        pool.close_episodes(episodes)
    assert dict(zip(episodes_by_case, right, strict=True)) == {
        "correct": 1.0,
        "correct_booking": 1.0,
        "booked_twice": 0.0,
        "every_booking_moved": 0.0,
        "nothing": 0.0,
        "and_something_else": 0.0,
        "misspelled": 0.0,
    }
    # The asked-for row alone: there exactly once for the correct episodes and the one that did more.
    assert made == [1.0, 1.0, 0.0, made[3], 0.0, 1.0, 0.0]


# -- a 2-step training run of each recipe with a tiny model ----------------------------------------------
@pytest.fixture(scope="module")
def tiny_recipe_models(tmp_path_factory) -> dict[str, Path]:
    """One tiny Llama per recipe that writes that recipe's action and then an answer."""
    folders = {}
    for name, (action, result, answer) in TINY_EPISODES.items():
        model, tokenizer = tiny_model_and_tokenizer(seed=0)
        questions = [
            row["question"]
            for row in load_qa(
                load_recipe(name).data.train, "train" if name != "records" else "tasks_train", limit=8
            )
        ]
        template = load_recipe(name).prompt.user_template
        conversations = [
            [
                {"role": "system", "content": "Use the tool."},
                {"role": "user", "content": template.format(question=q)},
                {"role": "assistant", "content": action},
                {"role": "user", "content": result},
                {"role": "assistant", "content": answer},
            ]
            for q in questions
        ]
        warm_up(model, tokenizer, conversations, steps=200)
        folder = tmp_path_factory.mktemp(f"tiny-{name}")
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        folders[name] = folder
    return folders


def tiny_overrides(model_dir: Path) -> list[str]:
    settings = {
        "model.name_or_path": str(model_dir),
        "model.train_top_layers": 1,
        "data.train_limit": 8,
        "prompt.system": "Use the tool.",
        "prompt.few_shot": "[]",
        "rollout.max_new_tokens": 64,
        "rollout.temperature": 0.3,  # near-greedy: the tiny model's samples at 0.8 rarely close a tag
        "trainer.max_steps": 2,
        "trainer.num_generations": 2,
        "trainer.per_device_train_batch_size": 2,
        "trainer.gradient_accumulation_steps": 1,
        "trainer.save_steps": 2,
        "trainer.learning_rate": 1e-3,
        "trainer.bf16": False,
        "warm_start.episodes": 4,
        "warm_start.epochs": 1,
        "grpo.max_extra_rollouts": 2,  # a recipe with dynamic sampling refills at most one group of 2
    }
    return [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]


@pytest.mark.slow
@pytest.mark.parametrize("name", RECIPES)
def test_two_training_steps_call_the_real_tools_with_finite_loss(name, tiny_recipe_models, tmp_path):
    if name != "calculator" and index_problem():
        pytest.skip(index_problem())
    out = tmp_path / "run"
    extra = ["--set", "tools.mcpServers.db.warm=1"] if name == "records" else []
    result = run_cli(
        "train",
        "--recipe",
        name,
        "-o",
        str(out),
        *tiny_overrides(tiny_recipe_models[name]),
        *extra,
        timeout_s=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    # The recipe's demonstrations, played through the real servers, all pass the recipe's own rewards.
    assert "warm start: 4 of 4 demonstrations kept" in result.stdout
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    losses = [m["loss"] for m in metrics if "loss" in m]
    assert len(losses) == 2 and all(math.isfinite(loss) for loss in losses)
    assert sum(m.get("tools/calls", 0) for m in metrics) > 0
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    labels = {"calculator": "calculator_verified", "sql": "sql_verified", "records": "state_correct"}
    assert all(labels[name] in trace["rewards"] for trace in traces)
    assert any(trace["num_calls"] for trace in traces)
    shutil.rmtree(out)
