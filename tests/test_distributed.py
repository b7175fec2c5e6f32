"""Multi-process GRPO: ``accelerate launch`` with two CPU processes (gloo), each with its own tool pool.

The launch uses ``--multi_gpu`` (accelerate's torchrun launcher); the script asks for ``use_cpu=True``, so
the two processes form a gloo group on the CPU. ``--cpu --num_processes 2`` is no alternative: accelerate
then starts a single process (rank 0 of 1), since it spreads CPU processes only through mpirun.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import ROOT, two_process_launch

SCRIPT = ROOT / "tests" / "scripts" / "ddp_train.py"
TIMEOUT_S = 240
STEPS = 2


@dataclass
class Launch:
    outdir: Path
    returncode: int
    output: str
    elapsed_s: float
    ranks: list[dict[str, Any]]


def process_alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def processes_mentioning(text: str) -> list[int]:
    """Live processes whose command line contains ``text`` (every server started for a run names its dir)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                    if text.encode() in cmdline.read() and process_alive(int(entry)):
                        found.append(int(entry))
            except OSError:
                continue
    return found


@pytest.fixture(scope="module")
def launch(tmp_path_factory: pytest.TempPathFactory) -> Launch:
    outdir = tmp_path_factory.mktemp("ddp")
    env = {
        **os.environ,
        # Nothing may be fetched, and no accelerate config of the user's (say, DeepSpeed) may leak in.
        "HF_HOME": str(outdir / "hf_home"),
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "OMP_NUM_THREADS": "1",
        "TOKENIZERS_PARALLELISM": "false",
        "PYTHONUNBUFFERED": "1",
    }
    command = two_process_launch(SCRIPT, str(outdir), "--steps", str(STEPS))
    started = time.monotonic()
    # Its own process group, so that a hung run can be stopped whole (launcher, ranks, tool servers).
    process = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        pytest.fail(f"accelerate launch did not finish in {TIMEOUT_S} s:\n{output.decode()[-4000:]}")
    ranks = [
        json.loads(path.read_text())
        for path in sorted(outdir.glob("rank*.json"))
        if path.name[4:-5].isdigit()
    ]
    return Launch(
        outdir, process.returncode, output.decode(errors="replace"), time.monotonic() - started, ranks
    )


def test_both_ranks_train_with_tool_calls(launch: Launch):
    assert launch.returncode == 0, launch.output[-4000:]
    assert [r["rank"] for r in launch.ranks] == [0, 1], launch.output[-4000:]
    for rank in launch.ranks:
        assert (
            rank["world_size"] == 2 and rank["backend"] == "gloo" and "MULTI_CPU" in rank["distributed_type"]
        )
        assert rank["steps"] == STEPS
        assert len(rank["local_losses"]) == STEPS and rank["losses_finite"]
        assert rank["trajectories"] == [4] * STEPS, "each process rolls out its own 4 completions a step"
        assert sum(rank["calls"]) > 0, f"rank {rank['rank']} made no tool call"
        assert [c["tools/search/calls"] for c in rank["pool_calls"]] == rank["calls"], "pool and engine agree"
    logs = [entry for entry in launch.ranks[0]["log_history"] if "loss" in entry]
    assert len(logs) == STEPS and all(math.isfinite(entry["loss"]) for entry in logs)


def test_logged_rollout_metrics_cover_both_processes(launch: Launch):
    logs = [entry for entry in launch.ranks[0]["log_history"] if "loss" in entry]
    assert len(logs) == STEPS
    tokens_seen = 0.0
    for step, entry in enumerate(logs):
        calls = [r["pool_calls"][step]["tools/search/calls"] for r in launch.ranks]
        assert entry["tools/search/calls"] == sum(calls), f"step {step + 1}: per-rank calls {calls}"
        assert entry["tools/calls"] == sum(calls)
        trajectories = sum(r["trajectories"][step] for r in launch.ranks)
        made = sum(r["calls"][step] for r in launch.ranks)
        assert entry["rollout/calls_per_trajectory"] == pytest.approx(made / trajectories)
        tokens_seen += sum(r["model_tokens"][step] for r in launch.ranks)
        assert entry["num_tokens"] == tokens_seen, "num_tokens counts both processes' prompts and completions"


def test_checkpoint_and_final_model_written_once(launch: Launch):
    trainer_dir = launch.outdir / "trainer"
    checkpoints = sorted(p.name for p in trainer_dir.glob("checkpoint-*"))
    assert checkpoints == [f"checkpoint-{STEPS}"]
    checkpoint = trainer_dir / checkpoints[0]
    assert (checkpoint / "model.safetensors").is_file() and (checkpoint / "trainer_state.json").is_file()
    # Each process saves its own RNG state (resuming needs both); the weights come from rank 0 alone.
    assert sorted(p.name for p in checkpoint.glob("rng_state_*.pth")) == [
        "rng_state_0.pth",
        "rng_state_1.pth",
    ]
    assert (launch.outdir / "final" / "model.safetensors").is_file()
    rank0, rank1 = launch.ranks
    assert rank0["weight_writes"] == [str(checkpoint), str(launch.outdir / "final")]
    assert rank1["weight_writes"] == [], "only the main process writes weights"
    assert [s["should_save"] for s in rank0["saves"]] == [True, True]
    assert not any(s["should_save"] for s in rank1["saves"])


def test_no_process_survives(launch: Launch):
    assert launch.returncode == 0, launch.output[-4000:]
    servers = [pid for rank in launch.ranks for pid in rank["server_pids"]]
    assert len(servers) == 2, "each rank starts its own search server"
    leftovers = [pid for pid in [*servers, *(r["pid"] for r in launch.ranks)] if process_alive(pid)]
    assert not leftovers, f"processes outlived the launch: {leftovers}"
    assert not processes_mentioning(str(launch.outdir))


@pytest.mark.parametrize("name", ["ddp", "deepspeed_zero2", "deepspeed_zero3", "fsdp"])
def test_accelerate_configs_load(name: str):
    """The GPU configs in configs/accelerate parse as accelerate reads them (they are not run here)."""
    from accelerate.commands.config.config_args import load_config_from_file

    config = load_config_from_file(str(ROOT / "configs" / "accelerate" / f"{name}.yaml"))
    assert config.num_processes == 8 and config.num_machines == 1 and config.mixed_precision == "bf16"
    assert not config.use_cpu
    expected = {
        "ddp": "MULTI_GPU",
        "deepspeed_zero2": "DEEPSPEED",
        "deepspeed_zero3": "DEEPSPEED",
        "fsdp": "FSDP",
    }
    assert config.distributed_type.value == expected[name]
