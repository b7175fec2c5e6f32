"""Chaos benchmark: many concurrent episodes through the real rollout engine against faulty MCP servers.

    python bench/chaos.py [--quick] [--episodes N] [--tool-turns T] [--fault-rate P] [--only F,G]
                          [--episode-phase E] [--start-fail-rate Q] [--scheduling episode|turn] [--seed S]

A scripted generator (``ScriptedGenerator``, the project's ``Generator`` protocol) writes every episode's
turns as a model would: each tool turn one call to a healthy echo server (stdio, streamable HTTP or
in-process, in turn) and, with probability ``--fault-rate``, one call that injects a fault (any kind, or
the ``--only`` ones), written in the ``tool_call`` parser's format; the last turn answers.
``Environment`` wires the real parser, prompt builder, engine (``--scheduling``: ``rollout.scheduling``)
and ``BlockingToolPool``. The fault
servers, all under ``tests/servers/``: ``faulty.py`` over HTTP and in-process and ``wedging.py`` (the
same tools and more) over stdio: a call that hangs, a server that dies mid-call or closes its end,
heavy-tailed latency, huge, deeply nested, binary, surrogate-laden and unknown-typed results, garbage and
stray JSON-RPC on the stdio channel, a byte that is not UTF-8 there, replies the client cannot parse, a
flood of stderr, and model-written arguments holding a lone surrogate; ``stalling_http.py``, a raw HTTP
server that stalls before its headers, mid-JSON or mid-event-stream and ignores cancellation. The HTTP
fault servers are restarted when a fault kills them, as a service manager would. Then ``--episode-phase``
episodes (16 quick, 64 full) each call a server of their own (``scope: episode``,
``episode_start.py``), which for a ``--start-fail-rate`` share of them fails at start.

Faults are of two kinds. A *failing* fault (hang, crash, close, unknown content, bad arguments, a lone
surrogate sent over stdio, which kills that server, an unparsable reply, a stall, a failed episode start)
must come back as a failure of that call (of that episode, for a start: it ends after its first turn,
its calls failed); a *hostile result* (huge, nested, binary, surrogate over HTTP or in-process, garbage,
stray JSON-RPC, the non-UTF-8 byte, the stderr flood, heavy-tailed latency) must come back as a bounded,
valid-Unicode observation, failure or not. Healthy calls live on healthy servers (or on an episode's own
server that started) and must all succeed with the right text: a fault on one call never takes others
down. Server stderr goes to a capped, rotating log (``ServerLog``).

The same episodes are then run with every fault call replaced by a healthy one (``wall_s_healthy``).
Last stdout line, one JSON object: episodes, calls, calls_lost_as_exceptions (target 0), faults_injected,
faults_surfaced_as_failures (target = faults_injected), hostile_results, hostile_results_handled,
healthy_calls_failed (target 0), max_overrun_past_timeout_s (target <= 1.0), leaked_processes and
leaked_fds (target 0), open_connections_after (to the stalling server, once settled; target <= its
open_connections_baseline, what the pool keeps after a call that answers), server_log_bytes (target <=
server_log_cap_bytes), peak_rss_mb, wall_s, wall_s_healthy, and outcomes_by_fault (each fault's failure
kinds). Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from _common import finish, log

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
SERVERS = ROOT / "tests" / "servers"
FAULTY = str(SERVERS / "faulty.py")  # over HTTP and in-process
WEDGING = str(SERVERS / "wedging.py")  # over stdio: faulty.py's tools and the ones that write to the channel
STALLING = str(SERVERS / "stalling_http.py")  # a raw HTTP server that stalls and ignores cancellation
EPISODE_START = str(SERVERS / "episode_start.py")  # a per-episode echo server that may fail to start
ECHO = str(SERVERS / "echo.py")
RUN_MARKER = "MCP_RL_CHAOS_RUN"  # inherited by every process this run starts: how leaks are found
FAULT_TIMEOUT_S = 2.0
HEALTHY_TIMEOUT_S = 60.0
OBSERVATION_CHARS = 4000


@dataclass(frozen=True)
class Fault:
    """One way a call can go wrong: the tool and arguments that trigger it, where, and what must follow."""

    name: str
    tool: str
    arguments: dict[str, Any]
    servers: tuple[str, ...]
    failing: bool  # True: must be a failure; False: a hostile result that must be handled, failure or not


def faults(quick: bool) -> list[Fault]:
    from servers.stalling_http import STALLS

    crashy, hostile = ("c_stdio", "c_http"), ("x_stdio", "x_http", "x_inproc")
    stalls = [Fault(stall, stall, {}, ("s_http",), failing=True) for stall in STALLS]
    return [
        *stalls,
        # Its own reply may be read or lost with the connection; a wedged reader fails what follows.
        Fault("bad_byte", "bad_byte", {}, ("c_stdio",), failing=False),
        Fault("unparsable", "unreadable", {"kind": "surrogate"}, ("x_stdio",), failing=True),
        Fault("unparsable_deep", "unreadable", {"kind": "deep"}, ("x_stdio",), failing=True),
        Fault("stderr_flood", "stderr_flood", {"megabytes": 1 if quick else 4}, ("x_stdio",), failing=False),
        Fault("hang", "hang", {}, hostile, failing=True),
        Fault("crash", "crash", {"after_s": 0.05}, crashy, failing=True),
        Fault("close", "close", {}, ("c_stdio",), failing=True),
        Fault("surrogate_over_stdio", "surrogate", {}, ("c_stdio",), failing=True),
        Fault("unknown_content", "unknown_blocks", {"count": 1000}, hostile, failing=True),
        Fault("bad_arguments", "echo", {"text": "caf\ud800"}, hostile, failing=True),
        Fault("latency", "sleep", {}, hostile, failing=False),  # seconds drawn per call, heavy-tailed
        Fault("huge", "huge", {"chars": 2_000_000 if quick else 20_000_000}, hostile, failing=False),
        Fault("nested", "nested", {"depth": 100_000}, hostile, failing=False),
        Fault("binary", "binary", {"kilobytes": 256}, hostile, failing=False),
        Fault("surrogate", "surrogate", {}, ("x_http", "x_inproc"), failing=False),
        Fault("garbage", "garbage", {}, ("x_stdio",), failing=False),
        Fault("bad_jsonrpc", "bad_jsonrpc", {}, ("x_stdio",), failing=False),
    ]


@dataclass
class PlannedCall:
    server: str
    tool: str
    arguments: dict[str, Any]
    fault: Fault | None = None
    expected_text: str | None = None


@dataclass
class Episode:
    turns: list[list[PlannedCall]] = field(default_factory=list)
    start_fails: bool = False  # its per-episode server is told to fail at start: the episode must fail


def plan(
    episodes: int, tool_turns: int, fault_rate: float, quick: bool, seed: int, only: Sequence[str] = ()
) -> list[Episode]:
    """Each tool turn one healthy call and, at ``fault_rate``, one fault (of the ``only`` kinds, if given)."""
    rng = random.Random(seed)
    healthy = ("h_stdio", "h_http", "h_inproc")
    catalogue = [f for f in faults(quick) if not only or f.name in only]
    if not catalogue:
        raise SystemExit(
            f"no fault named {', '.join(only)}; known: {', '.join(f.name for f in faults(quick))}"
        )
    planned = []
    for index in range(episodes):
        episode = Episode()
        for turn in range(tool_turns):
            text = f"episode {index} turn {turn}"
            calls = [PlannedCall(healthy[(index + turn) % 3], "echo", {"text": text}, expected_text=text)]
            if rng.random() < fault_rate:
                fault = rng.choice(catalogue)
                arguments = dict(fault.arguments)
                if fault.name == "latency":  # Pareto(1.2): mostly milliseconds, sometimes past the timeout
                    arguments["seconds"] = round(min(0.005 * rng.paretovariate(1.2), 3 * FAULT_TIMEOUT_S), 3)
                calls.append(PlannedCall(rng.choice(fault.servers), fault.tool, arguments, fault))
            episode.turns.append(calls)
        planned.append(episode)
    return planned


def plan_episode_phase(episodes: int, tool_turns: int, fail_rate: float, seed: int) -> list[Episode]:
    """Episodes that each call their own per-episode echo server every tool turn; a ``fail_rate`` share of
    them have that server fail at start (``start_fails``)."""
    rng = random.Random(seed + 1)
    planned = []
    for index in range(episodes):
        episode = Episode(start_fails=rng.random() < fail_rate)
        for turn in range(tool_turns):
            text = f"episode {index} turn {turn}"
            episode.turns.append([PlannedCall("e_stdio", "echo", {"text": text}, expected_text=text)])
        planned.append(episode)
    return planned


def episode_rows(episodes: Sequence[Episode]) -> list[dict[str, str]]:
    """Each episode's dataset row: its ``start`` column names the seed its server reads at start."""
    return [{"start": "fail" if e.start_fails else "ok"} for e in episodes]


