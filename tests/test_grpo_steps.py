"""What a GRPO step learns from and how far it moves: the warm-started policy as the KL reference, steps
skipped without signal (Adam's moments untouched), dynamic sampling, advantage weighting and the drift
probes; tiny models against the real search server."""

from __future__ import annotations

import copy
import inspect
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from conftest import run_cli
from tiny import TEST_QUESTIONS, searching_trainer_kwargs, tiny_grpo_config, tiny_search_overrides
from transformers import TrainerCallback

from mcp_rl.config.sections import GRPOStepConfig, Recipe, RewardSpec, WarmStartConfig
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.probes import DriftProbes
from mcp_rl.training.trainer import MCPGRPOTrainer
from mcp_rl.training.warm_start import warm_start

TEMPLATES = ["<search> {question} </search>", "<answer> {golden_answers[0]} </answer>"]
GUILD = TEST_QUESTIONS[1]


@pytest.fixture
def pool(search_entry):
    started = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()
    yield started
    started.close()


def rows(*questions: str) -> list[dict[str, object]]:
    return [{"question": q, "golden_answers": ["Draskel"]} for q in questions]


def dataset(*questions: str):
    from datasets import Dataset

    return Dataset.from_list(rows(*questions))


def alternating(completion_ids, **_):
    """0, 1, 0, 1, ...: every group of an even size has a reward spread."""
    return [float(i % 2) for i in range(len(completion_ids))]


def logged(trainer: MCPGRPOTrainer) -> list[dict[str, float]]:
    return [entry for entry in trainer.state.log_history if "loss" in entry]


def trainer_for(model, tokenizer, pool, tmp_path, *, rewards=None, questions=TEST_QUESTIONS, **settings):
    grpo = settings.pop("grpo", None)
    peft_config = settings.pop("peft_config", None)
    kwargs = searching_trainer_kwargs(copy.deepcopy(model), tokenizer, pool)
    if rewards is not None:
        kwargs["reward_funcs"] = rewards
    return MCPGRPOTrainer(
        args=tiny_grpo_config(tmp_path / "out", **settings),
        train_dataset=dataset(*questions),
        grpo=grpo,
        peft_config=peft_config,
        trace_path=tmp_path / "traces.jsonl",
        close_environment=False,  # the pool serves several trainers in a test
        **kwargs,
    )


def warm_started(trainer: MCPGRPOTrainer) -> None:
    recipe = Recipe(
        rewards=[RewardSpec(name="exact_match")],
        warm_start=WarmStartConfig(
            demonstrations=TEMPLATES, episodes=3, epochs=4, batch_size=3, learning_rate=1e-2
        ),
    )
    output_dir = Path(trainer.args.output_dir) / "warm_start"
    warm_start(recipe, trainer.model, trainer.environment, rows(*TEST_QUESTIONS), output_dir=output_dir)


@pytest.mark.parametrize("lora", [False, True], ids=["full-weights", "lora"])
def test_the_kl_reference_is_the_warm_started_policy(
    searching_tiny_model, tiny_model_dir, pool, tmp_path, lora
) -> None:
    """TRL builds its reference before the warm start runs; after ``reset_reference`` the first step's KL
    (policy not yet moved) is 0, while the reference TRL built (the checkpoint, or LoRA's base) differs."""
    from peft import LoraConfig
    from transformers import AutoModelForCausalLM

    tokenizer = searching_tiny_model[1]
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)  # TRL loads its reference from the path
    kls = {}
    for reset in (False, True):
        trainer = trainer_for(
            model,
            tokenizer,
            pool,
            tmp_path / str(reset),
            beta=0.1,
            max_steps=1,
            peft_config=LoraConfig(r=4, lora_alpha=8, target_modules="all-linear") if lora else None,
        )
        if not lora:
            checkpoint = {n: p.detach().clone() for n, p in trainer.ref_model.named_parameters()}
        warm_started(trainer)
        if reset:
            trainer.reset_reference()
            if not lora:  # the reference holds the warm-start result, not the checkpoint's weights
                policy = dict(trainer.model.named_parameters())
                reference = dict(trainer.ref_model.named_parameters())
                assert all(torch.equal(reference[n], policy[n]) for n in policy)
                assert any(not torch.equal(reference[n], checkpoint[n]) for n in checkpoint)
        trainer.train()
        kls[reset] = logged(trainer)[0]["kl"]
        if not lora:  # the reference scored with the lean forward: the group's prompt read once
            assert trainer.reference_scoring.last_shared_prefix > 0
    assert kls[True] < 1e-6, "the reference should be the policy the first step starts from"
    assert kls[False] > 1e-4 and kls[False] > 1000 * max(kls[True], 1e-12)


