"""A short real GRPO run: MCPGRPOTrainer with a tiny model against a real stdio MCP server."""

from __future__ import annotations

import copy
import json
import math
import os

import pytest
import torch
from tiny import child_pids, searching_trainer, searching_trainer_kwargs, tiny_dataset, tiny_grpo_config

from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.trainer import MCPGRPOTrainer


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
        args=tiny_grpo_config(tmp_path / "out", reward_weights=[2.0, 0.5]),
        train_dataset=dataset,
        trace_path=tmp_path / "traces.jsonl",
        **searching_trainer_kwargs(model, tokenizer, pool),
    )
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2 and all(math.isfinite(entry["loss"]) for entry in logs)
    assert any(entry["rollout/calls_per_trajectory"] > 0 for entry in logs), "no tool call happened"
    assert any(entry.get("tools/search/calls", 0) > 0 for entry in logs)
    trajectories = trainer.environment.last_batch.trajectories
    assert any(0 in t.completion_mask and 1 in t.completion_mask for t in trajectories), "mask is trivial"
    # The traces hold what the rewards received: every episode of both steps, scored by both functions.
    traces = [json.loads(line) for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
    # Episodes carry the step they train, the step of the metrics line that logs their rewards.
    assert [t["step"] for t in traces] == [1] * 4 + [2] * 4
    assert all(set(t["rewards"]) == {"exact_match", "format_reward"} for t in traces)
    # The total is weighted as the loss weighs it (reward_weights 2 and 0.5).
    for trace in traces:
        scores = trace["rewards"]
        assert trace["reward"] == pytest.approx(2.0 * scores["exact_match"] + 0.5 * scores["format_reward"])
    assert all(t["row"]["golden_answers"] == ["Draskel"] for t in traces)
    changed = [n for n, p in model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "no parameter changed"
    assert not any(pid_alive(pid) for pid in server_pids), "the tool server outlived training"


def test_a_steps_tool_counters_include_its_verification_calls(searching_tiny_model, search_entry, tmp_path):
    """Rewards that call the tools are counted in the same step as the rollout's calls (the counters are
    read and reset only once every reward function has scored the batch)."""
    model, tokenizer = searching_tiny_model
    pool = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()

    def verified(trajectories, **_):
        results = pool.call_many([("search", {"query": "fox"})] * len(trajectories))
        return [float(result.ok) for result in results]

    kwargs = searching_trainer_kwargs(copy.deepcopy(model), tokenizer, pool)
    trainer = MCPGRPOTrainer(
        args=tiny_grpo_config(tmp_path / "out"),
        train_dataset=tiny_dataset(2),
        **{**kwargs, "reward_funcs": [*kwargs["reward_funcs"], verified]},
    )
    trainer.train()
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert len(logs) == 2
    for entry in logs:
        assert entry["rewards/verified/mean"] == 1.0
        rollout_calls = round(entry["rollout/calls_per_trajectory"] * 4)
        assert entry["tools/search/calls"] == rollout_calls + 4, "4 verification calls a step, same step"


def test_the_loss_skips_columns_that_are_padding_in_every_row_and_is_unchanged(
    searching_tiny_model, search_entry, tmp_path
):
    from trl import GRPOTrainer

    from mcp_rl.training.lean_forward import trim_padding

    model, tokenizer = searching_tiny_model
    with searching_trainer(model, tokenizer, search_entry, tmp_path / "out") as trainer:
        generator = torch.Generator().manual_seed(0)
        vocab = model.config.vocab_size
        # Prompts left-padded (two columns are padding in both rows), completions right-padded (three are).
        prompt_mask = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
        completion_mask = torch.tensor([[1, 1, 1, 1, 1, 0, 0, 0], [1, 1, 1, 0, 0, 0, 0, 0]])
        tool_mask = torch.tensor([[1, 1, 0, 0, 1, 1, 1, 1], [1, 0, 1, 1, 1, 1, 1, 1]])
        inputs = {
            "prompt_ids": torch.randint(3, vocab, (2, 6), generator=generator) * prompt_mask,
            "prompt_mask": prompt_mask,
            "completion_ids": torch.randint(3, vocab, (2, 8), generator=generator) * completion_mask,
            "completion_mask": completion_mask,
            "tool_mask": tool_mask,
            "advantages": torch.tensor([1.0, -0.5]),
            "num_items_in_batch": (completion_mask * tool_mask).sum(),
        }
        trimmed = trim_padding(inputs)
        assert trimmed["prompt_ids"].shape == (2, 4) and trimmed["completion_ids"].shape == (2, 5)
        assert trimmed["tool_mask"].shape == (2, 5)
        assert torch.equal(trimmed["advantages"], inputs["advantages"])
        ours = trainer.compute_loss(model, inputs)
        trls = GRPOTrainer.compute_loss(trainer, model, inputs)
        assert torch.isfinite(ours) and ours.item() != 0.0
        assert ours.item() == pytest.approx(trls.item(), rel=1e-4, abs=1e-6)
        # Nothing to trim, or a per-token tensor it does not know: the inputs go to TRL as they are.
        assert trim_padding(trimmed) is trimmed
        unknown = {**inputs, "token_type_ids": torch.zeros(2, 14, dtype=torch.long)}
        assert trim_padding(unknown) is unknown
