"""The warm start on TRL's SFTTrainer (``mcp_rl.training.sft``): the hand-written loop's batches, losses
and weights on episodes played through the real search server; a stopped run resumed to the same
weights; a finished one not run again; two CPU processes under ``accelerate launch`` ending identical."""

from __future__ import annotations

import copy
import json
import math
import os
import random
import signal
import subprocess
from typing import Any

import pytest
import torch
from conftest import ROOT, two_process_launch
from scripts.sft_two_processes import CONFIG, demonstrations, weights_hash
from tiny import searching_environment
from tiny_models import tiny_model_and_tokenizer

from mcp_rl.config.sections import WarmStartConfig
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.generation.models import cpu_supports_bf16
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.callbacks import MetricsFile
from mcp_rl.training.lean_forward import supervised_loss
from mcp_rl.training.sft import FINAL, STATS, completed_batches, train_on_demonstrations
from mcp_rl.training.warm_start import ScriptedEngine

SCRIPTS = {
    "Where does the fox live?": ["<search> fox </search>", "<answer> Draskel </answer>"],
    "Who founded the guild?": ["<search> guild </search>", "<answer> Velora Quint </answer>"],
    "In which year was the town founded?": ["<search> Draskel town </search>", "<answer> 1701 </answer>"],
    "Which river flows through Draskel?": ["<search> Draskel river </search>", "<answer> Ober </answer>"],
    "Where does the Ober flow?": [
        "<search> Ober </search>",
        "<search> Morvane </search>",
        "<answer> Morvane </answer>",
    ],
}
TWO_PROCESS_TIMEOUT_S = 180


@pytest.fixture
def played(searching_tiny_model, search_entry) -> tuple[Any, Any, list[Trajectory]]:
    """The searching tiny model, its tokenizer, and each of ``SCRIPTS`` played through the real server."""
    model, tokenizer = searching_tiny_model
    pool = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()
    with searching_environment(model, tokenizer, pool) as environment:
        engine = ScriptedEngine(environment.engine, list(SCRIPTS.values()))
        episodes = engine.rollout([environment.messages({"question": q}) for q in SCRIPTS], greedy=True)
        environment.release(episodes)
    return model, tokenizer, episodes


def hand_written_loop(
    model: Any, episodes: list[Trajectory], config: WarmStartConfig, pad_id: int
) -> list[float]:
    """The loop ``warm_start()`` ran before the trainer, as the reference: its losses, batch by batch."""
    parameters = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(parameters, lr=config.learning_rate, weight_decay=0.0)
    order = random.Random(config.seed)
    losses = []
    model.train()
    for _ in range(config.epochs):
        shuffled = list(episodes)
        order.shuffle(shuffled)
        for start in range(0, len(shuffled), config.batch_size):
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cpu_supports_bf16()):
                loss = supervised_loss(model, shuffled[start : start + config.batch_size], pad_id)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(parameters, 1.0)
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            losses.append(loss.item())
    return losses


def max_difference(a: Any, b: Any) -> float:
    return max((x - y).abs().max().item() for x, y in zip(a.parameters(), b.parameters(), strict=True))


def test_the_trainer_repeats_the_hand_written_loop_on_played_demonstrations(played, tmp_path) -> None:
    model, tokenizer, episodes = played
    assert all(e.calls and e.calls[0].ok for e in episodes), "every demonstration searched the real server"
    assert all(0 in e.completion_mask for e in episodes), "observation tokens are there, and not scored"
    config = WarmStartConfig(demonstrations=["unused"], epochs=3, batch_size=2, learning_rate=3e-3, seed=4)
    reference = copy.deepcopy(model)
    losses = hand_written_loop(reference, episodes, config, tokenizer.pad_token_id)

    trained = copy.deepcopy(model)
    metrics = tmp_path / "metrics.jsonl"
    stats = train_on_demonstrations(
        trained,
        tokenizer,
        episodes,
        config,
        output_dir=tmp_path / "warm_start",
        callbacks=[MetricsFile(metrics)],
    )
    batches = math.ceil(len(episodes) / config.batch_size)  # 3 a epoch, the last one of a single episode
    assert stats["warm_start/batches"] == len(losses) == config.epochs * batches
    # The same batches and the same steps, to the bit: the same numbers for the same seed as before.
    assert stats["warm_start/first_loss"] == losses[0]
    assert stats["warm_start/last_loss"] == losses[-1]  # the last half-epoch: 1 batch
    assert stats["warm_start/last_loss"] < 0.7 * stats["warm_start/first_loss"], "the loss came down"
    assert max_difference(trained, reference) == 0.0
    assert max_difference(trained, model) > 1e-3, "and the weights did move"
    # Each batch reached the run's MetricsFile, at step 0 (before GRPO's step 1), with its loss.
    lines = [json.loads(line) for line in metrics.read_text().splitlines()]
    assert [line["step"] for line in lines] == [0] * len(losses)
    assert [line["warm_start/batch"] for line in lines] == list(range(1, len(losses) + 1))
    assert [line["warm_start/loss"] for line in lines] == losses
    assert all(line["warm_start/grad_norm"] > 0 for line in lines)
    saved = json.loads((tmp_path / "warm_start" / STATS).read_text())
    assert saved == pytest.approx(stats)


