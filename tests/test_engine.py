"""The rollout engine with a real tiny model against real MCP servers."""

from __future__ import annotations

import time

import anyio
import pytest
from conftest import TEST_QUESTIONS, tiny_prompt_config
from mcp.server.mcpserver import MCPServer
from tiny import mask_runs

from mcp_rl.config.sections import RolloutConfig
from mcp_rl.env.environment import Environment
from mcp_rl.env.metrics import rollout_metrics
from mcp_rl.env.parsers import build_parser
from mcp_rl.env.prompts import PromptBuilder
from mcp_rl.generation.base import TransformersGenerator, cut_at_stop
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import in_process, parse_mcp_servers


def make_engine(model, tokenizer, pool, parser_name="search_r1", **rollout):
    environment = Environment(
        tokenizer,
        TransformersGenerator(model, tokenizer),
        pool=pool,
        parser=parser_name,
        prompt=tiny_prompt_config(),
        rollout=RolloutConfig(**{"max_turns": 3, "max_new_tokens": 24, "temperature": 1.0, **rollout}),
    )
    return environment.engine, environment.prompts


def test_multi_turn_search_with_exact_token_alignment(searching_tiny_model, search_entry):
    model, tokenizer = searching_tiny_model
    with BlockingToolPool(parse_mcp_servers({"search": search_entry})) as pool:
        engine, prompts = make_engine(model, tokenizer, pool)
        messages = [prompts.messages({"question": q}) for q in TEST_QUESTIONS]
        trajectories = engine.rollout(messages, num_generations=2, greedy=True)
    assert len(trajectories) == 6
    assert [t.prompt_index for t in trajectories] == [0, 0, 1, 1, 2, 2]
    searched = [t for t in trajectories if t.calls]
    assert searched, "the warmed-up tiny model should search"
    for trajectory in searched:
        call = trajectory.calls[0]
        assert call.name == "search" and call.ok and "Doc 1(Title:" in call.observation
        assert "Draskel" in trajectory.turns[0].observation  # the fox passage was retrieved and shown
    for trajectory in trajectories:
        assert len(trajectory.completion_ids) == len(trajectory.completion_mask)
        assert len(trajectory.completion_ids) <= engine.config.max_completion_tokens
        model_runs = [
            ids for value, ids in mask_runs(trajectory.completion_mask, trajectory.completion_ids) if value
        ]
        observation_runs = [
            ids
            for value, ids in mask_runs(trajectory.completion_mask, trajectory.completion_ids)
            if not value
        ]
        assert [tokenizer.decode(ids, skip_special_tokens=True) for ids in model_runs] == [
            t.text for t in trajectory.turns
        ]
        observations = [t.observation for t in trajectory.turns if t.observation is not None]
        assert [tokenizer.decode(ids) for ids in observation_runs] == observations
        assert sum(t.generated_tokens for t in trajectory.turns) == trajectory.completion_mask.count(1)
    answered = [t for t in trajectories if t.answer is not None]
    assert answered and all(t.finish_reason == "answer" for t in answered)
    metrics = rollout_metrics(trajectories)
    assert metrics["rollout/calls_per_trajectory"] > 0 and 0 < metrics["rollout/answered"] <= 1


def test_turns_of_all_trajectories_call_tools_concurrently(searching_tiny_model):
    model, tokenizer = searching_tiny_model
    server = MCPServer("slow")
    latency_s = 0.5

    @server.tool()
    async def slow_search(query: str) -> str:
        """A search that takes half a second."""
        await anyio.sleep(latency_s)
        return f"Doc 1(Title: Fox) {query} lives in Draskel."

    parser = build_parser("tags", tools={"search": {"tool": "slow_search", "argument": "query"}})
    with BlockingToolPool([in_process("slow", server)]) as pool:
        engine, prompts = make_engine(model, tokenizer, pool, parser, max_turns=2)
        messages = [prompts.messages({"question": TEST_QUESTIONS[0]})]
        trajectories = engine.rollout(messages, num_generations=16, greedy=True)
    calls = sum(len(t.calls) for t in trajectories)
    assert calls >= 8, "most trajectories should have searched"
    tools_s = engine.last_stats["rollout/tools_s"]
    # Sequential calls would take calls × latency; concurrent ones about one latency per turn.
    assert tools_s < calls * latency_s / 3, f"{calls} calls took {tools_s:.2f} s: not concurrent"


def test_failures_and_malformed_output_become_observations(searching_tiny_model, echo_stdio):
    model, tokenizer = searching_tiny_model
    # The model searches, but the only tool is `echo`: an unknown-tool failure, and the episode goes on.
    with BlockingToolPool(parse_mcp_servers({"echo": echo_stdio})) as pool:
        engine, prompts = make_engine(model, tokenizer, pool)
        trajectories = engine.rollout(
            [prompts.messages({"question": TEST_QUESTIONS[0]})], num_generations=4, greedy=True
        )
    failed = [c for t in trajectories for c in t.calls if not c.ok]
    assert failed and all(c.failure == "unknown tool" for c in failed)
    assert all("Error (unknown tool)" in c.observation for c in failed)


def test_observation_budget_truncates_with_marker(searching_tiny_model, search_entry):
    model, tokenizer = searching_tiny_model
    with BlockingToolPool(parse_mcp_servers({"search": search_entry})) as pool:
        engine, prompts = make_engine(model, tokenizer, pool, max_observation_tokens=12)
        trajectories = engine.rollout([prompts.messages({"question": TEST_QUESTIONS[0]})], greedy=True)
    observed = [turn for t in trajectories for turn in t.turns if turn.calls]
    assert observed and all("…[truncated]" in turn.observation for turn in observed)


def test_cut_at_stop_keeps_whole_tokens(searching_tiny_model):
    _, tokenizer = searching_tiny_model
    ids = tokenizer("<search> fox </search> trailing words", add_special_tokens=False)["input_ids"]
    cut, reason = cut_at_stop(ids, tokenizer, ["</search>"], {tokenizer.eos_token_id})
    assert reason == "stop" and tokenizer.decode(cut).endswith("</search>")
    eos = tokenizer.eos_token_id
    cut, reason = cut_at_stop([*ids[:3], eos, eos, eos], tokenizer, ["</nothing>"], {eos})
    assert reason == "eos" and cut == [*ids[:3], eos]
    assert cut_at_stop(ids[:3], tokenizer, [], {eos}) == (ids[:3], "length")


@pytest.mark.parametrize("role", ["user", "tool", "inline"])
def test_observation_frames(searching_tiny_model, role):
    _, tokenizer = searching_tiny_model
    builder = PromptBuilder(tiny_prompt_config(), build_parser("search_r1"), [], tokenizer)
    before, after = builder.observation_frame(role)
    if role == "inline":
        assert (before, after) == ("", "")
    else:
        assert (
            before == f"<|im_end|>\n<|im_start|>{role}\n" and after == "<|im_end|>\n<|im_start|>assistant\n"
        )


def test_engine_speed_is_not_asserted_but_recorded(searching_tiny_model, search_entry):
    model, tokenizer = searching_tiny_model
    with BlockingToolPool(parse_mcp_servers({"search": search_entry})) as pool:
        engine, prompts = make_engine(model, tokenizer, pool)
        start = time.perf_counter()
        engine.rollout([prompts.messages({"question": q}) for q in TEST_QUESTIONS])
        wall = time.perf_counter() - start
    stats = engine.last_stats
    assert 0 <= stats["rollout/generate_s"] <= stats["rollout/total_s"] <= wall + 1e-3
