"""Bearer tokens, loopback-only defaults and DNS-rebinding protection, against real tool servers over HTTP.

Every server here listens on 127.0.0.1; no test sends traffic to any other address. The one test that asks
for a non-loopback bind does so without a token, which the server must refuse before it listens.
"""

from __future__ import annotations

import http.client
import json
import logging
import secrets
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

import pytest
from conftest import ROOT, free_port, start_http_server, stop
from tiny import TEST_QUESTIONS, searching_model, tiny_prompt_config

from mcp_rl.config.sections import RolloutConfig
from mcp_rl.env.environment import Environment
from mcp_rl.generation.base import TransformersGenerator
from mcp_rl.tools import BlockingToolPool, ToolPoolError
from mcp_rl.tools.server_config import ServerConfigError, parse_mcp_servers

TOKEN_ENV = "MCP_RL_SERVER_TOKEN"
# The protocol version is irrelevant to what is checked here (auth and Host checks run before MCP does);
# any version the SDK accepts lets the authorized request succeed.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}


@pytest.fixture(scope="module")
def token() -> str:
    return secrets.token_urlsafe(24)


@pytest.fixture(scope="module")
def calculator(token: str) -> Iterator[tuple[str, int]]:
    """The calculator over HTTP on 127.0.0.1, requiring ``token``: (url, port)."""
    port = free_port()
    process = start_http_server(["-m", "tool_servers.calculator"], port, env={TOKEN_ENV: token})
    try:
        yield f"http://127.0.0.1:{port}/mcp", port
    finally:
        stop(process)


