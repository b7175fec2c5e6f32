"""Per-episode servers when things go wrong: an instance that fails to start fails only its episode (scored
as a failure, nothing of it left running); SIGTERM cleans up as Ctrl-C does; the folders of a run that died
are swept at the next start while a live run's are kept; ``{column}`` in ``setup`` gives each row its seed."""

from __future__ import annotations

import copy
import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ROOT
from datasets import Dataset
from test_distributed import process_alive
from tiny import child_pids, searching_environment, searching_trainer_kwargs, tiny_grpo_config

from mcp_rl.rewards import exact_match
from mcp_rl.tools import BlockingToolPool, FailureKind
from mcp_rl.tools.folders import FOLDER_PREFIX, owner_mark, sweep_orphans
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.training.trainer import MCPGRPOTrainer

SEEDED_SEARCH = str(ROOT / "tests" / "servers" / "seeded_search.py")
HOLD_EPISODES = str(ROOT / "tests" / "scripts" / "hold_episodes.py")
FOX = "Doc 1(Title: Fox) The fox lives in Draskel."


def seeded_entry(seed: str, *extra_args: str, **extra: object) -> dict[str, object]:
    return {
        "command": sys.executable,
        "args": [SEEDED_SEARCH, "--dir", "${episode.dir}", *extra_args],
        "cwd": str(ROOT),
        "scope": "episode",
        "setup": [{"copy": seed, "to": "${episode.dir}/seed.txt"}],
        **extra,
    }


def crashing_entry(tmp_path: Path, crash_at: int) -> dict[str, object]:
    """Instances that take start numbers; the one numbered ``crash_at`` exits before its handshake."""
    seed, starts = tmp_path / "seed.txt", tmp_path / "starts"
    seed.write_text(FOX)
    starts.mkdir()
    return seeded_entry(str(seed), "--starts", str(starts), "--crash-at", str(crash_at), warm=0)


def test_an_instance_that_fails_to_start_fails_only_its_episode(tmp_path):
    children_before = child_pids()
    # Start 0 is the instance that lists the tools (the first episode gets it); start 3 crashes.
    with BlockingToolPool(parse_mcp_servers({"db": crashing_entry(tmp_path, crash_at=3)})) as pool:
        episodes = pool.open_episodes(6)
        failed = [e for e in episodes if e.error is not None]
        assert len(failed) == 1, [e.error for e in episodes]
        [broken] = failed
        assert "failed to start" in broken.error
        assert broken.dir is not None and not broken.dir.exists(), "its folder is removed at once"
        lost = broken.call("search", {"query": "fox"})
        assert lost.failure is FailureKind.UNAVAILABLE and "failed to start" in lost.text
        healthy = [e for e in episodes if e.error is None]
        for episode in healthy:
            found = episode.call("search", {"query": "fox"})
            assert found.ok and found.text == FOX
        assert len({int(e.call("pid").text) for e in healthy}) == 5
        assert pool.metrics()["episodes/failed_starts"] == 1
        pool.close_episodes(episodes)
        again = pool.open_episodes(2)  # the pool goes on serving episodes
        assert all(e.error is None and e.call("search", {"query": "x"}).ok for e in again)
        pool.close_episodes(again)
    assert not any(e.dir is not None and e.dir.exists() for e in [*episodes, *again])
    assert child_pids() == children_before, "no instance outlives the pool"


