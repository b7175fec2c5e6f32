"""Per-episode server instances: each episode writes to its own fresh copy of a seed database; rewards see
that episode's state; nothing survives the episode; one instance's crash touches only its episode."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path

import pytest
from conftest import ROOT, SQLITE_SERVER
from tiny import child_pids

from mcp_rl.errors import ServerConfigError
from mcp_rl.tools import BlockingToolPool, FailureKind
from mcp_rl.tools.server_config import parse_mcp_servers


@pytest.fixture
def seed_db(tmp_path: Path) -> Path:
    path = tmp_path / "seed.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE members (name TEXT)")
        db.execute("INSERT INTO members VALUES ('seed')")
    return path


def episode_entry(seed: Path, **extra: object) -> dict[str, object]:
    return {
        "command": sys.executable,
        "args": [SQLITE_SERVER, "--db", "${episode.dir}/members.db"],
        "cwd": str(ROOT),
        "scope": "episode",
        "setup": [{"copy": str(seed), "to": "${episode.dir}/members.db"}],
        **extra,
    }


def rows(result_text: str) -> list[str]:
    return sorted(row[0] for row in json.loads(result_text))


def test_eight_concurrent_episodes_each_see_only_their_own_writes(seed_db, tmp_path):
    servers = parse_mcp_servers(
        {
            "db": episode_entry(seed_db, warm=3),
            "echo": {
                "command": sys.executable,
                "args": [str(ROOT / "tests" / "servers" / "echo.py")],
                "cwd": str(ROOT),
            },
        }
    )
    children_before = child_pids()
    with BlockingToolPool(servers) as pool:
        assert {t.name for t in pool.tools} >= {"sql", "echo"}
        episodes = pool.open_episodes(8)
        folders = [e.dir for e in episodes]
        assert len(set(folders)) == 8 and all(f is not None and f.is_dir() for f in folders)
        # All eight write at once (one call_many, one call per episode), then read back.
        writes = pool.call_many(
            [("sql", {"query": f"INSERT INTO members VALUES ('episode {i}')"}) for i in range(8)],
            episodes=[e.episode for e in episodes],
        )
        assert all(w.ok for w in writes), [w.text for w in writes]
        for i, episode in enumerate(episodes):
            seen = episode.call("sql", {"query": "SELECT name FROM members"})
            assert rows(seen.text) == sorted(["seed", f"episode {i}"])
        shared = pool.call("echo", {"text": "shared"}, episode=episodes[0].episode)
        assert shared.ok and shared.text == "shared", "shared servers stay reachable inside an episode"
        outside = pool.call("sql", {"query": "SELECT 1"})
        assert outside.failure is FailureKind.UNAVAILABLE, "a per-episode tool needs an episode"
        pool.close_episodes(episodes)
        after_release = episodes[0].call("sql", {"query": "SELECT 1"})
        assert after_release.failure is FailureKind.UNAVAILABLE, "a released episode's calls fail at once"
        assert pool.metrics()["episodes/started"] >= 9  # the first instance, the 8, spares
    assert not any(f.exists() for f in folders), "episode folders are removed"
    assert child_pids() == children_before, "no server instance survives the pool"
    with sqlite3.connect(seed_db) as db:
        assert [r[0] for r in db.execute("SELECT name FROM members")] == ["seed"], "the seed is untouched"


def test_a_killed_instance_fails_only_its_own_episode(seed_db):
    with BlockingToolPool(parse_mcp_servers({"db": episode_entry(seed_db, warm=0)})) as pool:
        first, second = pool.open_episodes(2)
        pid = int(first.call("pid").text)
        os.kill(pid, signal.SIGKILL)
        lost = first.call("sql", {"query": "SELECT name FROM members"}, timeout_s=10)
        healthy = second.call("sql", {"query": "SELECT name FROM members"})
        assert healthy.ok and rows(healthy.text) == ["seed"]
        assert int(second.call("pid").text) != pid
        # The killed instance is restarted on the same episode folder (its state survives in the file), or
        # the call failed as a counted failure: never an exception, never another episode's data.
        assert lost.ok or lost.failure in (FailureKind.CONNECTION_LOST, FailureKind.UNAVAILABLE)
        pool.close_episodes([first, second])


def test_per_episode_tools_are_kept_through_rewards_in_a_rollout(seed_db, searching_tiny_model):
    """The engine opens one episode per trajectory; the instances stay up until ``release``."""
    from tiny import searching_environment

    model, tokenizer = searching_tiny_model
    with BlockingToolPool(parse_mcp_servers({"db": episode_entry(seed_db, warm=2)})) as pool:
        pipeline = searching_environment(model, tokenizer, pool)
        trajectories = pipeline.rollout_rows([{"question": "Where does the fox live?"}] * 3)
        folders = [t.tools.dir for t in trajectories]
        assert len(set(folders)) == 3 and all(f.is_dir() for f in folders)
        for i, trajectory in enumerate(trajectories):  # what a state-checking reward does
            assert trajectory.tools.call("sql", {"query": f"INSERT INTO members VALUES ('r{i}')"}).ok
            seen = trajectory.tools.call("sql", {"query": "SELECT name FROM members"})
            assert rows(seen.text) == sorted(["seed", f"r{i}"])
        pipeline.release(trajectories)
        assert all(t.tools.call("sql", {"query": "SELECT 1"}).failure for t in trajectories)
    assert not any(f.exists() for f in folders)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"scope": "global"}, "mcpServers.db.scope must be one of shared, episode"),
        ({"scope": "episode", "setup": "seed.db"}, "mcpServers.db.setup must be a list"),
        ({"scope": "episode", "setup": [{"copy": "a", "into": "b"}]}, "unknown key(s) ['into']"),
        ({"scope": "episode", "warm": -1}, "mcpServers.db.warm must be a whole number"),
        ({"warm": 2}, "add scope: episode"),
    ],
)
def test_bad_episode_settings_are_refused_with_the_field(entry, message):
    with pytest.raises(ServerConfigError) as error:
        parse_mcp_servers({"db": {"command": "python", "args": ["x.py"], **entry}})
    assert message in str(error.value)
    assert "\n" not in str(error.value)


def test_setup_outside_the_episode_folder_is_refused(seed_db, tmp_path):
    entry = episode_entry(seed_db)
    entry["setup"] = [{"copy": str(seed_db), "to": str(tmp_path / "elsewhere.db")}]
    from mcp_rl.tools import ToolPoolError

    with pytest.raises(ToolPoolError, match="outside"), BlockingToolPool(parse_mcp_servers({"db": entry})):
        pass
    assert not (tmp_path / "elsewhere.db").exists()


def test_http_servers_the_pool_starts_per_episode(seed_db):
    """command + url: the pool starts the server, one per episode on a free port, and stops it after."""
    http = ["--transport", "http", "--port", "${episode.port}"]
    entry = {
        **episode_entry(seed_db, warm=1),
        "args": [SQLITE_SERVER, "--db", "${episode.dir}/members.db", *http],
        "url": "http://127.0.0.1:${episode.port}/mcp",
    }
    children_before = child_pids()
    with BlockingToolPool(parse_mcp_servers({"db": entry})) as pool:
        first, second = pool.open_episodes(2)
        assert first.episode.port != second.episode.port
        assert first.call("sql", {"query": "INSERT INTO members VALUES ('http')"}).ok
        assert rows(first.call("sql", {"query": "SELECT name FROM members"}).text) == ["http", "seed"]
        assert rows(second.call("sql", {"query": "SELECT name FROM members"}).text) == ["seed"]
        pool.close_episodes([first, second])
    assert child_pids() == children_before, "the launched HTTP servers are stopped"


def test_instances_after_the_first_skip_the_handshake_probe(tmp_path):
    # A 1.x-era server fails `server/discover` (and logs a page about it) before every `initialize`: only the
    # first instance is asked; the others start with the initialize handshake and still serve.
    probes = tmp_path / "probes.txt"
    entry = {
        "command": sys.executable,
        "args": [str(ROOT / "tests" / "servers" / "legacy_only.py"), "--probes", str(probes)],
        "scope": "episode",
        "warm": 2,
    }
    with BlockingToolPool(parse_mcp_servers({"legacy": entry})) as pool:
        episodes = pool.open_episodes(4)
        answers = [episode.call("shout", {"text": f"episode {i}"}) for i, episode in enumerate(episodes)]
        pool.close_episodes(episodes)
        started = pool.metrics()["episodes/started"]
    assert [a.text for a in answers] == [f"EPISODE {i}" for i in range(4)], answers
    assert started >= 5 and probes.read_text().splitlines() == ["discover"]


def test_a_modern_servers_later_instances_reuse_its_discovery(seed_db):
    with BlockingToolPool(parse_mcp_servers({"db": episode_entry(seed_db, warm=1)})) as pool:
        episodes = pool.open_episodes(3)
        seen = [episode.call("sql", {"query": "SELECT name FROM members"}) for episode in episodes]
        handshakes = [episode.episode.connections["db"].handshake for episode in episodes]
        pool.close_episodes(episodes)
    assert all(s.ok and rows(s.text) == ["seed"] for s in seen)
    # The one learnt from the first instance, handed on (each learning its own would be equal, not the same).
    assert all(h is handshakes[0] for h in handshakes)
    assert handshakes[0].mode not in ("auto", "legacy") and handshakes[0].prior_discover is not None
