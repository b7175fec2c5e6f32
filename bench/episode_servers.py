"""What a fresh server per episode costs: the same episodes against per-episode instances and a shared one.

    python bench/episode_servers.py [--quick] [--episodes 128] [--batch 16] [--turn-s 5.0] [--warm 16]

Both sides drive the same episodes through ``BlockingToolPool`` the way the rollout engine does: a batch of
``--batch`` episodes is opened together (a training step's rollout), each episode takes ``--turns`` turns of
``--turn-s`` seconds of "generation" (a sleep: the model's time, during which spares can start) followed by
one ``sql`` call per episode, all calls of a turn at once; then the batch is released (its rewards done),
``--train-s`` seconds pass (the optimizer step; default: as long as the rollout, as in the default run) and
the next batch opens. The server is ``tests/servers/sqlite_db.py`` over stdio on a seed database; the
per-episode side copies the seed into each episode's folder (``setup``) and keeps ``--warm`` spares.

The last line on stdout is one JSON object: ``per_episode_s``, ``shared_s``, ``overhead_ratio`` (their
ratio; target <= 1.3 with a warm pool), ``spawn_ms_p50``/``p95`` (start of one instance: setup, process,
handshake, tool listing), ``first_call_ms_p50`` (first call on a fresh instance), ``stop_ms_p50``.
"""

from __future__ import annotations

import argparse
import platform
import sqlite3
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import finish, log, version  # bench/ is sys.path[0]

from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers

ROOT = Path(__file__).resolve().parents[1]
SERVER = str(ROOT / "tests" / "servers" / "sqlite_db.py")


def seed_database(folder: Path) -> Path:
    path = folder / "seed.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE members (episode INTEGER, turn INTEGER)")
    return path


def entry(seed: Path, per_episode: bool, warm: int) -> dict[str, Any]:
    if not per_episode:
        return {"command": sys.executable, "args": [SERVER, "--db", str(seed)], "cwd": str(ROOT)}
    return {
        "command": sys.executable,
        "args": [SERVER, "--db", "${episode.dir}/members.db"],
        "cwd": str(ROOT),
        "scope": "episode",
        "setup": [{"copy": str(seed), "to": "${episode.dir}/members.db"}],
        "warm": warm,
    }


def run_side(seed: Path, per_episode: bool, options: argparse.Namespace) -> dict[str, Any]:
    """Wall time of all episodes (pool start excluded: it is paid once per run), and per-instance timings."""
    first_calls: list[float] = []
    stops: list[float] = []
    with BlockingToolPool(parse_mcp_servers({"db": entry(seed, per_episode, options.warm)})) as pool:
        if per_episode:  # let the warm pool fill, as it does while the trainer loads the model
            deadline = time.perf_counter() + 60
            while pool.pool._episodes is not None and len(pool.pool._episodes.spares) < options.warm:
                if time.perf_counter() > deadline:
                    break
                time.sleep(0.05)
        started = time.perf_counter()
        failures = 0
        for first in range(0, options.episodes, options.batch):
            size = min(options.batch, options.episodes - first)
            episodes = pool.open_episodes(size)
            for turn in range(options.turns):
                time.sleep(options.turn_s)
                calls = [
                    ("sql", {"query": f"INSERT INTO members VALUES ({first + i}, {turn})"})
                    for i in range(size)
                ]
                tick = time.perf_counter()
                results = pool.call_many(calls, episodes=[e.episode for e in episodes])
                if turn == 0 and per_episode:
                    first_calls.append((time.perf_counter() - tick) * 1000)
                failures += sum(not r.ok for r in results)
            tick = time.perf_counter()
            pool.close_episodes(episodes)
            if per_episode:
                stops.append((time.perf_counter() - tick) * 1000 / size)
            time.sleep(options.train_s)  # the optimizer step between two rollouts
        wall = time.perf_counter() - started
        spawn_ms = [1000 * s for s in pool.pool._episodes.spawn_s] if pool.pool._episodes else []
    return {
        "wall_s": wall,
        "failures": failures,
        "spawn_ms": spawn_ms,
        "first_call_ms": first_calls,
        "stop_ms": stops,
    }


def percentile(values: list[float], q: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="64 episodes, 3 turns of 1 s (about 60 s)")
    parser.add_argument("--episodes", type=int, default=128)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--turns", type=int, default=3)
    parser.add_argument(
        "--turn-s", type=float, default=5.0, help="model time per turn (the default run: ~5 s)"
    )
    parser.add_argument(
        "--train-s", type=float, default=None, help="optimizer step between batches (default: the rollout's)"
    )
    parser.add_argument("--warm", type=int, default=16)
    options = parser.parse_args()
    if options.quick:
        options.episodes, options.turns, options.turn_s = 64, 3, 1.0
    if options.train_s is None:  # the default run spends about half of each step generating
        options.train_s = options.turns * options.turn_s
    with tempfile.TemporaryDirectory(prefix="bench-episodes-") as tmp:
        seed = seed_database(Path(tmp))
        log(
            f"{options.episodes} episodes in batches of {options.batch}, {options.turns} turns of "
            f"{options.turn_s} s, warm {options.warm}"
        )
        shared = run_side(seed, per_episode=False, options=options)
        log(f"shared server: {shared['wall_s']:.2f} s")
        per_episode = run_side(seed, per_episode=True, options=options)
        log(f"per-episode servers: {per_episode['wall_s']:.2f} s")
    result = {
        "benchmark": "episode_servers",
        "episodes": options.episodes,
        "batch": options.batch,
        "turns": options.turns,
        "turn_s": options.turn_s,
        "warm": options.warm,
        "per_episode_s": round(per_episode["wall_s"], 2),
        "shared_s": round(shared["wall_s"], 2),
        "overhead_ratio": round(per_episode["wall_s"] / shared["wall_s"], 3),
        "spawn_ms_p50": percentile(per_episode["spawn_ms"], 0.5),
        "spawn_ms_p95": percentile(per_episode["spawn_ms"], 0.95),
        "first_call_ms_p50": percentile(per_episode["first_call_ms"], 0.5),
        "stop_ms_p50": percentile(per_episode["stop_ms"], 0.5),
        "failed_calls": shared["failures"] + per_episode["failures"],
        "machine": f"{platform.machine()}, {len(__import__('os').sched_getaffinity(0))} cpus",
        "mcp": version("mcp"),
    }
    finish(result, f"overhead ratio {result['overhead_ratio']} (target <= 1.3)")


if __name__ == "__main__":
    main()
