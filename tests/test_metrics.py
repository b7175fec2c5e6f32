"""Task metrics as the recipe declares them: zero-weight rubric entries, split by ``data.report_by``; and
the progress bar and plot, which read whatever entries a run logged."""

from __future__ import annotations

import math

import pytest
from conftest import TEST_QUESTIONS, tiny_prompt_config
from transformers import TrainerState

from mcp_rl.config.recipe import load_recipe
from mcp_rl.config.sections import RolloutConfig
from mcp_rl.env.environment import Environment
from mcp_rl.env.metrics import grouped_means, grouped_metrics, pass_at_k, truncated_share
from mcp_rl.env.trajectory import CallRecord, Trajectory, Turn
from mcp_rl.generation.base import TransformersGenerator
from mcp_rl.rewards.rubric import Rubric
from mcp_rl.rewards.rules import called_twice
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.callbacks import RunProgress, reward_means
from mcp_rl.training.plots import metric_panels, plot_metrics


def episode(calls: int, *, answer: str | None = None, finish: str = "answer") -> Trajectory:
    trajectory = Trajectory(prompt_index=0, prompt_messages=[], prompt_ids=[1])
    trajectory.turns = [Turn(text="", calls=[CallRecord(0, "search", {}, "") for _ in range(calls)])]
    trajectory.answer, trajectory.finish_reason = answer, finish
    return trajectory


# -- the rubric split by a column ------------------------------------------------------------------------
def test_every_rubric_entry_is_split_by_the_report_by_column():
    episodes = [episode(1), episode(2), episode(2), episode(0), episode(3)]
    rows = [{"hops": 1}, {"hops": 1}, {"hops": 2}, {"hops": 2}, {}]
    scores = {"exact_match": [1.0, 0.0, 1.0, 1.0, 0.0], "called_twice": called_twice(trajectories=episodes)}
    assert scores["called_twice"] == [0.0, 1.0, 1.0, 0.0, 1.0]
    assert grouped_metrics(rows, scores, "hops") == {
        "hops/1/exact_match": 0.5,
        "hops/1/called_twice": 0.5,
        "hops/2/exact_match": 1.0,
        "hops/2/called_twice": 0.5,
    }
    # The eval report's shape: value → entry → mean; the row without the column counts nowhere.
    assert grouped_means(rows, scores, "hops") == {
        "1": {"exact_match": 0.5, "called_twice": 0.5},
        "2": {"exact_match": 1.0, "called_twice": 0.5},
    }
    assert grouped_metrics(rows, scores, None) == {}
    assert grouped_metrics([{}] * 5, scores, "hops") == {}


def test_unscored_episodes_leave_a_mean_and_values_sort_as_numbers():
    rows = [{"hops": 10}, {"hops": 2}, {"hops": 2}, {"hops": 10}]
    scores = {"judge": [None, 0.0, 1.0, None]}
    # Unscored (None) episodes are left out of a mean, as TRL's rewards/<name>/mean does; a value none of
    # whose episodes scored has no entry for that name.
    assert grouped_means(rows, scores, "hops") == {"2": {"judge": 0.5}, "10": {}}
    assert list(grouped_means(rows, {"x": [0.0] * 4}, "hops")) == ["2", "10"]
    with pytest.raises(ValueError, match="judge: 3 score"):
        grouped_metrics(rows, {"judge": [1.0, 1.0, 1.0]}, "hops")


def test_pass_at_k_is_the_unbiased_estimate_over_each_tasks_samples():
    # Three tasks of four samples: one success, four, none. A task with one success in four has
    # pass@2 = 1 - C(3,2)/C(4,2) = 1/2 and pass@4 = 1.
    scores = [1.0, 0.0, 0.0, 0.0] + [1.0] * 4 + [0.0] * 4
    assert pass_at_k(scores, 4) == pytest.approx({"1": 5 / 12, "2": 1 / 2, "4": 2 / 3})
    # Unscored samples are left out; a task with fewer than k scored ones is left out of pass@k; a
    # sample count that is not a power of two is reported too.
    assert pass_at_k([1.0, 0.0, None, 0.0, 0.0, 0.0], 3) == pytest.approx({"1": 0.25, "2": 0.5, "3": 0.0})
    assert pass_at_k([0.5, 1.0], 2) == {}  # a graded score has no pass@k
    with pytest.raises(ValueError, match="not whole tasks"):
        pass_at_k([1.0, 0.0, 1.0], 2)


def test_truncated_share_counts_episodes_cut_by_a_token_limit():
    cut_budget = episode(1, finish="max_tokens")
    cut_turn = episode(0, finish="max_turns")
    cut_turn.info["last_finish"] = "length"
    answered_at_length = episode(0, answer="x")
    answered_at_length.info["last_finish"] = "length"  # it still answered: not cut
    assert truncated_share([cut_budget, cut_turn, answered_at_length, episode(1, answer="y")]) == 0.5
    assert truncated_share([]) == 0.0


