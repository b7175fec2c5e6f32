"""Dynamic sampling with episode scheduling: a group is judged once its episodes ended and its replacement
starts while the other groups still run; by turn it refills in whole rounds. A real tiny model, a real stdio
search server (``bench/latency_server.py``) whose first call hangs until the pool's timeout."""

from __future__ import annotations

import asyncio
import copy
import json
import sqlite3
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import SQLITE_SERVER
from test_scheduling import latency_servers
from tiny import ROOT, TEST_QUESTIONS, searching_trainer_kwargs, tiny_grpo_config

from mcp_rl.config.sections import GRPOStepConfig
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.generation.base import Generation, SamplingParams, TransformersGenerator
from mcp_rl.tools import BlockingToolPool, FailureKind
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.trainer import MCPGRPOTrainer

TIMEOUT_S = 3.0
LATENCY_SERVER = str(ROOT / "bench" / "latency_server.py")


def timed_out(trajectory: Trajectory) -> bool:
    return any(call.failure == str(FailureKind.TIMEOUT) for call in trajectory.calls)


class TimedGenerator(TransformersGenerator):
    """The tiny setup's generator, noting when each call came and what it generated for."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        super().__init__(model, tokenizer)
        self.calls: list[tuple[float, list[list[int]]]] = []

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        self.calls.append((time.perf_counter(), [list(p) for p in prompts]))
        return super().generate(prompts, sampling)

    def first_call(self, prefix: Sequence[int]) -> float:
        """When a sequence starting with ``prefix`` was first generated for."""
        return next(t for t, prompts in self.calls if any(p[: len(prefix)] == list(prefix) for p in prompts))


class SpreadWhereACallTimedOut:
    """0 for an episode whose call timed out, 1 for the others: only the group holding the hung episode
    has a reward spread. Notes every episode it scores."""

    __name__ = "spread_where_a_call_timed_out"

    def __init__(self) -> None:
        self.scored: list[Trajectory] = []

    def __call__(self, trajectories: Sequence[Trajectory], **_: Any) -> list[float]:
        self.scored += trajectories
        return [0.0 if timed_out(t) else 1.0 for t in trajectories]


def trained_one_step(
    policy: Any,
    tokenizer: Any,
    pool: Any,
    tmp_path: Path,
    scheduling: str,
    reward: Any,
    generator: Any = None,
) -> dict[str, float]:
    """One dynamic-sampling step of ``policy`` on a batch of two groups (the first two questions), at most
    one more group; its log line."""
    from datasets import Dataset

    parts = {"generator": generator} if generator is not None else {}
    kwargs = searching_trainer_kwargs(policy, tokenizer, pool, **parts)
    kwargs["environment"].engine.config.scheduling = scheduling
    trainer = MCPGRPOTrainer(
        args=tiny_grpo_config(
            tmp_path / "out", max_steps=1, per_device_train_batch_size=8, shuffle_dataset=False
        ),
        train_dataset=Dataset.from_list(
            [{"question": q, "golden_answers": ["Draskel"]} for q in TEST_QUESTIONS]
        ),
        grpo=GRPOStepConfig(dynamic_sampling=True, max_extra_rollouts=4),
        trace_path=tmp_path / "traces.jsonl",
        **{**kwargs, "reward_funcs": [reward]},
    )
    trainer.train()
    (entry,) = [e for e in trainer.state.log_history if "loss" in e]
    return entry


@pytest.mark.parametrize("scheduling", ["episode", "turn"])
def test_a_replacement_group_starts_while_the_slow_group_still_runs(
    searching_tiny_model, tmp_path, scheduling
) -> None:
    model, tokenizer = searching_tiny_model
    reward = SpreadWhereACallTimedOut()
    options = ("--median-ms", "5", "--p99-ratio", "2", "--hang", "0", "--hang-calls", "0")
    with BlockingToolPool(latency_servers(*options, timeout_s=TIMEOUT_S)) as pool:
        policy = copy.deepcopy(model)
        generator = TimedGenerator(policy, tokenizer)
        entry = trained_one_step(policy, tokenizer, pool, tmp_path, scheduling, reward, generator)
    # Two groups; the one without the hung call has no spread: one replacement (the cap), also without.
    assert entry["dynamic_sampling/extra_rollouts"] == 4.0
    assert entry["dynamic_sampling/zero_std_share"] == pytest.approx(2 / 3)
    assert entry["dynamic_sampling/groups_kept"] == 1.0 and entry["grpo/informative_groups"] == 1.0
    assert len(reward.scored) == 12, "each episode scored once: TRL's call reuses the scores"
    hung = [t for t in reward.scored if timed_out(t)]
    assert len(hung) == 1
    traces = [json.loads(line) for line in (tmp_path / "traces.jsonl").read_text().splitlines()]
    batch_questions = {t["question"] for t in traces}
    # The kept group, then the first dropped one: the batch's own two questions, four episodes each.
    assert len(traces) == 8 and batch_questions == set(TEST_QUESTIONS[:2])
    assert sum(t["rewards"]["spread_where_a_call_timed_out"] == 0.0 for t in traces) == 1
    (fresh,) = set(TEST_QUESTIONS) - batch_questions
    replacement = [t for t in reward.scored if fresh in t.prompt_messages[-1]["content"]]
    assert len(replacement) == 4
    # The hung episode's second turn is generated once its call timed out; the replacement's first turn:
    first = hung[0].turns[0]
    after_timeout = (
        hung[0].prompt_ids + hung[0].completion_ids[: first.generated_tokens + first.observation_tokens]
    )
    replaced_at, resumed_at = (
        generator.first_call(replacement[0].prompt_ids),
        generator.first_call(after_timeout),
    )
    if scheduling == "episode":
        assert replaced_at < resumed_at - TIMEOUT_S / 2, "the replacement starts while the hung group waits"
    else:
        assert replaced_at > resumed_at, "by turn, the replacement round starts after the whole batch"


class AsyncSpreadCheckingEachEpisodesServer(SpreadWhereACallTimedOut):
    """The same scores, async, after querying each episode's own per-episode server (as a state check
    does): the instance must still be up when its episode is scored, in either refill."""

    __name__ = "async_spread_checking_servers"

    def __init__(self) -> None:
        super().__init__()
        self.folders: list[Path] = []

    async def __call__(self, trajectories: Sequence[Trajectory], **_: Any) -> list[float]:
        for trajectory in trajectories:
            answer = await asyncio.to_thread(
                trajectory.tools.call, "sql", {"query": "SELECT name FROM members"}
            )
            assert answer.ok, f"the episode's own server was gone before it was scored: {answer.text}"
            self.folders.append(trajectory.tools.dir)
        return SpreadWhereACallTimedOut.__call__(self, trajectories)


@pytest.mark.parametrize("scheduling", ["episode", "turn"])
def test_per_episode_servers_live_until_scored_and_all_stop(
    searching_tiny_model, tmp_path, scheduling
) -> None:
    model, tokenizer = searching_tiny_model
    seed = tmp_path / "seed.db"
    with sqlite3.connect(seed) as db:
        db.execute("CREATE TABLE members (name TEXT)")
    options = ("--median-ms", "5", "--hang", "0", "--hang-calls", "0")
    search = {"command": sys.executable, "args": [LATENCY_SERVER, *options], "timeout": TIMEOUT_S}
    db = {
        "command": sys.executable,
        "args": [SQLITE_SERVER, "--db", "${episode.dir}/members.db"],
        "cwd": str(ROOT),
        "scope": "episode",
        "setup": [{"copy": str(seed), "to": "${episode.dir}/members.db"}],
    }
    servers = parse_mcp_servers({"search": search, "db": db})
    reward = AsyncSpreadCheckingEachEpisodesServer()
    with BlockingToolPool(servers) as pool:
        entry = trained_one_step(copy.deepcopy(model), tokenizer, pool, tmp_path, scheduling, reward)
        assert (
            entry["dynamic_sampling/extra_rollouts"] == 4.0 and entry["dynamic_sampling/groups_kept"] == 1.0
        )
        assert len(reward.scored) == 12 and len(set(reward.folders)) == 12
        # The surplus group stopped with the batch; the batch's own once TRL scored them.
        assert not any(folder.exists() for folder in reward.folders)