def test_a_stopped_warm_start_resumes_to_the_weights_of_an_uninterrupted_one(tmp_path) -> None:
    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    episodes = demonstrations(tokenizer)
    whole = copy.deepcopy(model)
    rng_before = torch.get_rng_state()
    expected = train_on_demonstrations(whole, tokenizer, episodes, CONFIG, output_dir=tmp_path / "whole")
    assert torch.equal(torch.get_rng_state(), rng_before), "the global generator is left as it was"
    assert "forward" not in vars(whole), "accelerate's autocast wrapper does not stay on the model"

    stopped = copy.deepcopy(model)
    folder = tmp_path / "stopped"
    assert completed_batches(folder) == 0
    train_on_demonstrations(
        stopped, tokenizer, episodes, CONFIG, output_dir=folder, save_steps=2, max_steps=3
    )
    assert sorted(p.name for p in folder.iterdir() if p.name.startswith("checkpoint")) == ["checkpoint-3"]
    assert not (folder / STATS).exists() and not (folder / FINAL).exists()
    assert completed_batches(folder) == 3
    assert max_difference(stopped, whole) > 1e-3, "stopped halfway, it is not the finished model"

    resumed = copy.deepcopy(model)  # a fresh process: the weights as loaded, before any warm start
    played = {"warm_start/kept": 5.0}  # the caller's numbers, kept with the loss numbers
    stats = train_on_demonstrations(
        resumed, tokenizer, episodes, CONFIG, output_dir=folder, resume=True, stats=played
    )
    assert max_difference(resumed, whole) < 1e-6
    assert stats["warm_start/kept"] == 5.0 and completed_batches(folder) == 6
    assert stats["warm_start/batches"] == expected["warm_start/batches"] == 6
    assert stats["warm_start/first_loss"] == pytest.approx(expected["warm_start/first_loss"], rel=1e-6)
    assert stats["warm_start/last_loss"] == pytest.approx(expected["warm_start/last_loss"], rel=1e-5)
    assert not list(folder.glob("checkpoint-*")), "a finished warm start keeps no checkpoint"

    # Finished: not run again; its weights are loaded and its stats returned as they were saved.
    again = copy.deepcopy(model)
    assert (
        train_on_demonstrations(again, tokenizer, episodes, CONFIG, output_dir=folder, resume=True) == stats
    )
    assert max_difference(again, whole) < 1e-6


def test_two_processes_end_with_identical_weights_those_of_one_process(tmp_path) -> None:
    outdir = tmp_path / "launch"
    outdir.mkdir()
    env = {
        **os.environ,
        "HF_HOME": str(tmp_path / "hf_home"),  # no accelerate config of the user's leaks in
        "HF_HUB_OFFLINE": "1",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
    }
    command = two_process_launch(ROOT / "tests" / "scripts" / "sft_two_processes.py", str(outdir))
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        output = process.communicate(timeout=TWO_PROCESS_TIMEOUT_S)[0].decode(errors="replace")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        pytest.fail(f"accelerate launch did not finish in {TWO_PROCESS_TIMEOUT_S} s")
    assert process.returncode == 0, output[-4000:]
    ranks = [json.loads((outdir / f"rank{rank}.json").read_text()) for rank in (0, 1)]
    for rank in ranks:
        assert (
            rank["world_size"] == 2 and rank["backend"] == "gloo" and "MULTI_CPU" in rank["distributed_type"]
        )
        assert rank["stats"]["warm_start/batches"] == 6
    assert ranks[0]["final"] == ranks[1]["final"], "the gradients were synced"
    assert ranks[0]["final"] != ranks[0]["initial"], "and the weights moved"

    # Each process trained on its share of every batch: together, the batch one process trains on.
    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    alone = copy.deepcopy(model)
    stats = train_on_demonstrations(
        alone, tokenizer, demonstrations(tokenizer), CONFIG, output_dir=tmp_path / "alone", bf16=False
    )
    from safetensors.torch import load_model

    load_model(model, str(outdir / "warm_start" / FINAL / "model.safetensors"))
    assert weights_hash(model) == ranks[0]["final"], "final/ holds the trained weights"
    assert max_difference(model, alone) < 1e-5
    assert ranks[0]["stats"]["warm_start/first_loss"] == pytest.approx(
        stats["warm_start/first_loss"], rel=1e-5
    )
    assert ranks[0]["stats"]["warm_start/last_loss"] == pytest.approx(stats["warm_start/last_loss"], rel=1e-4)
