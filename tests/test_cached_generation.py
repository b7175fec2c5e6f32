"""The default transformers generator that reuses attention state, against plain ``model.generate``."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
import torch
from conftest import TEST_QUESTIONS
from tiny import searching_environment
from tiny_models import tiny_model_and_tokenizer

from mcp_rl.config.sections import RolloutConfig
from mcp_rl.env.environment import build_generator
from mcp_rl.generation.base import Generator, SamplingParams, TransformersGenerator
from mcp_rl.generation.cached import CachedTransformersGenerator, common_length, similar_lengths
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers

STOPS = ["</search>", "</answer>"]


@pytest.fixture(scope="module")
def random_tiny() -> tuple[Any, Any]:
    """An untrained tiny Llama (float32): it writes until its budget, so every turn is long and varied."""
    model, tokenizer = tiny_model_and_tokenizer(seed=1)
    return model.eval(), tokenizer


def conversation_start(tokenizer: Any) -> list[list[int]]:
    system = tokenizer.encode(
        "<|im_start|>system\nAnswer with the search tool. The quick brown fox<|im_end|>\n"
    )
    questions = [*TEST_QUESTIONS, "In which year was the town founded? It was founded in"]
    return [
        system + tokenizer.encode(f"<|im_start|>user\n{q}<|im_end|>\n<|im_start|>assistant\n")
        for q in questions
        for _ in range(2)
    ]


def observation(tokenizer: Any, index: int) -> list[int]:
    """Observations of different lengths, so rows have different amounts of new tokens each turn."""
    text = "Doc 1(Title: Fox) " + "The fox lives in Draskel. " * index
    return tokenizer.encode(
        f"<|im_start|>user\n<information>{text}</information><|im_end|>\n<|im_start|>assistant\n"
    )


def drive(generator: Generator, tokenizer: Any, sampling: SamplingParams, turns: int = 3) -> list[list[Any]]:
    """A multi-turn batch as the engine drives it: whole token lists each turn, fewer episodes each turn,
    one episode's turn cut short (as the token budget cuts it), observations appended after each turn."""
    sequences = conversation_start(tokenizer)
    active = list(range(len(sequences)))
    seen = []
    for turn in range(turns):
        generations = generator.generate([sequences[i] for i in active], sampling)
        seen.append([(g.token_ids, g.finish_reason) for g in generations])
        for position, (index, generation) in enumerate(zip(active, generations, strict=True)):
            kept = generation.token_ids[:3] if position == 0 else generation.token_ids
            sequences[index] += kept + observation(tokenizer, (index + turn) % 5)
        active = active[1:] if turn == 0 else active[::2]
    return seen


class ForwardWidths:
    """The (rows, tokens) of every forward pass the model runs."""

    def __init__(self, model: Any) -> None:
        self.shapes: list[tuple[int, int]] = []
        self.handle = model.register_forward_pre_hook(self.record, with_kwargs=True)

    def record(self, _module: Any, _args: Any, kwargs: dict[str, Any]) -> None:
        self.shapes.append(tuple(kwargs["input_ids"].shape))

    def prefills(self) -> list[tuple[int, int]]:
        """The passes that read prompt tokens (one token per row is a decoding step)."""
        return [shape for shape in self.shapes if shape[1] > 1]

    def close(self) -> None:
        self.handle.remove()


def test_greedy_turns_are_identical_to_plain_generate(random_tiny):
    model, tokenizer = random_tiny
    sampling = SamplingParams(max_new_tokens=12, temperature=0.0, stop_strings=STOPS)
    plain = drive(TransformersGenerator(model, tokenizer), tokenizer, sampling)
    cached = drive(CachedTransformersGenerator(model, tokenizer), tokenizer, sampling)
    assert cached == plain
    assert all(ids for turn in plain for ids, _ in turn), "every turn wrote tokens"


