"""Episode scheduling against turn scheduling: a real tiny model, a real stdio server whose latency differs
from call to call (``bench/latency_server.py``), and the default generator that keeps attention state."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from conftest import TEST_QUESTIONS
from tiny import ROOT, searching_environment

from mcp_rl.generation.base import Generation, SamplingParams
from mcp_rl.generation.cached import CachedTransformersGenerator
from mcp_rl.tools import BlockingToolPool, FailureKind
from mcp_rl.tools.server_config import parse_mcp_servers


class RecordingGenerator(CachedTransformersGenerator):
    """The default generator, noting the prompts of each call."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        super().__init__(model, tokenizer)
        self.calls: list[list[list[int]]] = []

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        self.calls.append([list(p) for p in prompts])
        return super().generate(prompts, sampling)


def latency_servers(*options: str, timeout_s: float = 30.0) -> Any:
    entry = {
        "command": sys.executable,
        "args": [str(ROOT / "bench" / "latency_server.py"), *options],
        "timeout": timeout_s,
    }
    return parse_mcp_servers({"search": entry})


def run(model: Any, tokenizer: Any, scheduling: str, *options: str, timeout_s: float = 30.0) -> Any:
    generator = RecordingGenerator(model, tokenizer)
    with BlockingToolPool(latency_servers(*options, timeout_s=timeout_s)) as pool:
        environment = searching_environment(model, tokenizer, pool, generator=generator)
        environment.engine.config.scheduling = scheduling
        messages = [environment.messages({"question": q}) for q in TEST_QUESTIONS]
        trajectories = environment.engine.rollout(messages, num_generations=3, greedy=True)
    return trajectories, generator


def outcome(trajectories: Sequence[Any]) -> list[Any]:
    return [
        (t.completion_ids, t.completion_mask, t.finish_reason, t.answer, [c.observation for c in t.calls])
        for t in trajectories
    ]


def test_greedy_episodes_are_identical_by_episode_and_by_turn(searching_tiny_model):
    model, tokenizer = searching_tiny_model
    # Latencies from 1 ms to ~0.5 s: calls come back in another order than they went out.
    options = ("--median-ms", "30", "--p99-ratio", "20", "--hang", "0")
    by_turn, _ = run(model, tokenizer, "turn", *options)
    by_episode, generator = run(model, tokenizer, "episode", *options)
    assert outcome(by_episode) == outcome(by_turn)
    assert any(t.calls for t in by_turn) and any(t.answer for t in by_turn), "the episodes searched"
    assert sum(len(call) for call in generator.calls) == sum(len(t.turns) for t in by_episode)


def test_a_hung_call_holds_only_its_own_episode(searching_tiny_model):
    model, tokenizer = searching_tiny_model
    options = ("--median-ms", "5", "--p99-ratio", "2", "--hang", "0", "--hang-calls", "0")
    outcomes = {}
    for scheduling in ("episode", "turn"):
        trajectories, generator = run(model, tokenizer, scheduling, *options, timeout_s=3.0)
        hung = [t for t in trajectories if any(c.failure == str(FailureKind.TIMEOUT) for c in t.calls)]
        assert len(hung) == 1, "the first call hangs until the pool's timeout"
        first = hung[0].turns[0]  # its siblings wrote the same turn, but read another observation
        after_timeout = (
            hung[0].prompt_ids + hung[0].completion_ids[: first.generated_tokens + first.observation_tokens]
        )
        # The call that wrote the hung episode's second turn: what else was generated with it.
        second = next(
            call for call in generator.calls if any(p[: len(after_timeout)] == after_timeout for p in call)
        )
        outcomes[scheduling] = (len(second), [t.finish_reason for t in trajectories])
    others = len(TEST_QUESTIONS) * 3 - 1
    assert outcomes["episode"][0] == 1, "by episode, the others had finished before the timeout"
    assert outcomes["turn"][0] > 1, "by turn, the others' second turns waited for the timeout"
    assert outcomes["episode"][1].count("answer") >= others // 2


def test_episodes_taken_lazily_at_most_some_in_flight(searching_tiny_model):
    """What dynamic sampling builds on: new episodes start as others end, from an iterable that can stop."""
    model, tokenizer = searching_tiny_model
    options = ("--median-ms", "20", "--hang", "0")
    expected, _ = run(model, tokenizer, "episode", *options)
    generator = RecordingGenerator(model, tokenizer)
    taken = []
    with BlockingToolPool(latency_servers(*options)) as pool:
        environment = searching_environment(model, tokenizer, pool, generator=generator)
        engine = environment.engine
        messages = [environment.messages({"question": q}) for q in TEST_QUESTIONS]

        def episodes() -> Any:
            for index in range(len(messages)):  # a group at a time, once a slot is free
                group = engine.start([messages[index]], 3)
                taken.append(sum(t.done for t in taken_episodes))
                taken_episodes.extend(group)
                yield from group

        taken_episodes: list[Any] = []
        engine.run_episodes(episodes(), engine.sampling(greedy=True), in_flight=3)
    assert [t.completion_ids for t in taken_episodes] == [t.completion_ids for t in expected]
    assert max(len(call) for call in generator.calls) <= 3
    assert taken[1] >= 1, "the second group started only once an episode of the first had ended"