def post(port: int, headers: dict[str, str]) -> tuple[int, str]:
    """A raw MCP ``initialize`` POST to 127.0.0.1 (no MCP client, so nothing adds or fixes headers)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        connection.request(
            "POST",
            "/mcp",
            body=json.dumps(INITIALIZE),
            headers={
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                **headers,
            },
        )
        response = connection.getresponse()
        return response.status, response.read(4096).decode(errors="replace")
    finally:
        connection.close()


def calculator_entry(url: str, env_var: str, **extra: object) -> dict[str, object]:
    return {"url": url, "headers": {"Authorization": f"Bearer ${{{env_var}}}"}, **extra}


# -- the bearer token ------------------------------------------------------------------------------------
def test_raw_request_needs_the_token(calculator, token):
    _, port = calculator
    status, body = post(port, {})
    assert status == 401 and "bearer token" in body
    assert post(port, {"Authorization": f"Bearer {token[:-1]}"})[0] == 401
    assert post(port, {"Authorization": token})[0] == 401, "the 'Bearer ' scheme is part of the check"
    status, body = post(port, {"Authorization": f"Bearer {token}"})
    assert status == 200 and '"serverInfo"' in body


def test_pool_sends_the_token_from_the_environment(calculator, token, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)  # every library's debug output too (httpx, the MCP client)
    url, _ = calculator
    monkeypatch.setenv("CALC_TOKEN", token)
    configs = parse_mcp_servers({"mcpServers": {"calc": calculator_entry(url, "CALC_TOKEN")}})
    assert configs[0].headers == {"Authorization": f"Bearer {token}"}, "${CALC_TOKEN} is expanded"
    with BlockingToolPool(configs) as pool:
        results = pool.call_many([("calculate", {"expression": f"{i} * 7"}) for i in range(5)])
        metrics = pool.metrics()
    assert [r.text for r in results] == [str(i * 7) for i in range(5)]
    assert metrics["tools/calculate/calls"] == 5 and metrics["tools/failures"] == 0
    for text in (repr(configs), str(configs), *map(repr, results), json.dumps(metrics)):
        assert token not in text
    assert "Authorization" in repr(configs[0]), "header names are shown, values are not"
    assert token not in caplog.text


def test_secret_in_env_and_headers_stays_out_of_repr(monkeypatch):
    monkeypatch.setenv("SOME_SECRET", "hunter2-abc")
    configs = parse_mcp_servers(
        {
            "local": {"command": "python", "args": ["-V"], "env": {"API_KEY": "${SOME_SECRET}"}},
            "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Api-Key": "${SOME_SECRET}"}},
        }
    )
    assert configs[0].env["API_KEY"] == "hunter2-abc" and configs[1].headers["X-Api-Key"] == "hunter2-abc"
    assert all("hunter2" not in repr(c) and "hunter2" not in str(c) for c in configs)


def test_unset_token_variable_is_a_config_error(monkeypatch):
    monkeypatch.delenv("NOT_EXPORTED_TOKEN", raising=False)
    with pytest.raises(
        ServerConfigError, match=r"mcpServers\.calc\.headers\.Authorization.*NOT_EXPORTED_TOKEN"
    ):
        parse_mcp_servers({"calc": calculator_entry("http://127.0.0.1:9/mcp", "NOT_EXPORTED_TOKEN")})


def start_with_wrong_token(url: str, token: str, monkeypatch) -> tuple[ToolPoolError, float]:
    monkeypatch.setenv("CALC_TOKEN", "wrong-" + token)
    configs = parse_mcp_servers({"calc": calculator_entry(url, "CALC_TOKEN", connectTimeout=20)})
    started = time.monotonic()
    with pytest.raises(ToolPoolError) as caught:
        BlockingToolPool(configs).start()
    return caught.value, time.monotonic() - started


def test_wrong_token_fails_to_start(calculator, token, monkeypatch, caplog):
    caplog.set_level(logging.DEBUG)
    url, _ = calculator
    error, elapsed = start_with_wrong_token(url, token, monkeypatch)
    assert elapsed < 10, "a rejected token is final: no waiting for the connect timeout"
    message = str(error)
    assert "'calc'" in message and url in message and "failed to start" in message
    assert token not in message and token not in caplog.text


def test_wrong_token_error_names_the_http_status(calculator, token, monkeypatch):
    url, _ = calculator
    error, _ = start_with_wrong_token(url, token, monkeypatch)
    assert "401" in str(error) and "Authorization" in str(error)


# -- loopback only without a token -----------------------------------------------------------------------
def nothing_listens(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.parametrize(
    ("host", "extra_args", "env_var"),
    [
        ("0.0.0.0", [], TOKEN_ENV),
        ("::", [], TOKEN_ENV),
        ("0.0.0.0", ["--token-env", "CALC_SERVER_SECRET"], "CALC_SERVER_SECRET"),
    ],
)
def test_non_loopback_bind_without_token_is_refused(host, extra_args, env_var, monkeypatch):
    # Unset and empty both count as "no token" (an empty token would accept "Bearer ").
    monkeypatch.delenv(TOKEN_ENV, raising=False)
    monkeypatch.setenv(env_var, "")
    port = free_port()
    command = [sys.executable, "-m", "tool_servers.calculator", "--transport", "http"]
    started = time.monotonic()
    finished = subprocess.run(
        [*command, "--host", host, "--port", str(port), *extra_args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,  # a server that did start would be killed here rather than hang the suite
    )
    assert finished.returncode == 2  # a configuration error (issue 11: it was 1)
    assert time.monotonic() - started < 20
    lines = [line for line in finished.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, finished.stderr
    assert "refusing to listen on" in lines[0] and host in lines[0] and env_var in lines[0]
    assert "serving MCP" not in finished.stderr and nothing_listens(port)


# -- DNS rebinding ---------------------------------------------------------------------------------------
def test_foreign_host_or_origin_is_rejected(calculator, token):
    _, port = calculator
    auth = {"Authorization": f"Bearer {token}"}
    # A page on evil.example whose name was re-pointed at 127.0.0.1 sends its own Host and Origin.
    status, body = post(port, {**auth, "Host": "evil.example"})
    assert status == 421 and "Invalid Host header" in body  # the SDK answers 421 Misdirected Request
    status, body = post(port, {**auth, "Host": f"evil.example:{port}"})
    assert status == 421
    status, body = post(port, {**auth, "Origin": "http://evil.example"})
    assert status == 403 and "Invalid Origin header" in body
    # Without the token the request is turned away even earlier, by the bearer check.
    assert post(port, {"Host": "evil.example"})[0] == 401
    assert post(port, {**auth, "Host": f"localhost:{port}", "Origin": f"http://localhost:{port}"})[0] == 200


# -- the secret never reaches the model ------------------------------------------------------------------
@pytest.fixture(scope="module")
def searching_tiny_model() -> tuple[object, object]:
    # tests/tiny.py's model (warmed up on one thread: seconds, where conftest's takes up to a minute on a
    # loaded 2-core machine); the same recipe, so the same searching behaviour.
    return searching_model(seed=0)


@pytest.fixture
def search_http(
    tiny_corpus: Path, tmp_path: Path, token: str
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """The real search server over HTTP on 127.0.0.1 with a token: (url, process)."""
    port = free_port()
    args = ["-m", "tool_servers.search", "--corpus", str(tiny_corpus), "--cache-dir", str(tmp_path / "cache")]
    process = start_http_server(args, port, env={TOKEN_ENV: token})
    try:
        yield f"http://127.0.0.1:{port}/mcp", process
    finally:
        stop(process)


@pytest.fixture
def one_thread() -> Iterator[None]:
    # A tiny model's matmuls gain nothing from threads, and on a loaded machine spinning OpenMP threads
    # made generation several times slower.
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def test_secret_stays_out_of_trajectories_and_logs(
    searching_tiny_model, search_http, token, monkeypatch, caplog, one_thread
):
    caplog.set_level(logging.DEBUG)
    model, tokenizer = searching_tiny_model
    url, process = search_http
    monkeypatch.setenv("SEARCH_TOKEN", token)
    # A short call timeout: after the server is stopped, calls must come back as failures quickly.
    entry = {"url": url, "headers": {"Authorization": "Bearer ${SEARCH_TOKEN}"}, "timeout": 2}
    configs = parse_mcp_servers({"search": entry})
    with BlockingToolPool(configs, ping_interval_s=0.5) as pool:
        environment = Environment(
            tokenizer,
            TransformersGenerator(model, tokenizer),
            pool=pool,
            prompt=tiny_prompt_config(),
            rollout=RolloutConfig(max_turns=2, max_new_tokens=24),
        )
        rows = [{"question": q} for q in TEST_QUESTIONS]
        served = environment.rollout_rows(rows, greedy=True)
        stop(process)  # now the calls fail, and failure messages are where a header could leak
        failing = environment.rollout_rows(rows, greedy=True)
    calls = [c for t in served for c in t.calls]
    assert calls and all(c.ok for c in calls), "the warmed-up model should search, with the token accepted"
    failed = [c for t in failing for c in t.calls]
    assert failed and not any(c.ok for c in failed)
    for trajectory in [*served, *failing]:
        assert token not in json.dumps(asdict(trajectory), default=str)
        assert token not in tokenizer.decode(trajectory.prompt_ids + trajectory.completion_ids)
    assert "reconnecting" in caplog.text, "the pool should have logged the lost server"
    assert token not in caplog.text