def episode_server_config(seeds: Path) -> list[Any]:
    """The per-episode server, ``seeds`` holding ``ok.txt`` and ``fail.txt``."""
    from mcp_rl.tools.server_config import parse_mcp_servers

    for start in ("ok", "fail"):
        (seeds / f"{start}.txt").write_text(start)
    entry = {
        "command": sys.executable,
        "args": [EPISODE_START, "--dir", "${episode.dir}"],
        "cwd": str(ROOT),
        "scope": "episode",
        "setup": [{"copy": str(seeds / "{start}.txt"), "to": "${episode.dir}/start.txt"}],
        "timeout": HEALTHY_TIMEOUT_S,  # a started instance is a healthy server
        "connectTimeout": 30,
    }
    return parse_mcp_servers({"mcpServers": {"e_stdio": entry}})


def healthy_twin(episodes: Sequence[Episode]) -> list[Episode]:
    """The same episodes with each fault call replaced by an echo call to a healthy server."""
    twins = []
    for index, episode in enumerate(episodes):
        twin = Episode()
        for turn, calls in enumerate(episode.turns):
            twin.turns.append(
                [
                    c
                    if c.fault is None
                    else PlannedCall("h_inproc", "echo", {"text": f"twin {index} {turn}"}, None, None)
                    for c in calls
                ]
            )
        twins.append(twin)
    return twins