class Snapshot(TrainerCallback):
    """After step 1: copies of the weights and Adam's state, and ``min_informative_groups`` raised so that
    step 2 (one group a batch) has too few informative groups; after step 2: the same copies again."""

    def __init__(self, trainer: MCPGRPOTrainer) -> None:
        self.trainer = trainer
        self.copies: list[tuple[dict[str, torch.Tensor], dict[int, dict[str, torch.Tensor]]]] = []

    def on_step_end(self, args, state, control, model=None, optimizer=None, **_) -> None:
        weights = {n: p.detach().clone() for n, p in model.named_parameters()}
        moments = {
            key: {name: value.clone() for name, value in entry.items()}
            for key, entry in optimizer.state_dict()["state"].items()
        }
        self.copies.append((weights, moments))
        self.trainer.grpo.min_informative_groups = 2


def test_a_step_without_enough_signal_leaves_weights_and_adam_moments_untouched(
    searching_tiny_model, pool, tmp_path
) -> None:
    model, tokenizer = searching_tiny_model
    trainer = trainer_for(model, tokenizer, pool, tmp_path, rewards=[alternating], max_steps=2)
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    snapshot = Snapshot(trainer)
    trainer.add_callback(snapshot)
    trainer.add_callback(DriftProbes(trainer.step_metrics, trainer.model, [], tokenizer.pad_token_id))
    trainer.train()
    (after_first, moments_first), (after_second, moments_second) = snapshot.copies
    assert any(not torch.equal(after_first[n], before[n]) for n in before), "step 1 should train"
    assert moments_first, "step 1 should have filled Adam's moments"
    assert all(torch.equal(after_second[n], after_first[n]) for n in after_first)
    assert moments_second.keys() == moments_first.keys()
    for key, entry in moments_first.items():
        assert all(torch.equal(moments_second[key][name], value) for name, value in entry.items())
    logs = logged(trainer)
    assert [entry["grpo/informative_groups"] for entry in logs] == [1.0, 1.0]
    assert [entry["grpo/skipped_step"] for entry in logs] == [0.0, 1.0]
    assert logs[0]["probe/update_norm"] > 0 and logs[1]["probe/update_norm"] == 0.0
    assert logs[0]["probe/update_norm_over_lr"] == pytest.approx(logs[0]["probe/update_norm"] / 1e-3)


def opposite(completion_ids, **_):
    """1, 0, 1, 0, ...: ``alternating``'s complement, a behaviour the rewards disfavour."""
    return [1.0 - r for r in alternating(completion_ids)]


def test_behaviour_push_reads_which_way_the_steps_pushed_from_the_traces(
    searching_tiny_model, pool, tmp_path
) -> None:
    """bench/behaviour_push.py on a real run's traces: with ``alternating`` the only weighted reward, each
    group's advantages are +1 on its rewarded half and -1 on the rest, so the push on ``alternating`` is
    +1/2 a group and on the zero-weight ``opposite`` -1/2."""
    model, tokenizer = searching_tiny_model
    trainer = trainer_for(
        model,
        tokenizer,
        pool,
        tmp_path,
        rewards=[alternating, opposite],
        reward_weights=[1.0, 0.0],
        max_steps=2,
    )
    trainer.train()

    def push(*arguments: str) -> subprocess.CompletedProcess[str]:
        script = Path(__file__).parents[1] / "bench" / "behaviour_push.py"
        command = [sys.executable, str(script), str(tmp_path / "traces.jsonl"), *arguments]
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    for behaviour, expected in (("alternating", 0.5), ("opposite", -0.5)):
        done = push("--behaviour", behaviour, "--by", "golden_answers", "--out", str(tmp_path / "push.png"))
        assert done.returncode == 0, done.stderr
        strata = json.loads(done.stdout.splitlines()[-1])["strata"]
        per_step = [entry for stratum in strata.values() for entry in stratum.values()]
        assert len(per_step) == 2 and all(entry["groups"] == 1 for entry in per_step)
        assert all(entry["push"] == pytest.approx(expected) for entry in per_step)
    assert (tmp_path / "push.png").stat().st_size > 0
    missing = push("--behaviour", "searched_thrice")
    assert missing.returncode != 0 and "alternating, opposite" in missing.stderr


