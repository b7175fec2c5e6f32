"""A short real GRPO run: MCPGRPOTrainer with a tiny model against a real stdio MCP server."""

from __future__ import annotations

import copy
import math
import os

import torch
from tiny import child_pids, searching_trainer_kwargs, tiny_dataset, tiny_grpo_config

from mcp_rl.pool import BlockingToolPool
from mcp_rl.servers import parse_mcp_servers
from mcp_rl.trainer import MCPGRPOTrainer


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as stat:
        return stat.read().split()[2] != "Z"


def test_two_grpo_steps_with_real_tool_calls(searching_tiny_model, search_entry, tmp_path):
    model, tokenizer = searching_tiny_model
    model = copy.deepcopy(model)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    dataset = tiny_dataset(2)
    children_before = child_pids()
    pool = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()
    server_pids = child_pids() - children_before
    assert server_pids, "the stdio search server should be a child process"
    trainer = MCPGRPOTrainer(
        model=model,
        args=tiny_grpo_config(tmp_path / "out"),
        train_dataset=dataset,
        processing_class=tokenizer,
        pool=pool,
        **searching_trainer_kwargs(),
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

    # The loss scores only the model's own tokens: observation positions skip the output layer, and every
    # other position gets exactly TRL's log-prob and entropy.
    ids = torch.randint(3, tokenizer.vocab_size, (2, 12))
    attention = torch.ones_like(ids)
    attention[1, -2:] = 0  # right padding
    tool_mask = torch.ones(2, 8, dtype=torch.long)
    tool_mask[:, 2:5] = 0
    trl_logps, trl_entropy, _ = trainer._get_per_token_logps_and_entropies(
        model, ids, attention, 8, compute_entropy=True
    )
    trainer._scored_mask = tool_mask
    logps, entropy, _ = trainer._get_per_token_logps_and_entropies(
        model, ids, attention, 8, batch_size=1, compute_entropy=True
    )
    trainer._scored_mask = None
    kept = (tool_mask == 1) & (attention[:, -8:] == 1)
    torch.testing.assert_close(logps[kept], trl_logps[kept])
    torch.testing.assert_close(entropy[kept], trl_entropy[kept])
    assert (logps[tool_mask == 0] == 0).all() and (trl_logps[tool_mask == 0] != 0).all()
