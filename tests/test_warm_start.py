"""The supervised warm start: scripted episodes through the real search server, kept by the
Environment's rubric, learned with the shared-prefix loss; and `mcp-rl train` running it before GRPO."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from conftest import run_cli
from tiny import child_pids, searching_environment, tiny_search_overrides

from mcp_rl.config.recipe import load_recipe
from mcp_rl.config.sections import Recipe, RewardSpec, WarmStartConfig
from mcp_rl.env.environment import Environment
from mcp_rl.env.trajectory import CallRecord, Trajectory, Turn
from mcp_rl.errors import DataError, RecipeError
from mcp_rl.rewards import Rubric
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.lean_forward import supervised_loss
from mcp_rl.training.warm_start import (
    DroppedDemonstrations,
    ScriptedEngine,
    demonstration_episodes,
    drop_reason,
    script_from_config,
    script_turn,
)

FOX = {"question": "Where does the fox live?", "golden_answers": ["Draskel"]}
TEMPLATES = "['<search> {question} </search>', '<answer> {golden_answers[0]} </answer>']"
TWO_SEARCHES = ["<search> fox </search>", "<search> Ober river </search>", "<answer> Draskel </answer>"]


@pytest.fixture
def environment(searching_tiny_model, search_entry):
    model, tokenizer = searching_tiny_model
    pool = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()
    with searching_environment(model, tokenizer, pool) as built:
        yield built


def test_a_script_is_played_through_the_real_server_with_a_rollouts_token_layout(environment) -> None:
    engine = ScriptedEngine(environment.engine, [TWO_SEARCHES])
    [episode] = engine.rollout([environment.messages(FOX)])
    assert [turn.text for turn in episode.turns] == TWO_SEARCHES
    assert episode.answer == "Draskel" and episode.finish_reason == "answer"
    calls = episode.calls
    assert [call.arguments for call in calls] == [{"query": "fox"}, {"query": "Ober river"}]
    assert "The fox lives in Draskel" in calls[0].observation and "Ober is a river" in calls[1].observation
    # The scripted turns are the loss's tokens (mask 1), the two observations are not.
    tokenizer = environment.tokenizer
    own = [t for t, m in zip(episode.completion_ids, episode.completion_mask, strict=True) if m]
    assert tokenizer.decode(own) == "".join(TWO_SEARCHES)
    observed = tokenizer.decode(
        [t for t, m in zip(episode.completion_ids, episode.completion_mask, strict=True) if not m]
    )
    assert observed.count("<information>") == 2 and "Draskel" in observed


def test_demonstrations_are_kept_only_when_the_rewards_accept_them(environment) -> None:
    recipe = Recipe(rewards=[RewardSpec(name="exact_match"), RewardSpec(name="answer_retrieved", weight=0.5)])
    environment.rubric = Rubric.from_specs(recipe.rewards, environment.pool)
    rows = [FOX, {**FOX, "question": "Who founded the guild?"}, {**FOX, "question": "skip me"}]
    rows.append({**FOX, "question": "nothing to learn"})
    scripts = {
        "Where does the fox live?": ["<search> fox </search>", "<answer> Draskel </answer>"],
        "Who founded the guild?": ["<search> guild </search>", "<answer> Draskel </answer>"],  # not retrieved
        "nothing to learn": [{"content": "<answer> Draskel </answer>", "weight": 0}],
    }
    kept, stats = demonstration_episodes(
        environment, rows, lambda row: scripts.get(row["question"]), min_reward=1.5
    )
    assert stats["warm_start/played"] == 2 and stats["warm_start/skipped_rows"] == 2
    assert [episode.calls[0].arguments["query"] for episode in kept] == ["fox"]
    assert kept[0].info["reward"] == pytest.approx(1.5)


def test_templates_fill_from_the_row_and_name_a_missing_column() -> None:
    script = script_from_config(
        WarmStartConfig(demonstrations=["<search> {question} </search>", "{golden_answers[0]}"])
    )
    assert script(FOX) == ["<search> Where does the fox live? </search>", "Draskel"]
    with pytest.raises(
        DataError, match=r"warm_start\.demonstrations: 'golden_answers' is not in the training row"
    ):
        script({"question": "q"})


def test_a_turn_of_weight_0_is_played_and_read_but_not_learned(environment) -> None:
    """A mistake shown, so that the turns after it teach the recovery: its call goes to the real server
    and its tokens stay in the context, but out of the loss, as an observation's are."""
    mistake = {"content": "<search> guild </search>", "weight": 0}
    engine = ScriptedEngine(environment.engine, [[mistake, *TWO_SEARCHES[:1], TWO_SEARCHES[-1]]])
    [episode] = engine.rollout([environment.messages(FOX)])
    assert [call.arguments for call in episode.calls] == [{"query": "guild"}, {"query": "fox"}]
    assert episode.answer == "Draskel"
    tokenizer = environment.tokenizer
    own = [t for t, m in zip(episode.completion_ids, episode.completion_mask, strict=True) if m]
    assert tokenizer.decode(own) == "<search> fox </search><answer> Draskel </answer>"
    assert tokenizer.decode(episode.completion_ids).startswith("<search> guild </search>")