def constant_for_the_guild(trajectories, question, **_):
    """1 for every episode of the guild question (no spread); 0, 1, 0, 1 ... for the others."""
    constant_for_the_guild.episodes += len(trajectories)
    return [1.0 if q == GUILD else float(i % 2) for i, q in enumerate(question)]


def guild_trainer(searching_tiny_model, pool, tmp_path, scheduling: str, **options):
    """A one-step trainer scored by `constant_for_the_guild` (count reset), rolling out by `scheduling`."""
    model, tokenizer = searching_tiny_model
    constant_for_the_guild.episodes = 0
    trainer = trainer_for(
        model, tokenizer, pool, tmp_path, rewards=[constant_for_the_guild], max_steps=1, **options
    )
    trainer.environment.engine.config.scheduling = scheduling
    return trainer


@pytest.mark.parametrize("scheduling", ["episode", "turn"])  # a group replaced as it ends, or in rounds
def test_dynamic_sampling_replaces_a_group_without_spread_and_scores_each_episode_once(
    searching_tiny_model, pool, tmp_path, scheduling
) -> None:
    trainer = guild_trainer(
        searching_tiny_model,
        pool,
        tmp_path,
        scheduling,
        questions=(GUILD, TEST_QUESTIONS[0], TEST_QUESTIONS[2]),
        shuffle_dataset=False,  # the first batch is the guild's group
        grpo=GRPOStepConfig(dynamic_sampling=True, max_extra_rollouts=8),
    )
    trainer.train()
    (entry,) = logged(trainer)
    assert entry["dynamic_sampling/extra_rollouts"] == 4.0  # one fresh group of 4 filled the batch
    assert entry["dynamic_sampling/zero_std_share"] == 0.5
    assert entry["dynamic_sampling/groups_kept"] == 1.0 and entry["grpo/informative_groups"] == 1.0
    assert entry["frac_reward_zero_std"] == 0.0  # TRL trained on the group with a spread only
    assert constant_for_the_guild.episodes == 8, "TRL's call should reuse the scores, not score again"
    traces = [json.loads(line) for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 4 and all(t["question"] != GUILD for t in traces)
    assert sorted(t["rewards"]["constant_for_the_guild"] for t in traces) == [0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("scheduling", ["episode", "turn"])
def test_dynamic_sampling_stops_at_its_cap_and_the_step_is_skipped(
    searching_tiny_model, pool, tmp_path, scheduling
):
    trainer = guild_trainer(
        searching_tiny_model,
        pool,
        tmp_path,
        scheduling,
        questions=(GUILD,),
        grpo=GRPOStepConfig(dynamic_sampling=True, max_extra_rollouts=64, min_informative_groups=1),
    )
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    (entry,) = logged(trainer)
    # No other question to draw: the guild's group is all there is; nothing is learned from it.
    assert entry["dynamic_sampling/extra_rollouts"] == 0.0 and entry["dynamic_sampling/groups_kept"] == 0.0
    assert entry["frac_reward_zero_std"] == 1.0 and entry["grpo/skipped_step"] == 1.0
    assert all(torch.equal(p.detach(), before[n]) for n, p in trainer.model.named_parameters())


def test_negative_advantages_are_weighted_and_informative_groups_counted(
    searching_tiny_model, pool, tmp_path
) -> None:
    model, tokenizer = searching_tiny_model
    trainer = trainer_for(
        model, tokenizer, pool, tmp_path, grpo=GRPOStepConfig(negative_advantage_weight=0.25)
    )
    output = {"advantages": torch.tensor([0.5, 0.5, 0.5, -1.5, 0.0, 0.0, 0.0, 0.0])}
    trainer.weigh_advantages(output)
    assert output["advantages"].tolist() == [0.5, 0.5, 0.5, -0.375, 0.0, 0.0, 0.0, 0.0]
    assert trainer.step_metrics["grpo/informative_groups"] == [1.0]


def same_for_all(completion_ids, **_):
    """1 for every episode: no group has a reward spread, so GRPO's own gradient is exactly 0."""
    return [1.0] * len(completion_ids)


class Gradients(TrainerCallback):
    """Each trained weight's gradient as the optimizer is about to step (after clipping)."""

    def __init__(self) -> None:
        self.seen: list[dict[str, torch.Tensor]] = []

    def on_pre_optimizer_step(self, args, state, control, model=None, **_) -> None:
        self.seen.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})