# -- a metric is a reward of weight 0 --------------------------------------------------------------------
def test_a_zero_weight_metric_is_scored_but_adds_nothing_to_the_total():
    rubric = Rubric.from_specs(
        [{"name": "exact_match", "weight": 1.0}, {"name": "called_twice", "weight": 0.0}]
    )
    assert rubric.weight_of == {"exact_match": 1.0, "called_twice": 0.0}
    episodes = [episode(2, answer="Draskel"), episode(1, answer="Estravik")]
    rows = [{"golden_answers": ["Draskel"], "hops": 2}, {"golden_answers": ["Draskel"], "hops": 1}]
    scored = rubric.score(episodes, rows)
    assert scored.scores == {"exact_match": [1.0, 0.0], "called_twice": [1.0, 0.0]} and not scored.errors
    assert scored.totals == [1.0, 0.0]
    with pytest.raises(ValueError, match="needs `trajectories`"):
        called_twice(completions=["<answer> x </answer>"])


def test_the_search_recipes_declare_their_hop_metrics():
    for name in ("search", "search-multihop"):  # search-multihop inherits both from its base
        recipe = load_recipe(name)
        assert recipe.data.report_by == "hops"
        assert ("called_twice", 0.0) in [(r.name, r.weight) for r in recipe.rewards]
    # A zero weight is a weight like any other, from the command line too.
    assert load_recipe("search", ["rewards.0.weight=0"]).rewards[0].weight == 0.0


def test_real_episodes_split_by_hops(searching_tiny_model, search_entry):
    model, tokenizer = searching_tiny_model
    rows = [
        {"question": q, "golden_answers": ["Draskel"], "hops": 1 + i % 2}
        for i, q in enumerate(TEST_QUESTIONS)
    ]
    rubric = Rubric.from_specs(["exact_match", {"name": "called_twice", "weight": 0}])
    with BlockingToolPool(parse_mcp_servers({"search": search_entry})) as pool:
        environment = Environment(
            tokenizer,
            TransformersGenerator(model, tokenizer),
            pool=pool,
            prompt=tiny_prompt_config(),
            rollout=RolloutConfig(max_turns=3, max_new_tokens=24),
            rubric=rubric,
        )
        episodes = environment.rollout_rows(rows, greedy=True)
        scored = environment.score(episodes, rows)
    scores = scored.scores
    assert any(e.calls for e in episodes), "the warmed-up tiny model should search"
    assert scores["called_twice"] == [float(len(e.calls) >= 2) for e in episodes]
    metrics = grouped_metrics(rows, scores, "hops")
    two_hop = [i for i, row in enumerate(rows) if row["hops"] == 2]
    assert metrics["hops/2/exact_match"] == sum(scores["exact_match"][i] for i in two_hop) / len(two_hop)
    assert set(metrics) == {f"hops/{h}/{n}" for h in (1, 2) for n in ("exact_match", "called_twice")}
    assert scored.totals == scores["exact_match"]  # the metric adds nothing


# -- what reads the logged metrics ---------------------------------------------------------------------
LOGGED = [
    {
        "step": step,
        "reward": 0.1 * step,
        "rewards/exact_match/mean": 0.1 * step,
        "rewards/exact_match/std": 0.2,
        "rewards/f1/mean": 0.2,
        "rewards/called_twice/mean": 0.5,
        "hops/1/exact_match": 0.3,
        "hops/1/called_twice": 0.1,
        "hops/2/exact_match": 0.0,
        "hops/2/called_twice": 0.4,
        "hops/10/exact_match": 0.0,
        "tools/search/calls": 8.0,
        "rollout/calls_per_trajectory": 1.5,
    }
    for step in (1, 2, 3)
]


def test_the_progress_bar_shows_the_first_reward_entries_whatever_they_are():
    assert reward_means({**LOGGED[0], "rewards/judge/mean": None})[-1][0] == "judge"
    assert math.isnan(reward_means({"rewards/judge/mean": None})[0][1])
    progress = RunProgress()
    state = TrainerState(max_steps=3, global_step=0)
    args = control = None  # the bar reads neither
    progress.on_train_begin(args, state, control)
    state.global_step = 1
    progress.on_log(args, state, control, logs=LOGGED[0])
    shown = progress.bar.postfix
    progress.on_train_end(args, state, control)
    assert shown.startswith("reward=0.100, exact_match=0.100, f1=0.200, calls_s=")
    assert "called_twice" not in shown and "hops" not in shown


def test_the_plot_has_a_panel_per_report_by_value(tmp_path):
    panels = metric_panels(LOGGED)
    assert [title for title in panels if "=" in title] == ["hops = 1", "hops = 2", "hops = 10"]
    assert panels["hops = 2"] == [
        ("hops/2/called_twice", "called_twice"),
        ("hops/2/exact_match", "exact_match"),
    ]
    assert [label for _, label in panels["reward"]] == ["total reward", "called_twice", "exact_match", "f1"]
    assert not any(key.startswith("tools/") for series in panels.values() for key, _ in series)
    logged_null = [{**m, "rewards/f1/mean": None} for m in LOGGED]  # TRL's value when nothing scored
    path = plot_metrics(logged_null, tmp_path / "training.png")
    assert path is not None and path.stat().st_size > 1000
