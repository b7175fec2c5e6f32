"""Rollouts that overlap training: the generator in a second process on a shared-memory copy of the weights,
and ``grpo.overlap`` training each batch one step after its rollout, with TRL's importance-sampling
correction; a real search server and tiny models."""

from __future__ import annotations

import copy
import json
import math
import time

import pytest
import torch
from conftest import run_cli
from test_cached_generation import STOPS, drive
from tiny import TEST_QUESTIONS, searching_trainer_kwargs, tiny_dataset, tiny_grpo_config
from tiny_models import tiny_model_and_tokenizer
from transformers import TrainerCallback

from mcp_rl.config.sections import GRPOStepConfig
from mcp_rl.errors import ConfigError
from mcp_rl.generation.base import SamplingParams
from mcp_rl.generation.cached import CachedTransformersGenerator
from mcp_rl.generation.process import GeneratorProcessError, ProcessGenerator
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.trainer import MCPGRPOTrainer


@pytest.fixture
def pool(search_entry):
    started = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()
    yield started
    started.close()


def scored_by(model, prompt: list[int], generation, temperature: float) -> torch.Tensor:
    """``model``'s log-probability of each token ``generation`` wrote, at ``temperature`` (as TRL scores)."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + generation.token_ids])).logits[0, len(prompt) - 1 : -1]
    scores = torch.log_softmax(logits.float() / temperature, -1)
    return scores.gather(1, torch.tensor(generation.token_ids)[:, None]).squeeze(1)


def test_the_process_generator_writes_what_the_policy_would_and_follows_its_weights():
    model, tokenizer = tiny_model_and_tokenizer(seed=1)
    model.eval()
    generator = ProcessGenerator(model, tokenizer, threads=1)
    try:
        greedy = SamplingParams(max_new_tokens=12, temperature=0.0, stop_strings=STOPS)
        generator.sync(model, step=0)
        in_process = CachedTransformersGenerator(model, tokenizer)
        assert drive(generator, tokenizer, greedy) == drive(in_process, tokenizer, greedy)

        # Each sampled token comes with its log-probability at the sampling temperature, as TRL scores it,
        # under the weights of the last `sync`: a change of the weights reaches the worker then, not before,
        # even one that no step number announces (the same step 0 again).
        prompt = tokenizer.encode("<|im_start|>user\nWhere is the fox?<|im_end|>\n<|im_start|>assistant\n")
        sampling = SamplingParams(max_new_tokens=10, temperature=0.8)
        old = copy.deepcopy(model)
        with torch.no_grad():
            noise = torch.Generator().manual_seed(0)
            for parameter in model.parameters():
                parameter.add_(0.05 * torch.randn(parameter.shape, generator=noise))
        for synced, policy, other in [(False, old, model), (True, model, old)]:
            if synced:
                generator.sync(model, step=0)
            for generation in generator.generate([prompt] * 3, sampling):
                assert generation.logprobs is not None
                assert len(generation.logprobs) == len(generation.token_ids) > 0
                written = torch.tensor(generation.logprobs)
                assert torch.allclose(scored_by(policy, prompt, generation, 0.8), written, atol=1e-4)
                assert not torch.allclose(scored_by(other, prompt, generation, 0.8), written, atol=1e-3)

        # A worker that dies fails the next call at once, naming its exit.
        generator.process.kill()
        started = time.monotonic()
        with pytest.raises(GeneratorProcessError, match="exited with code -9"):
            generator.generate([prompt], greedy)
        assert time.monotonic() - started < 10
    finally:
        generator.close()
    assert not generator.process.is_alive()


class WeightsAfterStep(TrainerCallback):
    """A copy of the model's weights as they were at the end of optimizer step ``step``."""

    def __init__(self, step: int) -> None:
        self.step = step
        self.weights: dict[str, torch.Tensor] | None = None

    def on_step_end(self, args, state, control, model=None, **_) -> None:
        if state.global_step == self.step:
            self.weights = {name: p.detach().clone() for name, p in model.named_parameters()}