@pytest.mark.parametrize("sft_coef", [0.0, 0.5])
def test_the_warm_starts_loss_mixed_in_is_the_steps_whole_gradient_without_signal(
    searching_tiny_model, pool, tmp_path, sft_coef
) -> None:
    """Without reward spread GRPO's gradient is 0: with ``grpo.sft_coef`` the step's gradient is that times
    the demonstrations' mean token loss's (summed over the 2 accumulated micro-batches, not doubled), the
    loss logged is theirs, and the step lowers it; without, nothing moves."""
    from mcp_rl.training.lean_forward import supervised_loss
    from mcp_rl.training.warm_start import played_demonstrations

    model, tokenizer = searching_tiny_model
    trainer = trainer_for(
        model,
        tokenizer,
        pool,
        tmp_path,
        rewards=[same_for_all],
        grpo=GRPOStepConfig(sft_coef=sft_coef, sft_batch_size=3),  # each draw: all 3 demonstrations
        max_steps=1,
        per_device_train_batch_size=2,
        gradient_accumulation_steps=2,
        max_grad_norm=1e9,  # the gradient as computed, not clipped
    )
    episodes = played_demonstrations(
        WarmStartConfig(demonstrations=TEMPLATES), trainer.environment, rows(*TEST_QUESTIONS)
    )
    assert len(episodes) == 3
    trainer.mix_in_demonstrations(episodes)
    pad_id = tokenizer.pad_token_id
    trainer.model.zero_grad()
    before = supervised_loss(trainer.model, episodes, pad_id)
    (sft_coef * before).backward()
    before = before.detach()
    expected = {n: p.grad.clone() for n, p in trainer.model.named_parameters() if p.grad is not None}
    trainer.model.zero_grad()
    gradients = Gradients()
    trainer.add_callback(gradients)
    trainer.train()
    (entry,) = logged(trainer)
    (seen,) = gradients.seen
    assert entry["frac_reward_zero_std"] == 1.0
    with torch.no_grad():
        after = supervised_loss(trainer.model, episodes, pad_id)
    if sft_coef == 0:
        assert trainer.demonstration_loss is None and "grpo/sft_loss" not in entry
        assert all(float(g.abs().max()) == 0.0 for g in seen.values())
        assert float(after) == pytest.approx(float(before), rel=1e-6)
        return
    assert entry["grpo/sft_loss"] == pytest.approx(float(before), rel=1e-4)
    assert seen.keys() == expected.keys()
    for name, gradient in expected.items():
        torch.testing.assert_close(seen[name], gradient, rtol=1e-3, atol=1e-6)
    assert float(after) < float(before)