class ScriptedGenerator:
    """Writes each episode's scripted turns (the ``Generator`` protocol): episode i is found by the
    ``episode i`` its prompt holds; its turn is the number of times it was asked so far."""

    lockstep = False

    def __init__(
        self, tokenizer: Any, episodes: Sequence[Episode], names: dict[tuple[str, str], str]
    ) -> None:
        self.tokenizer = tokenizer
        self.episodes = episodes
        self.names = names
        self.asked: Counter[int] = Counter()
        self.pattern = re.compile(r"episode (\d+)\b")

    def sync(self, model: Any, step: int) -> None:
        return None

    def generate(self, prompts: Sequence[Sequence[int]], sampling: Any) -> list[Any]:
        from mcp_rl.generation.base import Generation

        generations = []
        for ids in prompts:
            head = self.tokenizer.decode(list(ids[:64]), skip_special_tokens=True)
            match = self.pattern.search(head)
            assert match is not None, f"no episode number in the prompt {head!r}"
            index = int(match.group(1))
            turn = self.asked[index]
            self.asked[index] += 1
            turns = self.episodes[index].turns
            text = "".join(self.action(call) for call in turns[turn]) if turn < len(turns) else "done"
            ids_out = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            generations.append(Generation([*ids_out, self.tokenizer.eos_token_id], "eos"))
        return generations

    def action(self, call: PlannedCall) -> str:
        # ensure_ascii: a lone surrogate is written as the escape "\ud800", as a model writes it.
        body = json.dumps({"name": self.names[(call.server, call.tool)], "arguments": call.arguments})
        return f"<tool_call>{body}</tool_call>"


