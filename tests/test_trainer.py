"""A short real GRPO run: MCPGRPOTrainer with a tiny model against a real stdio MCP server."""

from __future__ import annotations

import copy
import math
import os

import torch
from conftest import TEST_QUESTIONS, tiny_prompt_config
from datasets import Dataset
from trl import GRPOConfig

from mcp_rl.configs import RolloutConfig
from mcp_rl.pool import BlockingToolPool
from mcp_rl.rewards import exact_match, format_reward
from mcp_rl.servers import parse_mcp_servers
from mcp_rl.trainer import MCPGRPOTrainer


def grpo_args(output_dir, **overrides) -> GRPOConfig:
    settings = {
        "output_dir": str(output_dir),
        "max_steps": 2,
        "per_device_train_batch_size": 4,
        "num_generations": 4,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,
        "gradient_checkpointing": False,
        "save_strategy": "no",
        "seed": 0,
        **overrides,
    }
    return GRPOConfig(**settings)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def child_pids() -> set[int]:
    """Processes whose parent is this one (the pool spawns its servers from a background thread)."""
    children = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                children.add(int(entry))
    return children


def test_two_grpo_steps_with_real_tool_calls(searching_tiny_model, search_entry, tmp_path):
    model, tokenizer = searching_tiny_model
    model = copy.deepcopy(model)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    dataset = Dataset.from_list(
        [{"question": q, "golden_answers": ["Draskel"]} for q in TEST_QUESTIONS for _ in range(2)]
    )
    children_before = child_pids()
    pool = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()
    server_pids = child_pids() - children_before
    assert server_pids, "the stdio search server should be a child process"
    trainer = MCPGRPOTrainer(
        model=model,
        reward_funcs=[exact_match, format_reward],
        args=grpo_args(tmp_path / "out"),
        train_dataset=dataset,
        processing_class=tokenizer,
        pool=pool,
        parser="search_r1",
        prompt=tiny_prompt_config(),
        rollout=RolloutConfig(max_turns=3, max_new_tokens=16, temperature=1.0),
    )
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2 and all(math.isfinite(entry["loss"]) for entry in logs)
    assert any(entry["rollout/calls_per_trajectory"] > 0 for entry in logs), "no tool call happened"
    assert any(entry.get("tools/search/calls", 0) > 0 for entry in logs)
    trajectories = trainer.last_trajectories
    assert any(0 in t.completion_mask and 1 in t.completion_mask for t in trajectories), "mask is trivial"
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "no parameter changed"
    assert not any(pid_alive(pid) for pid in server_pids), "the tool server outlived training"
