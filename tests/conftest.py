"""Shared fixtures: real MCP servers (stdio subprocesses, HTTP on 127.0.0.1) and tiny models."""

from __future__ import annotations

import inspect
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
ECHO_SERVER = str(ROOT / "tests" / "servers" / "echo.py")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


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


# -- tiny models and a small real search corpus ----------------------------------------------------------
SEARCH_EPISODE = [
    {"role": "user", "content": "Where does the fox live?"},
    {"role": "assistant", "content": "<search> fox </search>"},
    {"role": "user", "content": "<information>Doc 1(Title: Fox) The fox lives in Draskel.</information>"},
    {"role": "assistant", "content": "<answer> Draskel </answer>"},
]


def warm_up(model, tokenizer, conversations, steps: int = 120, lr: float = 3e-3) -> None:
    """A short supervised warm-up so a random tiny model writes real actions (tests need tool calls)."""
    import torch

    texts = [tokenizer.apply_chat_template(c, tokenize=False) for c in conversations]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()


TEST_SYSTEM = "Answer with the search tool."
TEST_QUESTIONS = ["Where does the fox live?", "Who founded the guild?", "In which year was the town founded?"]


def tiny_prompt_config():
    """Short prompts for tiny models: tool schemas go to the template (which ignores them), no few-shot."""
    from mcp_rl.configs import PromptConfig

    return PromptConfig(system=TEST_SYSTEM, tools_in="template")


@pytest.fixture(scope="session")
def searching_tiny_model():
    """A tiny Llama that answers any question with a ``<search>`` and then an ``<answer>``."""
    from mcp_rl.models import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    system = {"role": "system", "content": TEST_SYSTEM}
    conversations = [[system, {"role": "user", "content": q}, *SEARCH_EPISODE[1:]] for q in TEST_QUESTIONS]
    warm_up(model, tokenizer, conversations)
    return model, tokenizer


@pytest.fixture
def tiny_corpus(tmp_path: Path) -> Path:
    """A Search-R1 format corpus of a few invented passages."""
    import json

    passages = {
        "Fox": "The fox lives in Draskel, a town on the river Ober.",
        "Guild": "The Kessin Guild was founded by Velora Quint in 1842.",
        "Draskel": "Draskel is a town founded in 1701 by cartographers.",
        "Ober": "The Ober is a river that flows through Draskel and Morvane.",
    }
    path = tmp_path / "corpus.jsonl"
    with path.open("w") as out:
        for i, (title, text) in enumerate(passages.items()):
            out.write(json.dumps({"id": str(i), "contents": f'"{title}"\n{text}'}) + "\n")
    return path


@pytest.fixture
def search_entry(tiny_corpus: Path, tmp_path: Path) -> dict[str, object]:
    """An ``mcpServers`` entry for the real search tool server over stdio on ``tiny_corpus``."""
    return {
        "command": "python",
        "args": [
            "-m",
            "tool_servers.search",
            "--corpus",
            str(tiny_corpus),
            "--cache-dir",
            str(tmp_path / "cache"),
        ],
    }