# -- servers -------------------------------------------------------------------------------------------------
class HttpServer:
    """A server process on 127.0.0.1, restarted whenever it dies (a crash fault kills it)."""

    def __init__(self, script: str, port: int) -> None:
        self.script, self.port = script, port
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.stopping = threading.Event()
        self.start()
        self.thread = threading.Thread(target=self.babysit, daemon=True)
        self.thread.start()

    def start(self) -> None:
        from conftest import wait_for_port

        self.process = subprocess.Popen(
            [sys.executable, self.script, "--transport", "http", "--port", str(self.port)],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(self.port)

    def babysit(self) -> None:
        while not self.stopping.wait(0.05):
            if self.process is not None and self.process.poll() is not None and not self.stopping.is_set():
                self.restarts += 1
                self.start()

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join()
        if self.process is not None:
            from conftest import stop

            stop(self.process)


def server_configs(with_faults: bool, ports: dict[str, int]) -> list[Any]:
    """The shared servers: healthy ones, and with ``with_faults`` the fault servers as well."""
    from servers.echo import build_server as build_echo
    from servers.faulty import build_server as build_faulty

    from mcp_rl.tools.server_config import in_process, parse_mcp_servers

    def stdio(script: str, timeout_s: float) -> dict[str, Any]:
        return {"command": sys.executable, "args": [script], "cwd": str(ROOT), "timeout": timeout_s}

    def http(name: str, timeout_s: float) -> dict[str, Any]:
        return {"url": f"http://127.0.0.1:{ports[name]}/mcp", "timeout": timeout_s}

    entries: dict[str, Any] = {
        "h_stdio": stdio(ECHO, HEALTHY_TIMEOUT_S),
        "h_http": http("h_http", HEALTHY_TIMEOUT_S),
    }
    configs = [in_process("h_inproc", build_echo("h_inproc"), timeout_s=HEALTHY_TIMEOUT_S)]
    if with_faults:
        for kind in ("c", "x"):
            entries[f"{kind}_stdio"] = stdio(WEDGING, FAULT_TIMEOUT_S)
            entries[f"{kind}_http"] = http(f"{kind}_http", FAULT_TIMEOUT_S)
        entries["s_http"] = http("s_http", FAULT_TIMEOUT_S)
        configs.append(in_process("x_inproc", build_faulty("x_inproc"), timeout_s=FAULT_TIMEOUT_S))
    for entry in entries.values():
        entry["connectTimeout"] = 30
    return parse_mcp_servers({"mcpServers": entries}) + configs


# -- one run -------------------------------------------------------------------------------------------------
@dataclass
class Tally:
    """What the calls of one run came to: ``n`` counts calls by outcome (calls, lost, faults,
    faults_failed, hostile, hostile_handled, healthy_failed), the rest says which and how late, and how
    many connections the pool held to the watched HTTP servers after a healthy call and after the run."""

    n: Counter[str] = field(default_factory=Counter)
    max_overrun_s: float = 0.0
    by_fault: Counter[str] = field(default_factory=Counter)
    failures: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)  # "fault: failure kind" (or "ok")
    examples: list[str] = field(default_factory=list)
    overrun_by_server: dict[str, float] = field(default_factory=dict)
    worst: str = ""  # the call that overran its timeout most
    connections_baseline: dict[str, int] = field(default_factory=dict)
    connections_after: dict[str, int] = field(default_factory=dict)

    def add(self, other: Tally) -> None:
        self.n.update(other.n)
        self.by_fault.update(other.by_fault)
        self.failures.update(other.failures)
        self.outcomes.update(other.outcomes)
        self.examples.extend(other.examples)
        for server, overrun in other.overrun_by_server.items():
            self.overrun_by_server[server] = max(self.overrun_by_server.get(server, overrun), overrun)
        if other.max_overrun_s > self.max_overrun_s:
            self.max_overrun_s, self.worst = other.max_overrun_s, other.worst
        self.connections_baseline |= other.connections_baseline
        self.connections_after |= other.connections_after

    def example(self, text: str) -> None:
        if len(self.examples) < 5:
            self.examples.append(text)

    def count(self, call: PlannedCall, record: Any, timeout_s: float) -> None:
        """One call's outcome against what its plan says it must be."""
        overrun = record.latency_s - timeout_s
        self.overrun_by_server[call.server] = max(self.overrun_by_server.get(call.server, 0.0), overrun)
        if overrun > self.max_overrun_s:
            self.max_overrun_s = overrun
            fault = call.fault.name if call.fault else "healthy"
            self.worst = f"{fault} on {call.server}: {record.failure or 'ok'} after {record.latency_s:.2f} s"
        if record.failure:
            self.failures[record.failure] += 1
        if call.fault is not None:
            self.outcomes[f"{call.fault.name}: {record.failure or 'ok'}"] += 1
        if call.fault is None:
            if record.failure or record.observation != call.expected_text:
                self.n["healthy_failed"] += 1
                self.example(f"healthy {call.server}/{call.tool}: {record.observation[:200]!r}")
        elif call.fault.failing:
            self.n["faults"] += 1
            self.by_fault[call.fault.name] += 1
            self.n["faults_failed"] += record.failure is not None
            if record.failure is None:
                self.example(f"fault {call.fault.name} on {call.server}: ok {record.observation[:200]!r}")
        else:
            self.n["hostile"] += 1
            self.by_fault[call.fault.name] += 1
            text = record.observation
            bounded = len(text) <= OBSERVATION_CHARS + 64
            self.n["hostile_handled"] += bounded and _valid_unicode(text)

    def count_failed_start(self, episode: Episode, trajectory: Any, records: list[Any]) -> None:
        """An episode whose server was told to fail at start: one fault, surfaced when the episode ended
        as failed after its first turn with every call of that turn failed."""
        self.n["faults"] += 1
        self.by_fault["episode_start"] += 1
        surfaced = trajectory.finish_reason == "episode_failed" and all(r.failure for r in records)
        self.n["faults_failed"] += surfaced
        if not surfaced:
            self.example(f"episode start failure not surfaced: {trajectory.finish_reason}")
        for record in records:
            if record.failure:
                self.failures[record.failure] += 1
            self.outcomes[f"episode_start: {record.failure or 'ok'}"] += 1