def test_a_template_turn_of_weight_0_fills_from_the_row_and_a_bad_turn_is_named() -> None:
    turns = [{"content": "<search> {question} </search>", "weight": 0}, "done"]
    [mistake, done] = script_from_config(WarmStartConfig(demonstrations=turns))(FOX)
    assert (mistake.content, mistake.weight) == ("<search> Where does the fox live? </search>", 0)
    assert done == "done"
    with pytest.raises(DataError, match=r"a turn must be text or \{'content': text, 'weight': 0 or 1\}"):
        script_turn({"text": "a Python script's turn without content"})


def test_the_loss_reads_the_shared_prefix_once_and_equals_a_plain_forward(
    environment, searching_tiny_model
) -> None:
    model, _ = searching_tiny_model
    engine = ScriptedEngine(
        environment.engine, [TWO_SEARCHES, ["<search> guild </search>", "<answer> Velora </answer>"]]
    )
    episodes = engine.rollout(
        [environment.messages(FOX), environment.messages({"question": "Who founded the guild?"})]
    )
    loss = supervised_loss(model, episodes, environment.tokenizer.pad_token_id)
    # The same loss, one unpadded sequence at a time, over every scored token.
    total, count = 0.0, 0
    for episode in episodes:
        ids = torch.tensor([episode.prompt_ids + episode.completion_ids])
        logits = model(input_ids=ids).logits[0, :-1].float()
        targets = ids[0, 1:]
        scored = torch.tensor([0] * (len(episode.prompt_ids) - 1) + episode.completion_mask, dtype=torch.bool)
        total += torch.nn.functional.cross_entropy(logits[scored], targets[scored], reduction="sum").item()
        count += int(scored.sum())
    assert loss.item() == pytest.approx(total / count, rel=1e-4)


def test_a_few_steps_on_demonstrations_teach_them(environment, searching_tiny_model) -> None:
    import copy

    model = copy.deepcopy(searching_tiny_model[0])
    engine = ScriptedEngine(environment.engine, [TWO_SEARCHES])
    episodes = engine.rollout([environment.messages(FOX)])
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(8):
        loss = supervised_loss(model, episodes, environment.tokenizer.pad_token_id)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    assert losses[-1] < losses[0] / 2


def test_train_runs_the_warm_start_before_grpo_and_a_resume_keeps_it_as_the_reference(
    tiny_model_dir, tiny_corpus, tiny_qa, tmp_path
) -> None:
    out = tmp_path / "run"
    warm_start = {
        "warm_start.demonstrations": TEMPLATES,
        "warm_start.episodes": 4,
        "warm_start.epochs": 2,
        "warm_start.batch_size": 2,
        "warm_start.learning_rate": 1e-3,
        "trainer.beta": 0.1,  # a KL reference: after a resume it must still be the warm-started policy
    }
    settings = tiny_search_overrides(tiny_model_dir, tiny_corpus, tiny_qa, **warm_start)
    result = run_cli("train", "--recipe", "search", "-o", str(out), *settings, timeout_s=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "warm start: 4 of 4 demonstrations kept" in result.stdout
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    warm = [m for m in metrics if m["step"] == 0]
    assert [m["warm_start/batch"] for m in warm if "warm_start/batch" in m] == [1, 2, 3, 4]
    assert warm[-1]["warm_start/kept"] == 4 and warm[-1]["warm_start/wall_s"] > 0
    assert [m["step"] for m in metrics if "reward" in m] == [1, 2]
    finished = out / "warm_start"
    assert (finished / "final" / "config.json").exists() and (finished / "stats.json").exists()
    assert not list(finished.glob("checkpoint-*")), "a finished warm start keeps only its final weights"

    # Two more GRPO steps from checkpoint-2: the warm start is not played again, its weights become the
    # KL reference again (TRL would rebuild it from the untrained model), and its logged batches stay.
    more = tiny_search_overrides(
        tiny_model_dir, tiny_corpus, tiny_qa, **{**warm_start, "trainer.max_steps": 4}
    )
    result = run_cli("train", "--recipe", "search", "-o", str(out), "--resume", *more, timeout_s=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "demonstrations kept" not in result.stdout and "untrained model" not in result.stdout
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [m["warm_start/batch"] for m in metrics if "warm_start/batch" in m] == [1, 2, 3, 4]
    assert [m["step"] for m in metrics if "reward" in m] == [1, 2, 3, 4]


def test_a_recipe_builds_on_a_base_recipe(tmp_path: Path) -> None:
    multihop, search = load_recipe("search-multihop"), load_recipe("search")
    assert multihop.name == "search-multihop" and multihop.prompt == search.prompt
    assert multihop.rollout.max_turns == 4 and multihop.rollout.temperature == search.rollout.temperature
    # Its own step size and KL; the loss and schedule come from the base.
    assert multihop.trainer["learning_rate"] == 5e-6 != search.trainer["learning_rate"]
    assert multihop.trainer["beta"] == 0.1 and search.trainer["beta"] == 0
    assert multihop.trainer["lr_scheduler_type"] == search.trainer["lr_scheduler_type"] == "constant"
    assert multihop.warm_start.demonstrations.endswith("recipes/search_demonstrations.py:search_then_answer")
    (tmp_path / "a.yaml").write_text("base: b.yaml\n")
    (tmp_path / "b.yaml").write_text("base: a.yaml\n")
    with pytest.raises(RecipeError, match=r"base: 'a\.yaml' leads back to this recipe"):
        load_recipe(str(tmp_path / "a.yaml"))


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("no_colon_here", "warm_start.demonstrations: 'no_colon_here' is neither a list of turn templates"),
        ("['<calc> {x </calc>']", r"warm_start.demonstrations\[0\]: not a valid format string"),
        (
            "[{content: '<calc> 1 </calc>', weight: 2}]",
            r"warm_start.demonstrations: expected .* mappings \{content, weight: 0 or 1\}",
        ),
        ("[{content: '<calc> {x </calc>', weight: 0}]", r"warm_start.demonstrations\[0\]: not a valid"),
    ],
)
def test_bad_demonstrations_are_one_line_at_load(value: str, message: str) -> None:
    with pytest.raises(RecipeError, match=message):
        load_recipe("search", [f"warm_start.demonstrations={value}"])