def test_a_rollout_scores_the_episode_that_failed_to_start_as_a_failure(tmp_path, searching_tiny_model):
    model, tokenizer = searching_tiny_model
    rows = [{"question": "Where does the fox live?", "golden_answers": ["Draskel"]}] * 4
    with BlockingToolPool(parse_mcp_servers({"db": crashing_entry(tmp_path, crash_at=2)})) as pool:
        pipeline = searching_environment(model, tokenizer, pool)
        trajectories = pipeline.rollout_rows(rows, greedy=True)
        assert len(trajectories) == 4
        failed = [t for t in trajectories if t.finish_reason == "episode_failed"]
        assert len(failed) == 1, [t.finish_reason for t in trajectories]
        [broken] = failed
        assert broken.answer is None and "failed to start" in broken.info["episode_error"]
        assert broken.calls and all(c.failure == FailureKind.UNAVAILABLE for c in broken.calls)
        healthy = [t for t in trajectories if t is not broken]
        assert all(c.ok and c.observation == FOX for t in healthy for c in t.calls)
        scores = exact_match(trajectories=trajectories, golden_answers=[r["golden_answers"] for r in rows])
        # The healthy episodes answer right, so a zero is the failure's own, not the model's.
        assert [s for t, s in zip(trajectories, scores, strict=True) if t is not broken] == [1.0] * 3
        assert scores[trajectories.index(broken)] == 0.0
        folders = [t.tools.dir for t in trajectories]
        pipeline.release(trajectories)
    assert not any(f is not None and f.exists() for f in folders)


def test_setup_column_gives_each_row_its_own_seed(tmp_path, searching_tiny_model):
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name in ("fox", "owl", "elk"):
        (seeds / f"{name}.txt").write_text(f"The {name} lives in {name.title()}ville.")
    entry = seeded_entry(str(seeds / "{animal}.txt"), warm=4)
    rows = [{"question": "Where does the fox live?", "animal": a} for a in ("fox", "owl", "elk", "owl")]
    with BlockingToolPool(parse_mcp_servers({"db": entry})) as pool:
        episodes = pool.open_episodes(4, rows)
        seen = [e.call("search", {"query": "where"}).text for e in episodes]
        assert seen == [f"The {r['animal']} lives in {r['animal'].title()}ville." for r in rows]
        pool.close_episodes(episodes)
        # A row without the column fails its own episode, with the column named; the others start.
        missing, fine = pool.open_episodes(2, [{"question": "q"}, rows[0]])
        assert missing.error is not None and "{animal}" in missing.error and "question" in missing.error
        assert fine.error is None and "fox" in fine.call("search", {"query": "q"}).text
        pool.close_episodes([missing, fine])
        # The engine hands each trajectory's row to its episode.
        model, tokenizer = searching_tiny_model
        pipeline = searching_environment(model, tokenizer, pool)
        trajectories = pipeline.rollout_rows(rows, greedy=True)
        first_results = [t.calls[0].observation if t.calls else None for t in trajectories]
        assert first_results == seen
        pipeline.release(trajectories)


def test_sigterm_removes_the_episode_folders_and_stops_their_servers(tmp_path):
    seed = tmp_path / "seed.txt"
    seed.write_text(FOX)
    servers = tmp_path / "servers.json"
    servers.write_text(json.dumps({"db": seeded_entry(str(seed), warm=2)}))
    scratch = tmp_path / "scratch"  # its own temporary folder: other runs' folders are not ours to judge
    scratch.mkdir()
    process = subprocess.Popen(
        [sys.executable, HOLD_EPISODES, str(servers), "3"],
        cwd=ROOT,
        env={**os.environ, "TMPDIR": str(scratch)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        held = json.loads(process.stdout.readline())
        folders = [Path(f) for f in held["folders"]]
        assert len(folders) == 3 and all(f.is_dir() and f.parent == scratch for f in folders)
        assert all(process_alive(pid) for pid in held["pids"])
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=120) == 128 + signal.SIGTERM
    finally:
        if process.poll() is None:
            process.kill()
    assert not list(scratch.glob(f"{FOLDER_PREFIX}*")), "every episode folder, spares' included, is gone"
    assert not any(process_alive(pid) for pid in held["pids"])


def test_orphan_folders_of_dead_runs_are_swept_and_live_ones_kept(tmp_path, monkeypatch):
    finished = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True)
    dead_pid = int(finished.stdout)
    live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        orphan = tmp_path / f"{FOLDER_PREFIX}{dead_pid}-1-abc"
        reused_pid = tmp_path / f"{FOLDER_PREFIX}{live.pid}-1-abc"  # a live pid, but not the owner's start
        running = tmp_path / f"{FOLDER_PREFIX}{owner_mark(live.pid)}-abc"
        unmarked = tmp_path / f"{FOLDER_PREFIX}abc123"  # an older run's: its owner cannot be told
        for folder in (orphan, reused_pid, running, unmarked):
            (folder / "sub").mkdir(parents=True)
            (folder / "sub" / "state.db").write_text("x")
        assert sorted(sweep_orphans(tmp_path)) == sorted([orphan, reused_pid])
        assert running.is_dir() and unmarked.is_dir()

        # A pool with per-episode servers sweeps when it starts, and marks its own folders.
        (orphan / "sub").mkdir(parents=True)
        seed = tmp_path / "seed.txt"
        seed.write_text(FOX)
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
        with BlockingToolPool(parse_mcp_servers({"db": seeded_entry(str(seed), warm=0)})) as pool:
            assert not orphan.exists() and running.is_dir()
            [episode] = pool.open_episodes(1)
            assert episode.dir is not None and episode.dir.name.startswith(f"{FOLDER_PREFIX}{owner_mark()}-")
            assert sweep_orphans(tmp_path) == [], "a live run's folders are never swept"
            pool.close_episodes([episode])
    finally:
        live.kill()
        live.wait()