def settled_connections(ports: dict[str, int], baseline: dict[str, int]) -> dict[str, int]:
    """Open connections to each watched port, once none is above its baseline (or the cancellations'
    background sends have had their time)."""
    from servers.stalling_http import open_connections

    from mcp_rl.tools.http import CANCELLATION_SEND_TIMEOUT_S

    deadline = time.monotonic() + CANCELLATION_SEND_TIMEOUT_S + 3.0
    while True:
        now = {name: open_connections(port) for name, port in ports.items()}
        if all(now[name] <= baseline[name] for name in ports) or time.monotonic() > deadline:
            return now
        time.sleep(0.1)


def run_episodes(
    episodes: Sequence[Episode],
    configs: list[Any],
    tokenizer: Any,
    errlog: Any,
    watched: dict[str, int] | None = None,
    scheduling: str = "turn",
) -> tuple[Tally, float]:
    """Roll the episodes out through the real pipeline and tally their calls; ``watched`` names HTTP
    servers (name → port) whose open connections are counted after a healthy call and after the rollout."""
    from servers.stalling_http import open_connections

    from mcp_rl.config.sections import PromptConfig, RolloutConfig
    from mcp_rl.env.environment import Environment
    from mcp_rl.env.parsers import build_parser
    from mcp_rl.tools import BlockingToolPool

    watched = watched or {}
    timeouts = {c.name: c.timeout_s for c in configs}
    pool = BlockingToolPool(configs, observation_chars=OBSERVATION_CHARS, errlog=errlog).start()
    names = {(t.server, t.remote_name): t.name for t in pool.tools}
    tool_turns = max(len(e.turns) for e in episodes)
    rollout = RolloutConfig(
        max_turns=tool_turns + 1,
        max_new_tokens=512,
        max_completion_tokens=100_000,
        max_observation_tokens=4096,
        observation_role="user",
        on_no_action="stop",
        scheduling=scheduling,
    )
    generator = ScriptedGenerator(tokenizer, episodes, names)
    parser = build_parser("tool_call", answer_tag=None, stop_at_call=False)
    tally = Tally()
    for name, port in watched.items():  # the healthy baseline: what the pool keeps after a call that answers
        pool.call(names[(name, "echo")], {"text": "baseline"})
        tally.connections_baseline[name] = open_connections(port)
    started = time.perf_counter()
    with Environment(
        tokenizer, generator, pool=pool, parser=parser, prompt=PromptConfig(), rollout=rollout
    ) as p:
        prompts = [
            [{"role": "user", "content": f"episode {i}: call the tools"}] for i in range(len(episodes))
        ]
        rows = episode_rows(episodes) if pool.pool.has_episode_servers else None
        try:
            trajectories = p.engine.rollout(prompts, greedy=True, rows=rows)
        except Exception as error:  # the whole batch is lost: every planned call counts
            log(f"the rollout raised {type(error).__name__}: {error}")
            tally.n["lost"] = sum(len(calls) for e in episodes for calls in e.turns)
            return tally, time.perf_counter() - started
        wall_s = time.perf_counter() - started
        tally.connections_after = settled_connections(watched, tally.connections_baseline)
    for episode, trajectory in zip(episodes, trajectories, strict=True):
        records = [record for turn in trajectory.turns for record in turn.calls]
        # An episode that failed to start ends after its first turn: the later turns never happen.
        planned = [call for calls in episode.turns[: 1 if episode.start_fails else None] for call in calls]
        tally.n["calls"] += len(planned)
        tally.n["lost"] += max(0, len(planned) - len(records))
        if episode.start_fails:
            tally.count_failed_start(episode, trajectory, records)
            continue
        for call, record in zip(planned, records, strict=False):
            tally.count(call, record, timeouts[call.server])
    return tally, wall_s