def overlapping_trainer(
    model, tokenizer, pool, tmp_path, *, steps: int, backend: str = "process", dynamic_sampling: bool = False
):
    kwargs = searching_trainer_kwargs(model, tokenizer, pool)
    environment = kwargs["environment"]
    if backend == "process":
        environment.use_generator(ProcessGenerator(model, tokenizer, threads=1))
    return MCPGRPOTrainer(
        args=tiny_grpo_config(
            tmp_path / "out", max_steps=steps, vllm_importance_sampling_mode="token_truncate"
        ),
        train_dataset=tiny_dataset(4),
        grpo=GRPOStepConfig(overlap=True, dynamic_sampling=dynamic_sampling, max_extra_rollouts=8),
        trace_path=tmp_path / "traces.jsonl",
        **kwargs,
    )


@pytest.mark.parametrize("dynamic_sampling", [False, True], ids=["as_sampled", "dynamic_sampling"])
def test_overlap_trains_every_batch_one_step_after_its_rollout_weighed_by_importance(
    searching_tiny_model, pool, tmp_path, dynamic_sampling
):
    model, tokenizer = copy.deepcopy(searching_tiny_model[0]), searching_tiny_model[1]
    trainer = overlapping_trainer(
        model, tokenizer, pool, tmp_path, steps=4, dynamic_sampling=dynamic_sampling
    )
    generator = trainer.environment.generator
    trainer.add_callback(snapshot := WeightsAfterStep(3))
    trainer.train()
    # The last batch was rolled out, during step 4, by the weights after step 3: the optimizer's updates
    # reached the generator's copy (transformers' fused AdamW moves weights without a tensor version bump).
    assert snapshot.weights is not None
    for name, parameter in generator.replica.named_parameters():
        assert torch.equal(parameter, snapshot.weights[name]), name
    initial = searching_tiny_model[0].state_dict()
    assert any(not torch.equal(initial[name], weights) for name, weights in snapshot.weights.items())
    assert trainer.ahead is not None and trainer.ahead.pending is None, "the last batch ahead was discarded"
    assert not generator.process.is_alive(), "the trainer closed its Environment and the generator with it"

    traces = [json.loads(line) for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
    by_step: dict[int, set[int]] = {}
    for trace in traces:
        by_step.setdefault(trace["step"], set()).add(trace["info"]["policy_step"])
    # Step 1 trains the batch it played itself; every later step the one rolled out while the last trained.
    assert by_step == {1: {0}, 2: {0}, 3: {1}, 4: {2}}
    assert {trace["question"] for trace in traces} <= set(TEST_QUESTIONS)

    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 4
    ratio = "sampling/importance_sampling_ratio/"
    spread = [max(abs(entry[ratio + "min"] - 1), abs(entry[ratio + "max"] - 1)) for entry in logs]
    # Sampled and scored by the same weights, the ratio is 1 up to float rounding; one step behind, not.
    assert spread[0] < 1e-3
    assert all(gap > 1e-3 for gap in spread[1:])
    assert all(math.isfinite(entry["loss"]) for entry in logs)
    if dynamic_sampling:  # each batch's refill, played in the background, is logged with the step it trains
        assert all("dynamic_sampling/extra_rollouts" in entry for entry in logs)


def test_overlap_needs_a_generator_with_its_own_weights(searching_tiny_model, pool, tmp_path):
    model, tokenizer = copy.deepcopy(searching_tiny_model[0]), searching_tiny_model[1]
    with pytest.raises(ConfigError, match=r"rollout\.backend: process"):
        overlapping_trainer(model, tokenizer, pool, tmp_path, steps=1, backend="transformers")


def test_a_recipe_asking_for_overlap_without_a_process_generator_is_one_line_before_any_model_loads():
    done = run_cli("train", "--recipe", "search", "--set", "grpo.overlap=true", "-o", "unused", timeout_s=60)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "grpo.overlap" in lines[0] and "rollout.backend: process" in lines[0]
