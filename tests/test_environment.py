"""The Environment wires a task once and owns its episodes: built from a recipe in two phases (servers and
rubric before any model), scored through one rubric whose TRL stand-ins score a batch once and hand it to
the hook once, and checked against the trainer's sampling wherever the two meet."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from conftest import ECHO_SERVER, ROOT
from tiny import child_pids, tiny_dataset, tiny_grpo_config
from tiny_models import tiny_model_and_tokenizer

from mcp_rl.config.sections import Recipe, RewardSpec, RolloutConfig, ToolsConfig
from mcp_rl.env.environment import Environment
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.errors import ConfigError
from mcp_rl.generation.base import TransformersGenerator
from mcp_rl.rewards import Rubric, ScoredBatch
from mcp_rl.rewards.rubric import TRLRewards, reward_arguments

ECHO = {"command": "python", "args": [ECHO_SERVER], "cwd": str(ROOT)}


def episode(answer: str | None) -> Trajectory:
    return Trajectory(prompt_index=0, prompt_messages=[], prompt_ids=[], completion_ids=[1], answer=answer)


def test_a_reward_naming_a_missing_tool_fails_at_build_and_stops_the_servers() -> None:
    recipe = Recipe(
        tools=ToolsConfig(mcpServers={"echo": ECHO}),
        rewards=[RewardSpec(name="tool_verify", options={"tool": "nope", "arguments": {}})],
    )
    before = child_pids()
    with pytest.raises(ConfigError, match="no tool named 'nope'; the servers have: echo"):
        Environment.from_recipe(recipe)
    assert child_pids() - before == set(), "the echo server outlived the failed build"


def test_the_first_phase_has_tools_parser_and_rubric_but_no_model_yet() -> None:
    recipe = Recipe(tools=ToolsConfig(mcpServers={"echo": ECHO}), rewards=[RewardSpec(name="exact_match")])
    with Environment.from_recipe(recipe) as environment:
        assert "echo" in {tool.name for tool in environment.tools}
        assert environment.rubric.names == ["exact_match"]
        with pytest.raises(ConfigError, match="use_model"):
            environment.engine  # noqa: B018 - the property is what is tested
    assert environment.closed and environment.pool.portal is None


def test_zero_weight_entries_are_scored_but_add_nothing_and_the_hook_releases() -> None:
    def answered(trajectories: list[Trajectory], **_: Any) -> list[float]:
        return [float(t.answer is not None) for t in trajectories]

    def said_yes(trajectories: list[Trajectory], **_: Any) -> list[float | None]:
        return [None if t.answer is None else float(t.answer == "yes") for t in trajectories]

    environment = Environment(rubric=Rubric([said_yes, answered], weights=[2.0, 0.0]))
    episodes = [episode("yes"), episode("no"), episode(None)]
    scored = environment.score(episodes, [{}, {}, {}])
    assert scored.scores == {"said_yes": [1.0, 0.0, None], "answered": [1.0, 1.0, 0.0]}
    assert scored.totals == [2.0, 0.0, 0.0], "the metric is scored; only said_yes adds to the total"
    assert scored.skipped() == {"said_yes": {"skipped": 1, "of": 3}}
    assert environment.last_batch is scored


def test_trl_stand_ins_score_a_batch_once_and_fire_the_hook_after_the_last() -> None:
    calls: list[str] = []

    def first(trajectories: list[Trajectory], **_: Any) -> list[float]:
        calls.append("first")
        return [1.0] * len(trajectories)

    async def second(trajectories: list[Trajectory], **_: Any) -> list[float]:
        calls.append("second")
        return [0.5] * len(trajectories)

    hooked: list[tuple[ScoredBatch, Any]] = []
    rewards = TRLRewards(Rubric([first, second], weights=[1.0, 0.0]), lambda b, kw: hooked.append((b, kw)))
    stand_ins = rewards.functions()
    assert [f.__name__ for f in stand_ins] == ["first", "second"]
    episodes = [episode("a"), episode("b")]
    kwargs = reward_arguments(episodes, [{"q": 1}, {"q": 2}])
    assert stand_ins[0](**kwargs) == [1.0, 1.0]
    assert calls == ["first", "second"], "the first stand-in scores every entry, through Rubric.score"
    assert hooked == [], "the hook waits for the last entry"
    assert asyncio.run(stand_ins[1](**kwargs)) == [0.5, 0.5]
    assert calls == ["first", "second"], "the second entry's scores were kept, not computed again"
    [(batch, seen)] = hooked
    assert batch.trajectories == episodes and batch.totals == [1.0, 1.0] and seen["q"] == [1, 2]
    # Dynamic sampling scores ahead; TRL's later call returns the same scores without calling again.
    assert rewards.score_ahead(episodes, [{}, {}]) == [1.0, 1.0]
    assert stand_ins[0](**kwargs) == [1.0, 1.0] and len(calls) == 4


def test_the_trainer_refuses_sampling_its_environment_does_not_do(tmp_path) -> None:
    from mcp_rl.training.trainer import MCPGRPOTrainer

    model, tokenizer = tiny_model_and_tokenizer()
    environment = Environment(
        tokenizer, TransformersGenerator(model, tokenizer), rollout=RolloutConfig(temperature=0.8)
    )

    def build(**settings: Any) -> None:
        MCPGRPOTrainer(
            model=model,
            reward_funcs=[lambda trajectories, **_: [0.0] * len(trajectories)],
            args=tiny_grpo_config(tmp_path, **settings),
            train_dataset=tiny_dataset(2),
            processing_class=tokenizer,
            environment=environment,
        )

    with pytest.raises(ConfigError) as raised:
        build()  # TRL's default temperature is 1.0
    message = str(raised.value)
    assert "rollout.temperature=0.8" in message and "GRPOConfig.temperature=1.0" in message
    assert "\n" not in message
    with pytest.raises(
        ConfigError, match=r"rollout.max_completion_tokens=384 but GRPOConfig.max_completion_length=99"
    ):
        build(temperature=0.8, max_completion_length=99)
    with pytest.raises(ConfigError, match=r"rollout.top_p=1.0 but GRPOConfig.top_p=0.9"):
        build(temperature=0.8, top_p=0.9)


def test_the_rubric_weights_are_the_trainers_unless_they_disagree(tmp_path) -> None:
    from mcp_rl.training.trainer import MCPGRPOTrainer

    def constant(trajectories: list[Trajectory], **_: Any) -> list[float]:
        return [1.0] * len(trajectories)

    model, tokenizer = tiny_model_and_tokenizer()
    environment = Environment(
        tokenizer, TransformersGenerator(model, tokenizer), rubric=Rubric([constant], weights=[0.5])
    )
    with pytest.raises(ConfigError, match=r"reward_weights=\[2.0\] but the Environment's rubric"):
        MCPGRPOTrainer(
            model=model,
            args=tiny_grpo_config(tmp_path, reward_weights=[2.0]),
            train_dataset=tiny_dataset(2),
            processing_class=tokenizer,
            environment=environment,
        )
    args = tiny_grpo_config(tmp_path)
    trainer = MCPGRPOTrainer(
        model=model,
        args=args,
        train_dataset=tiny_dataset(2),
        processing_class=tokenizer,
        environment=environment,
    )
    assert trainer.reward_func_names == ["constant"] and trainer.reward_weights.tolist() == [0.5]


def test_prompted_datasets_are_keyed_on_the_prompt_not_a_random_hash() -> None:
    """datasets cannot hash an Environment with running servers and falls back to a random fingerprint (and a
    warning on every run): the same prompt must give the same fingerprint, so that its cache is used, and a
    changed prompt a new one."""
    from mcp_rl.config.sections import PromptConfig

    _, tokenizer = tiny_model_and_tokenizer()
    dataset = tiny_dataset(1)
    fingerprints = []
    for system in ("Answer with a name.", "Answer with a name.", "Answer with a number."):
        prompt = PromptConfig(system=system, user_template="Q: {question}")
        recipe = Recipe(tools=ToolsConfig(mcpServers={"echo": ECHO}), prompt=prompt)
        with Environment.from_recipe(recipe, rewards=False) as environment:
            environment.wire(tokenizer, None)
            prompted = environment.with_prompts(dataset)
            assert prompted[1]["prompt"] == environment.messages(dataset[1])
        fingerprints.append(prompted._fingerprint)
    assert fingerprints[0] == fingerprints[1], "the same prompt, a new fingerprint: datasets hashed at random"
    assert fingerprints[0] != fingerprints[2], "a changed system prompt reused the cached prompts"