@pytest.mark.parametrize("where", ["copy", "to"])
def test_the_tool_listing_instance_skips_steps_that_name_a_column(tmp_path, where):
    """The first instance lists the tools before any row exists: a step naming a column is left to the
    episodes (their rows fill it in), whichever side of the step names it."""
    seed = tmp_path / "seed.txt"
    seed.write_text(FOX)
    entry = seeded_entry(str(seed))
    entry["setup"] = [
        {"copy": str(tmp_path / "{name}.txt"), "to": "${episode.dir}/seed.txt"}
        if where == "copy"
        else {"copy": str(seed), "to": "${episode.dir}/{name}.txt"}
    ]
    with BlockingToolPool(parse_mcp_servers({"db": entry})) as pool:
        assert {"search", "pid"} <= {t.name for t in pool.tools}
        [episode] = pool.open_episodes(1, [{"name": "seed"}])
        assert episode.error is None and episode.call("search", {"query": "q"}).text == FOX
        pool.close_episodes([episode])


def test_training_hands_each_rows_columns_to_its_episodes_setup(tmp_path, searching_tiny_model):
    """TRL gives the rollout only the prompts; the trainer keeps the batch's rows for the episodes."""
    seeds = tmp_path / "seeds"
    seeds.mkdir()
    for name in ("fox", "owl"):
        (seeds / f"{name}.txt").write_text(f"The {name} lives in {name.title()}ville.")
    seen: list[tuple[str, str | None]] = []

    def seed_reached(*, trajectories, animal, **_: object) -> list[float]:
        firsts = [t.calls[0].observation if t.calls else None for t in trajectories]
        seen.extend(zip(animal, firsts, strict=True))
        return [float(first is not None and a in first) for a, first in zip(animal, firsts, strict=True)]

    model, tokenizer = searching_tiny_model
    dataset = Dataset.from_list(
        [
            {"question": "Where does the fox live?", "golden_answers": ["Draskel"], "animal": a}
            for a in ("fox", "owl")
        ]
    )
    entry = seeded_entry(str(seeds / "{animal}.txt"))
    with BlockingToolPool(parse_mcp_servers({"db": entry})) as pool:
        kwargs = searching_trainer_kwargs(copy.deepcopy(model), tokenizer, pool)
        kwargs["reward_funcs"] = [seed_reached]
        trainer = MCPGRPOTrainer(
            args=tiny_grpo_config(tmp_path / "out", max_steps=1, num_generations=2),
            train_dataset=dataset,
            close_environment=False,
            **kwargs,
        )
        trainer.train()
    searched = [(a, first) for a, first in seen if first is not None]  # sampled: most episodes search
    assert len(seen) == 4 and searched, seen
    assert all(first == f"The {a} lives in {a.title()}ville." for a, first in searched), seen
