"""Shared fixtures: real MCP servers (stdio subprocesses, HTTP on 127.0.0.1) and tiny models."""

from __future__ import annotations

import inspect
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch

from mcp_rl.datasets import arithmetic
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_config import parse_mcp_servers

ROOT = Path(__file__).resolve().parents[1]
ECHO_SERVER = str(ROOT / "tests" / "servers" / "echo.py")
SQLITE_SERVER = str(ROOT / "tests" / "servers" / "sqlite_db.py")  # a stateful server: one SQLite file
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, str(ROOT / "tests"))
# Tiny test models' matmuls are too small to split across threads; one thread is faster, and much faster
# when the machine is busy (spin-waiting OpenMP threads).
torch.set_num_threads(1)
# Under pytest-xdist the workers share the cores: the subprocesses a test starts (the CLI, servers, trainers)
# get their share of them, not every core each.
if "PYTEST_XDIST_WORKER_COUNT" in os.environ:
    workers = int(os.environ["PYTEST_XDIST_WORKER_COUNT"])
    os.environ.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // workers)))


def run_cli(*args: str, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """Run the CLI in a subprocess, as a user would (stdio servers need real file descriptors), offline."""
    return subprocess.run(
        [sys.executable, "-m", "mcp_rl.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout_s,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def two_process_launch(script: Path, *args: str) -> list[str]:
    """``accelerate launch`` of ``script`` in two CPU processes on this machine (gloo), on a free port.
    ``--multi_gpu`` picks the torchrun launcher: ``--cpu --num_processes 2`` would start one process."""
    return [
        sys.executable,
        "-m",
        "accelerate.commands.launch",
        "--multi_gpu",
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_ip",
        "127.0.0.1",
        "--main_process_port",
        str(free_port()),
        str(script),
        *args,
    ]


def wait_for_port(port: int, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


def start_http_server(
    args: list[str], port: int, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """Start ``python ARGS --transport http --port PORT`` and wait until it accepts connections."""
    process = subprocess.Popen(
        [sys.executable, *args, "--transport", "http", "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )
    try:
        wait_for_port(port)
    except TimeoutError:
        process.kill()
        raise
    return process


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def echo_stdio() -> dict[str, object]:
    """An ``mcpServers`` entry for the echo test server as a stdio subprocess."""
    return {"command": "python", "args": [ECHO_SERVER], "cwd": str(ROOT)}


@pytest.fixture
def echo_http() -> Iterator[tuple[str, int, subprocess.Popen[bytes]]]:
    """The echo test server over streamable HTTP on 127.0.0.1: (url, port, process)."""
    port = free_port()
    process = start_http_server([ECHO_SERVER], port)
    try:
        yield f"http://127.0.0.1:{port}/mcp", port, process
    finally:
        stop(process)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # Every `async def` test runs on anyio's asyncio backend without a marker on each.
    for item in items:
        if inspect.iscoroutinefunction(getattr(item, "function", None)):
            item.add_marker(pytest.mark.anyio)


# -- tiny models and a small real search corpus (built by tests/tiny.py, shared with scripts) -------------
from tiny import (  # noqa: E402
    SEARCH_EPISODE,
    TEST_QUESTIONS,
    TEST_SYSTEM,
    search_stdio_entry,
    searching_model,
    tiny_prompt_config,
    warm_up,
    write_corpus,
)

__all__ = ["SEARCH_EPISODE", "TEST_QUESTIONS", "TEST_SYSTEM", "tiny_prompt_config", "warm_up"]


@pytest.fixture(scope="session")
def searching_tiny_model():
    """A tiny Llama that answers any question with a ``<search>`` and then an ``<answer>``."""
    return searching_model(seed=0)


@pytest.fixture(scope="session")
def tiny_model_dir(searching_tiny_model, tmp_path_factory) -> Path:
    """The searching tiny model saved as a model folder (for recipes, the CLI and ``--model``)."""
    model, tokenizer = searching_tiny_model
    folder = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def calculator_pool() -> Iterator[BlockingToolPool]:
    """The calculator MCP server as the recipe runs it: a subprocess over stdio, behind the tool pool."""
    entry = {"command": "python", "args": ["-m", "tool_servers.calculator"], "cwd": str(ROOT)}
    with BlockingToolPool(parse_mcp_servers({"calculator": entry})) as pool:
        yield pool


@pytest.fixture(scope="session")
def arithmetic_splits() -> dict[str, list[dict[str, object]]]:
    """Every split of the arithmetic dataset at seed 0 and the default sizes: the shipped copy."""
    return arithmetic.generate(seed=0)


@pytest.fixture(scope="session")
def tiny_qa(tmp_path_factory) -> Path:
    """QA rows (id, question, golden_answers, hops) over ``TEST_QUESTIONS``, twice over."""
    path = tmp_path_factory.mktemp("qa") / "qa.jsonl"
    rows = [
        {"id": str(i), "question": q, "golden_answers": ["Draskel"], "hops": 1}
        for i, q in enumerate(TEST_QUESTIONS)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows * 2))
    return path


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """A Search-R1 format corpus of a few invented passages."""
    return write_corpus(tmp_path / "corpus.jsonl")


@pytest.fixture
def search_entry(tiny_corpus: Path, tmp_path: Path) -> dict[str, object]:
    """An ``mcpServers`` entry for the real search tool server over stdio on ``tiny_corpus``."""
    return search_stdio_entry(tiny_corpus, tmp_path / "cache")


@pytest.fixture(scope="session")
def tiny_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The untrained tiny Llama of tests/tiny_models.py and its tokenizer, saved as a model folder."""
    from tiny_models import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer()
    folder = tmp_path_factory.mktemp("tiny-model")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return str(folder)


# -- the third-party filesystem server (through npx), and `mcp-rl init` on it ---------------------------
FILESYSTEM = "@modelcontextprotocol/server-filesystem"
FILESYSTEM_TOOLS = ["list_directory", "read_text_file", "write_file"]  # the README's `init --tools`


def filesystem_problem(folder: Path) -> str | None:
    """Why the filesystem server cannot start here (no Node.js, or no cached package and no registry)."""
    if shutil.which("npx") is None:
        return "npx (Node.js) is not installed"
    try:  # with stdin at its end the server starts, says so, and exits
        done = subprocess.run(
            ["npx", "-y", FILESYSTEM, str(folder)], capture_output=True, text=True, timeout=120, input=""
        )
    except subprocess.TimeoutExpired:
        return f"npx could not fetch {FILESYSTEM} within 120 s"
    if "Secure MCP Filesystem Server" not in done.stderr:
        return f"npx cannot run {FILESYSTEM}: {(done.stderr or done.stdout).strip()[-300:]}"
    return None


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding ``notes.txt`` for the filesystem server; skips where the server cannot start.

    One for the session: the tests that write run each episode on its own copy (``scope: episode``), and
    check that this folder is left as it is."""
    folder = tmp_path_factory.mktemp("fs") / "sandbox"
    folder.mkdir()
    problem = filesystem_problem(folder)
    if problem:
        pytest.skip(problem)
    (folder / "notes.txt").write_text("seed\n")
    return folder


@dataclass(frozen=True)
class InitRun:
    """What one ``mcp-rl init`` wrote (``NAME.yaml``, ``NAME.tasks.jsonl``, ``NAME_rewards.py``) and said."""

    folder: Path
    name: str
    stdout: str

    def copy_to(self, folder: Path) -> Path:
        """The written files copied into ``folder`` (a test edits its own copy); the recipe's path there."""
        for path in self.folder.iterdir():
            shutil.copy2(path, folder / path.name)
        return folder / f"{self.name}.yaml"


@pytest.fixture(scope="session")
def filesystem_init(sandbox: Path, tiny_folder: str, tmp_path_factory: pytest.TempPathFactory) -> InitRun:
    """The README's ``mcp-rl init --server 'npx -y ...server-filesystem SANDBOX' --name fs --tools
    list_directory,read_text_file,write_file`` with the tiny model, run once for the tests that start
    from it: it starts the server twice, calls its tools and times a step of the model."""
    folder = tmp_path_factory.mktemp("fs-init")
    done = run_cli(
        "init", "--server", f"npx -y {FILESYSTEM} {sandbox}", "--name", "fs", "--dir", str(folder),
        "--model", tiny_folder, "--tools", ",".join(FILESYSTEM_TOOLS), timeout_s=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return InitRun(folder, "fs", done.stdout)
