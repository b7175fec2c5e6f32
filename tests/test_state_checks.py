"""A state-checking reward scores a failed check as a failure: a tool that answered with an error (the file
the episode should have made is not there) scores the failure value, and only a call that could not be
made is skipped, counted, and reported beside the mean. Rewards read whole results, not the model's
observation budget."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import ECHO_SERVER, ROOT, TEST_QUESTIONS, TEST_SYSTEM

from mcp_rl.config.recipe import recipe_from_dict
from mcp_rl.config.sections import Recipe, RewardSpec
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.evaluation import evaluate
from mcp_rl.rewards import Rubric, build_reward_functions
from mcp_rl.tools import BlockingToolPool, ToolPoolError
from mcp_rl.tools.server_config import parse_mcp_servers

FILESYSTEM_PACKAGE = "@modelcontextprotocol/server-filesystem"


def finished(answer: str | None = "done") -> Trajectory:
    return Trajectory(prompt_index=0, prompt_messages=[], prompt_ids=[], answer=answer)


@pytest.fixture
def filesystem(tmp_path: Path) -> tuple[BlockingToolPool, Path]:
    """The third-party filesystem server exactly as its README runs it: ``npx -y PACKAGE DIR``."""
    if shutil.which("npx") is None or shutil.which("node") is None:
        pytest.skip("the filesystem server needs Node.js (npx) on PATH")
    folder = tmp_path / "workspace"
    folder.mkdir()
    entry = {"command": "npx", "args": ["-y", FILESYSTEM_PACKAGE, str(folder)], "timeout": 60}
    pool = BlockingToolPool(parse_mcp_servers({"fs": entry}))
    try:
        pool.start()
    except ToolPoolError as error:  # npx could neither reach the registry nor find the package cached
        pytest.skip(f"{FILESYSTEM_PACKAGE} did not start: {error}")
    try:
        yield pool, folder
    finally:
        pool.close()


@pytest.mark.network
def test_a_state_check_on_a_file_that_is_not_there_scores_the_failure_value(filesystem) -> None:
    pool, folder = filesystem
    # Episode 1 renamed draft.txt to report.txt as asked, episode 2 did nothing, episode 3 wrote other text.
    (folder / "report.txt").write_text("quarterly figures")
    (folder / "other.txt").write_text("something else")
    check = {"tool": "read_text_file", "arguments": {"path": "{target}"}, "label": "target_ok"}
    spec = {"name": "tool_verify", **check, "expected": "quarterly figures", "compare": "contains"}
    (reward,), _ = build_reward_functions([spec], pool)
    targets = [str(folder / "report.txt"), str(folder / "missing.txt"), str(folder / "other.txt")]
    metrics: dict[str, float] = {}
    scores = reward(trajectories=[finished()] * 3, target=targets, log_metric=metrics.__setitem__)
    assert scores == [1.0, 0.0, 0.0], "a missing file is a failed check, not a skipped one"
    assert reward.counts["tool_error"] == 1 and reward.counts["skipped"] == 0
    assert metrics == {"target_ok/skipped_frac": 0.0, "target_ok/tool_error_frac": pytest.approx(1 / 3)}


@pytest.mark.network
def test_eval_scoring_of_a_state_check_before_any_file_was_made_is_zero_not_one(filesystem) -> None:
    pool, folder = filesystem
    recipe = Recipe(
        rewards=[
            RewardSpec(
                name="tool_verify",
                options={
                    "tool": "read_text_file",
                    "arguments": {"path": "{target}"},
                    "expected": "figures",
                    "compare": "contains",
                    "label": "target_ok",
                },
            )
        ]
    )
    rows = [{"target": str(folder / f"made-{i}.txt")} for i in range(4)]
    scored = Rubric.from_specs(recipe.rewards, pool).score([finished()] * 4, rows)
    assert scored.scores["target_ok"] == [0.0] * 4
    assert scored.skipped() == {}


@pytest.fixture
def echo_pool() -> BlockingToolPool:
    entry = {"command": "python", "args": [ECHO_SERVER], "cwd": str(ROOT)}
    # A model budget far below what the check below reads.
    with BlockingToolPool(parse_mcp_servers({"echo": entry}), observation_chars=40) as pool:
        yield pool


def test_a_call_that_could_not_be_made_is_skipped_counted_and_reported_beside_the_mean(echo_pool) -> None:
    recipe = Recipe(
        rewards=[
            RewardSpec(
                name="tool_verify",
                options={"tool": "hang", "arguments": {}, "timeout_s": 0.5, "label": "hung"},
            ),
            RewardSpec(
                name="tool_verify",
                options={"tool": "fail", "arguments": {"message": "{answer}"}, "label": "says_no"},
            ),
        ]
    )
    scored = Rubric.from_specs(recipe.rewards, echo_pool).score([finished("a"), finished("b")], [{}, {}])
    assert scored.scores["hung"] == [None, None], "a timeout says nothing about the episode"
    assert scored.scores["says_no"] == [0.0, 0.0], "a tool that answered with an error did judge"
    assert scored.skipped() == {"hung": {"skipped": 2, "of": 2, "why": {"timeout": 2}}}


def test_error_score_sets_what_a_failed_check_scores(echo_pool) -> None:
    # A deletion check: the file must be gone, so the tool's "not found" is the success.
    spec = {"name": "tool_verify", "tool": "fail", "arguments": {"message": "{answer}"}, "error_score": 1.0}
    (reward,), _ = build_reward_functions([spec], echo_pool)
    assert reward(trajectories=[finished("gone")]) == [1.0]


def test_a_reward_reads_the_whole_result_not_the_models_observation_budget(echo_pool) -> None:
    text = "row " * 50 + "the last row"
    assert echo_pool.call("echo", {"text": text}).text.startswith(text[:40] + "…")  # the model's view
    spec = {
        "name": "tool_verify",
        "tool": "echo",
        "arguments": {"text": "{answer}"},
        "expected": "the last row",
        "compare": "contains",
    }
    (reward,), _ = build_reward_functions([spec], echo_pool)
    assert reward(trajectories=[finished(text)]) == [1.0]
    # A reward of its own reads the same through the episode's tools.
    [tools] = echo_pool.open_episodes(1)
    assert tools.call("echo", {"text": text}).text == text


def test_the_eval_report_says_how_many_episodes_each_mean_leaves_out(
    tiny_model_dir, search_entry, tmp_path
) -> None:
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("ask,place\n" + "".join(f'"{q}",Draskel\n' for q in TEST_QUESTIONS))
    echo = {"command": "python", "args": [ECHO_SERVER], "cwd": str(ROOT)}
    recipe = recipe_from_dict(
        {
            "model": {"name_or_path": str(tiny_model_dir)},
            "data": {"train": str(tasks), "eval": str(tasks), "answer_column": "place"},
            "tools": {"mcpServers": {"search": search_entry, "echo": echo}},
            "parser": {"name": "search_r1"},
            "prompt": {"system": TEST_SYSTEM, "user_template": "{ask}", "tools_in": "template"},
            "rollout": {"max_turns": 2, "max_new_tokens": 16},
            "rewards": [
                {"name": "exact_match"},
                {
                    "name": "tool_verify",
                    "options": {"tool": "hang", "arguments": {}, "timeout_s": 0.5, "label": "hung"},
                },
            ],
        },
        check_trainer=False,
    )
    report = evaluate(recipe, output=tmp_path / "eval.json")
    n = report["n"]
    assert report["rewards"]["hung"] is None
    assert report["rewards_skipped"] == {"hung": {"skipped": n, "of": n, "why": {"timeout": n}}}