def test_each_turn_reads_only_its_new_tokens(random_tiny):
    model, tokenizer = random_tiny
    sampling = SamplingParams(max_new_tokens=12, temperature=0.0, stop_strings=STOPS)
    widths = {}
    for name, generator in [
        ("plain", TransformersGenerator(model, tokenizer)),
        ("cached", CachedTransformersGenerator(model, tokenizer)),
    ]:
        recorder = ForwardWidths(model)
        try:
            drive(generator, tokenizer, sampling)
        finally:
            recorder.close()
        widths[name] = recorder
    starts = conversation_start(tokenizer)
    shared = min(common_length(starts[0], other) for other in starts[1:])
    prefills = widths["cached"].prefills()
    # The shared prefix once (one row), then per turn only what follows it: the question, then observations.
    assert prefills[0] == (1, shared)
    # Each question is asked twice: its prompt is read once, and both rows decode from that reading.
    distinct = {tuple(start) for start in starts}
    shapes = widths["cached"].shapes
    first_turn = list(itertools.takewhile(lambda shape: shape[1] > 1, shapes[1:]))
    assert len(distinct) < len(starts) and sum(rows for rows, _ in first_turn) == len(distinct)
    longest_observation = max(len(observation(tokenizer, i)) for i in range(5))
    assert all(width <= longest_observation + 1 for _, width in prefills[1:])
    read = {name: sum(rows * width for rows, width in w.prefills()) for name, w in widths.items()}
    assert read["cached"] < read["plain"] / 2


def test_state_follows_the_policy_and_the_episodes(random_tiny):
    model, tokenizer = random_tiny
    generator = CachedTransformersGenerator(model, tokenizer)
    sampling = SamplingParams(max_new_tokens=6, temperature=0.0)
    generator.sync(model, step=0)
    starts = conversation_start(tokenizer)
    first = generator.generate(starts, sampling)
    prefix = generator.prefix
    assert prefix is not None and len(generator.episodes) == len(starts)
    # Continuing two episodes frees the others' state.
    generator.generate([starts[i] + first[i].token_ids for i in (0, 3)], sampling)
    assert len(generator.episodes) == 2
    generator.sync(model, step=0)
    generator.generate(starts, sampling)
    assert generator.prefix is prefix, "same step, same weights: the shared prefix is kept"
    generator.sync(model, step=1)
    assert generator.prefix is None and not generator.episodes


def test_held_episodes_keep_their_state_through_a_call_without_them(random_tiny):
    model, tokenizer = random_tiny
    sampling = SamplingParams(max_new_tokens=6, temperature=0.0, stop_strings=STOPS)
    starts = conversation_start(tokenizer)
    widths = {}
    for hold in (True, False):
        generator = CachedTransformersGenerator(model, tokenizer)
        first = generator.generate(starts, sampling)
        written = [start + g.token_ids for start, g in zip(starts, first, strict=True)]
        later = [w + observation(tokenizer, i % 5) for i, w in enumerate(written)]
        if hold:  # episodes 0 and 3 wait for their tools while 4 and 6 (other questions) go on
            generator.hold([written[0], written[3]])
        generator.generate([later[4], later[6]], sampling)
        recorder = ForwardWidths(model)
        try:
            continued = generator.generate([later[0], later[3]], sampling)
        finally:
            recorder.close()
        assert continued == TransformersGenerator(model, tokenizer).generate([later[0], later[3]], sampling)
        widths[hold] = max(width for _, width in recorder.prefills())
    # Held: only the observation (and the turn's last token) is read; dropped: the question and turn too.
    assert widths[True] <= max(len(observation(tokenizer, i)) for i in (0, 3)) + 1 < widths[False]


def held_columns(state: Any) -> int:
    keys, _ = state.layers[0]
    return keys.shape[2]