def test_a_demonstration_file_that_is_not_there_is_one_line_at_build_before_any_server() -> None:
    """Loading a recipe imports nothing of the user's; building its Environment does, first of all."""
    recipe = load_recipe("search", ["warm_start.demonstrations=missing.py:f"])
    before = child_pids()
    with pytest.raises(RecipeError, match=r"warm_start\.demonstrations: cannot import"):
        Environment.from_recipe(recipe)
    assert child_pids() == before, "no server was started for a recipe that cannot be built"


# -- why demonstrations were dropped: counted by reason, one example each ------------------------------
GUILD = {"question": "Who founded the guild?", "golden_answers": ["Draskel"]}
RIVER = {"question": "Which river?", "golden_answers": ["Ober"]}
SCRIPTS = {
    FOX["question"]: ["<search> fox </search>", "<answer> Draskel </answer>"],
    GUILD["question"]: ["<search> guild </search>", "<answer> Draskel </answer>"],  # not retrieved
    RIVER["question"]: ["<search> river </search>"] * 3,  # searches until the turns run out, never answers
}


def played(
    environment, min_reward: float
) -> tuple[list[Trajectory], dict[str, float], DroppedDemonstrations]:
    recipe = Recipe(rewards=[RewardSpec(name="exact_match"), RewardSpec(name="answer_retrieved", weight=0.5)])
    environment.rubric = Rubric.from_specs(recipe.rewards, environment.pool)
    dropped = DroppedDemonstrations()
    kept, stats = demonstration_episodes(
        environment,
        [FOX, GUILD, RIVER],
        lambda row: SCRIPTS[row["question"]],
        min_reward=min_reward,
        dropped=dropped,
    )
    return kept, stats, dropped


def test_dropped_demonstrations_are_counted_by_reason_with_an_example(environment) -> None:
    kept, stats, dropped = played(environment, min_reward=1.5)
    assert len(kept) == 1 and stats["warm_start/dropped"] == 2
    assert dict(dropped.reasons) == {
        "rewards short: answer_retrieved 0 (best 1)": 1,
        "ended by max_turns, not an answer": 1,
    }
    guild = dropped.examples["rewards short: answer_retrieved 0 (best 1)"]
    assert "Who founded the guild?" in guild and "answer 'Draskel'" in guild
    assert "<search> river </search>" in dropped.examples["ended by max_turns, not an answer"]
    shown = dropped.describe()
    assert shown.count(" × ") == 2 and shown.count("e.g.") == 2


def test_a_min_reward_no_demonstration_can_reach_is_named_as_such(environment) -> None:
    kept, _, dropped = played(environment, min_reward=5.0)
    assert kept == []
    assert dropped.reasons["total 1.5 < min_reward 5 even with every reward at its best"] == 1


def test_a_failed_call_is_the_reason_before_the_rewards() -> None:
    call = CallRecord(0, "read_query", {"query": "SELEC 1"}, "Error (tool error): syntax error", "tool error")
    episode = Trajectory(
        prompt_index=0,
        prompt_messages=[{"role": "user", "content": "Task: count the members"}],
        prompt_ids=[],
        turns=[Turn("<sql> SELEC 1 </sql>", calls=[call]), Turn("<answer> done </answer>")],
        answer="done",
        finish_reason="answer",
    )
    reason, example = drop_reason(episode, {"change_made": 0.0}, {"change_made": 1.0}, 0.0, 1.0)
    assert reason == "a call to read_query failed (tool error)"
    assert "Task: count the members" in example and "syntax error" in example