def _valid_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# -- leaks ---------------------------------------------------------------------------------------------------
def marked_processes(marker: str) -> list[int]:
    """Processes (other than this one) whose environment carries this run's marker."""
    found = []
    needle = f"{RUN_MARKER}={marker}".encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as environ:
                if needle in environ.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def log_bytes(path: Path) -> int:
    """Bytes on disk of a server log and its rotated files."""
    return sum(f.stat().st_size for f in path.parent.glob(path.name + "*"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="1,024 episodes, 2 tool turns (a few minutes)")
    parser.add_argument("--episodes", type=int, default=1024)
    parser.add_argument("--tool-turns", type=int, default=None, help="2 quick, 4 full")
    parser.add_argument("--fault-rate", type=float, default=0.5, help="chance of a fault call per tool turn")
    parser.add_argument(
        "--episode-phase",
        type=int,
        default=None,
        help="episodes on per-episode servers (16 quick, 64 full)",
    )
    parser.add_argument("--start-fail-rate", type=float, default=0.25, help="their share failing at start")
    parser.add_argument("--only", default="", help="comma-separated fault names to inject (default: all)")
    parser.add_argument(
        "--scheduling", choices=("episode", "turn"), default="turn", help="the engine's rollout.scheduling"
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    tool_turns = args.tool_turns or (2 if args.quick else 4)
    episode_phase = args.episode_phase if args.episode_phase is not None else (16 if args.quick else 64)
    marker = uuid.uuid4().hex
    os.environ[RUN_MARKER] = marker

    from conftest import free_port
    from tiny_models import tiny_tokenizer

    from mcp_rl.tools.server_logs import LOG_BACKUPS, LOG_MAX_BYTES, ServerLog

    tokenizer = tiny_tokenizer(["episode 0: call the tools", '<tool_call>{"name": "echo"}</tool_call>'])
    only = [name for name in args.only.split(",") if name]
    episodes = plan(args.episodes, tool_turns, args.fault_rate, args.quick, args.seed, only)
    # Reconnect warnings and garbage-line parse errors are expected by the hundred here (the servers' own
    # stderr goes to a capped log).
    logging.disable(logging.ERROR)
    ports = {name: free_port() for name in ("h_http", "c_http", "x_http", "s_http")}
    log(f"{args.episodes} episodes x {tool_turns} tool turns; healthy servers only first")
    http = {"h_http": HttpServer(ECHO, ports["h_http"])}
    folder = Path(tempfile.mkdtemp(prefix="mcp-rl-chaos-"))
    server_log = folder / "tool_servers.log"
    wall_phase = 0.0
    with open(os.devnull, "w") as devnull, ServerLog(server_log) as errlog:
        try:
            twin = healthy_twin(episodes)
            healthy = server_configs(False, ports)
            _, wall_healthy = run_episodes(twin, healthy, tokenizer, devnull, scheduling=args.scheduling)
            # Counted after one run: the shared event loop and its thread live as long as the process.
            fds_before = open_fds()
            log(f"healthy only: {wall_healthy:.1f} s; now with faults")
            http |= {name: HttpServer(FAULTY, ports[name]) for name in ("c_http", "x_http")}
            http["s_http"] = HttpServer(STALLING, ports["s_http"])
            watched = {"s_http": ports["s_http"]}
            tally, wall = run_episodes(
                episodes, server_configs(True, ports), tokenizer, errlog, watched, args.scheduling
            )
            if episode_phase:
                share = f"{args.start_fail_rate:.0%}"
                log(f"{episode_phase} episodes on per-episode servers, {share} of them failing to start")
                phased = plan_episode_phase(episode_phase, tool_turns, args.start_fail_rate, args.seed)
                seeds = folder / "seeds"
                seeds.mkdir()
                phase, wall_phase = run_episodes(
                    phased, episode_server_config(seeds), tokenizer, errlog, scheduling=args.scheduling
                )
                tally.add(phase)
        finally:
            for server in http.values():
                server.stop()
    restarts = {name: server.restarts for name, server in http.items()}
    deadline = time.monotonic() + 5
    while marked_processes(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    leaked = marked_processes(marker)
    leaked_fds = max(0, open_fds() - fds_before)
    logged = log_bytes(server_log)
    log_cap = LOG_MAX_BYTES * (1 + LOG_BACKUPS)
    shutil.rmtree(folder, ignore_errors=True)
    connections_ok = all(
        tally.connections_after.get(name, 0) <= count for name, count in tally.connections_baseline.items()
    )
    result = {
        "episodes": args.episodes,
        "tool_turns": tool_turns,
        "episodes_on_per_episode_servers": episode_phase,
        "calls": tally.n["calls"],
        "calls_lost_as_exceptions": tally.n["lost"],
        "faults_injected": tally.n["faults"],
        "faults_surfaced_as_failures": tally.n["faults_failed"],
        "hostile_results": tally.n["hostile"],
        "hostile_results_handled": tally.n["hostile_handled"],
        "healthy_calls_failed": tally.n["healthy_failed"],
        "max_overrun_past_timeout_s": round(max(0.0, tally.max_overrun_s), 3),
        "leaked_processes": len(leaked),
        "leaked_fds": leaked_fds,
        "open_connections_baseline": tally.connections_baseline,
        "open_connections_after": tally.connections_after,
        "server_log_bytes": logged,
        "server_log_cap_bytes": log_cap,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "wall_s": round(wall, 2),
        "wall_s_healthy": round(wall_healthy, 2),
        "wall_s_per_episode_servers": round(wall_phase, 2),
        "faults_by_kind": dict(sorted(tally.by_fault.items())),
        "failures_by_kind": dict(sorted(tally.failures.items())),
        "outcomes_by_fault": dict(sorted(tally.outcomes.items())),
        "http_server_restarts": restarts,
        "max_overrun_by_server_s": {
            k: round(max(0.0, v), 3) for k, v in sorted(tally.overrun_by_server.items())
        },
        "mode": "quick" if args.quick else "full",
        "scheduling": args.scheduling,
    }
    log(f"largest overrun: {tally.worst}")
    for example in tally.examples:
        log(example)
    met = (
        tally.n["lost"] == 0
        and tally.n["faults_failed"] == tally.n["faults"]
        and tally.n["hostile_handled"] == tally.n["hostile"]
        and tally.n["healthy_failed"] == 0
        and result["max_overrun_past_timeout_s"] <= 1.0
        and not leaked
        and leaked_fds == 0
        and connections_ok
        and logged <= log_cap
    )
    finish(
        result,
        f"chaos: {'all targets met' if met else 'TARGETS MISSED'}; {tally.n['calls']} calls in {wall:.1f} s",
    )
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