@pytest.mark.parametrize("first_alone", [False, True], ids=["batch", "prefix-from-one-prompt"])
def test_episodes_hold_the_shared_prefix_once(random_tiny, first_alone):
    model, tokenizer = random_tiny
    generator = CachedTransformersGenerator(model, tokenizer)
    sampling = SamplingParams(max_new_tokens=6, temperature=0.0, stop_strings=STOPS)
    starts = conversation_start(tokenizer)
    if first_alone:  # the prefix is then one whole prompt, longer than what the others share with it
        generator.generate(starts[:1], sampling)
    prefix = generator.prefix

    def assert_held_on_the_prefix() -> None:
        assert generator.prefix is not None and held_columns(generator.prefix) == len(generator.prefix.ids)
        shared = min(common_length(generator.prefix.ids, start) for start in starts)
        for state in generator.episodes:
            assert state.base is generator.prefix and state.shared >= shared > 0
            assert state.ids[: state.shared] == generator.prefix.ids[: state.shared]
            assert held_columns(state) == len(state.ids) - state.shared

    first = generator.generate(starts, sampling)
    assert generator.prefix is prefix or not first_alone, "the one-prompt prefix covers what the batch shares"
    assert_held_on_the_prefix()
    later = [
        start + generation.token_ids + observation(tokenizer, index % 5)
        for index, (start, generation) in enumerate(zip(starts, first, strict=True))
    ]
    continued = generator.generate(later, sampling)  # read from the held states
    assert_held_on_the_prefix()
    # What was read on top of the shared prefix decodes as plain generate does from the whole conversation.
    assert continued == TransformersGenerator(model, tokenizer).generate(later, sampling)


def test_weights_changed_in_place_drop_the_state(random_tiny):
    model, tokenizer = tiny_model_and_tokenizer(seed=2)
    model.eval()
    generator = CachedTransformersGenerator(model, tokenizer)
    sampling = SamplingParams(max_new_tokens=8, temperature=0.0)
    starts = conversation_start(tokenizer)
    generator.generate(starts, sampling)
    with torch.no_grad():  # what an optimizer step does, without the trainer calling sync
        for parameter in model.parameters():
            parameter.mul_(1.5)
    expected = TransformersGenerator(model, tokenizer).generate(starts, sampling)
    assert generator.generate(starts, sampling) == expected


def test_sampling_is_reproducible_with_a_seed(random_tiny):
    model, tokenizer = random_tiny
    sampling = SamplingParams(max_new_tokens=10, temperature=1.0, top_p=0.9, top_k=50, stop_strings=STOPS)
    runs = []
    for _ in range(2):
        torch.manual_seed(7)
        runs.append(drive(CachedTransformersGenerator(model, tokenizer), tokenizer, sampling))
    assert runs[0] == runs[1]


def test_rollouts_against_a_real_server_match_plain_generate(searching_tiny_model, search_entry):
    model, tokenizer = searching_tiny_model
    outcomes = []
    with BlockingToolPool(parse_mcp_servers({"search": search_entry})) as pool:
        for generator in (
            TransformersGenerator(model, tokenizer),
            CachedTransformersGenerator(model, tokenizer),
        ):
            pipeline = searching_environment(model, tokenizer, pool, generator=generator)
            messages = [pipeline.messages({"question": q}) for q in TEST_QUESTIONS]
            trajectories = pipeline.engine.rollout(messages, num_generations=2, greedy=True)
            outcomes.append(
                [
                    (t.completion_ids, t.completion_mask, t.finish_reason, t.info["last_finish"])
                    for t in trajectories
                ]
            )
    assert outcomes[1] == outcomes[0]
    assert any(mask.count(0) for _, mask, _, _ in outcomes[0]), "the episodes read observations"


def test_the_recipe_picks_the_generator(random_tiny):
    model, tokenizer = random_tiny
    assert isinstance(build_generator(RolloutConfig(), model, tokenizer), CachedTransformersGenerator)
    plain = build_generator(RolloutConfig(reuse_cache=False), model, tokenizer)
    assert type(plain) is TransformersGenerator


def test_similar_lengths_group_prompts_for_one_read():
    assert similar_lengths([100, 12, 104, 60, 14, 300]) == [[1, 4], [3], [0, 2], [5]]
    assert similar_lengths([]) == []


def test_common_length():
    assert common_length([1, 2, 3, 4], [1, 2, 9]) == 2
    assert common_length([1, 2], [1, 2, 3]) == 2
    assert common_length([5], [1]) == 0
    assert common_length([], [1]) == 0