def test_train_with_a_warm_start_anchors_kl_warms_up_and_logs_probes(
    tiny_model_dir, tiny_corpus, tiny_qa, tmp_path
) -> None:
    out = tmp_path / "run"
    rewards = tmp_path / "alternate.py"
    rewards.write_text(inspect.getsource(alternating))
    settings = tiny_search_overrides(
        tiny_model_dir,
        tiny_corpus,
        tiny_qa,
        **{
            "warm_start.demonstrations": repr(TEMPLATES),
            "warm_start.episodes": 2,
            "warm_start.epochs": 3,
            "warm_start.batch_size": 2,
            "warm_start.learning_rate": 1e-2,
            "probes.demonstrations": 2,
            "grpo.sft_coef": 0.5,
            "trainer.beta": 0.1,
            "trainer.warmup_steps": 1,
            "trainer.lr_scheduler_type": "constant_with_warmup",
            "rewards": f"[{{name: '{rewards}:alternating'}}]",  # every group has a reward spread
        },
    )
    result = run_cli("train", "--recipe", "search", "-o", str(out), *settings, timeout_s=300)
    assert result.returncode == 0, result.stderr[-3000:]
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [m for m in metrics if "reward" in m]
    assert [m["step"] for m in steps] == [1, 2]
    first, second = steps
    assert first["kl"] < 1e-6, "the reference is the warm-started policy, where step 1 starts"
    # Warm-up: the first step's learning rate is 0, so nothing moved; the second moves the probes.
    assert first["probe/update_norm"] == 0.0 and "probe/update_norm_over_lr" not in first
    assert first["probe/kl"] == pytest.approx(0.0, abs=1e-9) and first["probe/delta_logp"] == 0.0
    assert second["probe/update_norm"] > 0 and second["probe/kl"] > 0
    assert math.isfinite(second["probe/delta_logp"]) and second["probe/delta_logp"] != 0.0
    assert [m["grpo/informative_groups"] for m in steps] == [1.0, 1.0]
    assert all(math.isfinite(m["probe/hops/1/search_margin"]) for m in steps)
    # The warm start's demonstrations, mixed in: learned well enough that their loss is small, not 0.
    (warm,) = [m for m in metrics if "warm_start/first_loss" in m]
    assert all(0 < m["grpo/sft_loss"] < warm["warm_start/first_loss"] for m in steps)
    assert (out / "training.png").exists()


def test_a_warm_up_under_a_constant_schedule_is_refused_and_lr_0_is_a_control() -> None:
    from mcp_rl.config.recipe import load_recipe
    from mcp_rl.errors import RecipeError

    with pytest.raises(RecipeError, match="constant ignores the warm-up; use constant_with_warmup"):
        load_recipe("search", ["trainer.warmup_steps=5"])
    recipe = load_recipe(
        "search", ["trainer.warmup_steps=5", "trainer.lr_scheduler_type=constant_with_warmup"]
    )
    assert recipe.trainer["warmup_steps"] == 5
    # The lr-0 control (episodes and probes, no update) is a recipe; a negative rate is still refused.
    assert load_recipe("search", ["trainer.learning_rate=0.0"]).trainer["learning_rate"] == 0.0
    with pytest.raises(RecipeError, match=r"trainer\.learning_rate: must be at least 0"):
        load_recipe("search", ["trainer.learning_rate=-1e-5"])
    with pytest.raises(RecipeError, match=r"grpo\.sft_coef: the supervised loss mixed in is the warm"):
        load_recipe("search", ["grpo.sft_coef=0.1"])  # search has no warm start


def test_the_search_margin_after_the_first_passage_is_split_by_calls_and_teacher_forced(
    searching_tiny_model, pool
) -> None:
    from tiny import searching_environment

    from mcp_rl.training.probes import SearchMargin, second_turn_start
    from mcp_rl.training.warm_start import ScriptedEngine

    model, tokenizer = searching_tiny_model
    scripts = [
        ["<search> fox </search>", "<answer> Draskel </answer>"],
        ["<search> fox </search>", "<search> Ober river </search>", "<answer> Draskel </answer>"],
    ]
    with searching_environment(model, tokenizer, pool) as environment:
        engine = ScriptedEngine(environment.engine, scripts)
        episodes = engine.rollout(
            [environment.messages(row) for row in rows(*TEST_QUESTIONS[:2])], greedy=True
        )
        margins = SearchMargin(episodes, tokenizer)(model, tokenizer.pad_token_id)
    assert set(margins) == {"probe/hops/1/search_margin", "probe/hops/2/search_margin"}
    for episode in episodes:  # the same number from a plain forward over each continuation
        start = second_turn_start(episode)
        context = list(episode.prompt_ids) + list(episode.completion_ids[:start])
        scores = []
        for word in ("<search>", "<answer>"):
            ids = tokenizer(word, add_special_tokens=False)["input_ids"]
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([context + ids])).logits[0].float()
            picked = logits[len(context) - 1 : -1].log_softmax(-1).gather(-1, torch.tensor(ids)[:, None])
            scores.append(float(picked.sum()))
        key = f"probe/hops/{len(episode.calls)}/search_margin"
        assert margins[key] == pytest.approx(scores[0] - scores[1], abs=1e-4)
