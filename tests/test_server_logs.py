"""Tool servers' stderr: to a capped, rotating log; the telling lines of a failed start in its error;
secrets kept out of the MCP SDK's own log records; a prompt past the model's context refused up front."""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, free_port
from tiny_models import tiny_model_and_tokenizer

from mcp_rl.config.sections import ParserConfig, Recipe, RolloutConfig, ToolsConfig
from mcp_rl.env.environment import Environment
from mcp_rl.errors import ConfigError
from mcp_rl.tools import ToolPool, ToolPoolError
from mcp_rl.tools.server_config import parse_mcp_servers
from mcp_rl.tools.server_logs import MAX_LINE_CHARS, TAIL_LINES, ServerLog, StderrCapture

FLOOD_SERVER = """
import sys, threading
from mcp.server.mcpserver import MCPServer

server = MCPServer("flood")

def flood() -> None:
    sys.stderr.write("y" * 100_000)  # one "line" with no newline at all
    line = "x" * 200 + "\\n"
    while True:
        sys.stderr.write(line * 50)

@server.tool()
def echo(text: str) -> str:
    \"\"\"Return the text.\"\"\"
    return text

threading.Thread(target=flood, daemon=True).start()
server.run("stdio")
"""

CHATTY_SERVER = """
import sys
from mcp.server.mcpserver import MCPServer

server = MCPServer("chatty")

@server.tool()
def echo(text: str) -> str:
    \"\"\"Return the text.\"\"\"
    return text

print("chatty: warming up the index", file=sys.stderr, flush=True)
server.run("stdio")
"""

BIG_TOOL_SERVER = """
from mcp.server.mcpserver import MCPServer

server = MCPServer("big")

def lookup(query: str) -> str:
    return query

lookup.__doc__ = "Look a part up in the catalogue. " + "Every part of the catalogue, described. " * {repeats}
server.tool()(lookup)
server.run("stdio")
"""


def script(tmp_path: Path, name: str, text: str) -> dict[str, object]:
    path = tmp_path / f"{name}.py"
    path.write_text(textwrap.dedent(text))
    return {"command": "python", "args": [str(path)], "cwd": str(ROOT)}


async def start_error(servers: dict[str, object], **options: object) -> str:
    with pytest.raises(ToolPoolError) as raised:
        async with ToolPool(parse_mcp_servers(servers), **options):
            pass
    return str(raised.value)


# -- a failed start says why --------------------------------------------------------------------------
@pytest.mark.network
async def test_mistyped_npm_package_names_npms_own_error() -> None:
    if shutil.which("npx") is None or shutil.which("node") is None:
        pytest.skip("npx (Node.js) is not installed")
    entry = {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem-doesnotexist", "/tmp"]}
    message = await start_error({"fs": entry})
    assert message.startswith("MCP server 'fs' (")
    assert re.search(r"its stderr ended: .*npm (error|ERR!)", message), message
    if "E404" in message:  # the registry answered (offline, npm names the network error instead)
        assert "404 Not Found" in message


async def test_python_server_that_exits_at_start_shows_its_last_lines(tmp_path: Path) -> None:
    crashing = """
    import sys
    print("loading settings from /etc/nowhere.toml", file=sys.stderr)
    raise SystemExit("settings file /etc/nowhere.toml does not exist")
    """
    log = ServerLog(tmp_path / "servers.log")
    message = await start_error({"crashing": script(tmp_path, "crashing", crashing)}, errlog=log)
    log.close()
    assert "failed to start" in message
    assert "its stderr ended: loading settings from /etc/nowhere.toml | settings file" in message
    assert f"(all of it in {log.path})" in message
    assert "\n" not in message, "one line, as the command line prints it"
    assert "[crashing] settings file /etc/nowhere.toml does not exist" in log.path.read_text()


async def test_a_long_traceback_keeps_its_first_line_and_its_exception(tmp_path: Path) -> None:
    nested = """
    def load(depth):
        if depth == 0:
            raise ValueError("corpus /data/c.jsonl has no 'contents' field")
        load(depth - 1)

    for i in range(20):
        print(f"registering tool {i}", file=__import__("sys").stderr)
    load(12)
    """
    message = await start_error({"deep": script(tmp_path, "deep", nested)})
    said = message.split("its stderr ended: ", 1)[1].split(" | ")
    assert len(said) <= 8 and said[0] == "Traceback (most recent call last):"
    assert said[-1] == "ValueError: corpus /data/c.jsonl has no 'contents' field"


async def test_http_server_that_exits_before_listening_shows_its_stderr(tmp_path: Path) -> None:
    entry = script(tmp_path, "refusing", "raise SystemExit('port 1 is not allowed here')")
    entry["url"] = f"http://127.0.0.1:{free_port()}/mcp"
    message = await start_error({"web": entry})
    assert "before listening" in message and "port 1 is not allowed here" in message


async def test_a_server_secret_in_its_stderr_is_redacted(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("LEAKY_TOKEN", "tok-3f9a1c77")
    entry = script(tmp_path, "leaky", "import sys; sys.exit('bad token: ' + sys.argv[1])")
    entry["args"] = [*entry["args"], "${LEAKY_TOKEN}"]
    log = ServerLog(tmp_path / "servers.log")
    message = await start_error({"leaky": entry}, errlog=log)
    log.close()
    assert "bad token: ***" in message and "tok-3f9a1c77" not in message
    assert "tok-3f9a1c77" not in log.path.read_text()


# -- a flood is drained, capped and rotated -----------------------------------------------------------
async def test_stderr_flood_neither_blocks_the_server_nor_grows_the_log(tmp_path: Path) -> None:
    cap = 256 * 1024
    log = ServerLog(tmp_path / "tool_servers.log", max_bytes=cap, backups=1)
    async with ToolPool(
        parse_mcp_servers({"flood": script(tmp_path, "flood", FLOOD_SERVER)}), errlog=log
    ) as pool:
        results = [await pool.call("echo", {"text": f"call {i}"}) for i in range(40)]
    log.close()
    assert all(result.ok for result in results), [r.text for r in results if not r.ok]
    files = sorted(tmp_path.glob("tool_servers.log*"))
    assert [f.name for f in files] == ["tool_servers.log", "tool_servers.log.1"], "rotated, one backup kept"
    assert all(f.stat().st_size <= cap + 128 * 1024 for f in files), [f.stat().st_size for f in files]


def test_output_without_newlines_is_logged_whole_while_memory_stays_bounded(tmp_path: Path) -> None:
    log = ServerLog(tmp_path / "s.log")
    capture = StderrCapture("noisy", log)
    code = "import sys; sys.stderr.write('z' * 3_000_000); sys.stderr.write('\\nlast words\\n')"
    subprocess.run([sys.executable, "-c", code], stderr=capture.stream, check=True, timeout=60)
    assert capture.wait(30), "drained to the end once the process exited"
    log.close()
    assert log.path.read_text().count("z") == 3_000_000
    assert len(capture.tail) <= TAIL_LINES and all(len(line) <= MAX_LINE_CHARS for line in capture.tail)
    assert capture.summary().endswith("last words")


def test_server_log_rotation_keeps_the_newest_lines(tmp_path: Path) -> None:
    with ServerLog(tmp_path / "s.log", max_bytes=1000, backups=2) as log:
        for i in range(400):
            log.write(f"line {i:04d}\n")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["s.log", "s.log.1", "s.log.2"]
    assert (tmp_path / "s.log").read_text().endswith("line 0399\n")
    assert all(p.stat().st_size <= 1000 for p in tmp_path.iterdir())


# -- the command line ---------------------------------------------------------------------------------
def run_tools_cli(tmp_path: Path, servers: dict[str, object], *args: str) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "servers.json"
    config.write_text(json.dumps({"mcpServers": servers}))
    return subprocess.run(
        [sys.executable, "-m", "mcp_rl.cli", "tools", "list", "--config", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "HF_HUB_OFFLINE": "1"},
    )


def test_tools_list_keeps_server_chatter_in_the_log_and_prints_its_path(tmp_path: Path) -> None:
    result = run_tools_cli(tmp_path, {"chatty": script(tmp_path, "chatty", CHATTY_SERVER)})
    assert result.returncode == 0, result.stderr
    log = tmp_path / "cache" / "mcp-rl" / "logs" / "tools.tool_servers.log"
    assert "warming up the index" not in result.stderr + result.stdout
    assert f"tool servers' stderr: {log}" in result.stderr
    assert "[chatty] chatty: warming up the index" in log.read_text()


def test_tools_list_start_failure_is_one_line_with_the_servers_words(tmp_path: Path) -> None:
    broken = script(tmp_path, "broken", "raise SystemExit('cannot open database /nowhere/x.db')")
    result = run_tools_cli(tmp_path, {"broken": broken})
    assert result.returncode == 2
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("MCP server 'broken' (") and "cannot open database /nowhere/x.db" in last


# -- secrets in the SDK's own DEBUG records -----------------------------------------------------------
async def test_sdk_debug_records_hide_url_password_and_query_secret(caplog, monkeypatch) -> None:
    monkeypatch.setenv("SEARCH_KEY", "k-1b2c3d4e5f")
    url = f"http://reader:pa55word-x@127.0.0.1:{free_port()}/mcp?api_key=${{SEARCH_KEY}}&token=literal-t0ken"
    caplog.set_level(logging.DEBUG, logger="mcp")
    caplog.set_level(logging.DEBUG, logger="httpx2")
    message = await start_error({"remote": {"url": url, "connectTimeout": 5}})
    logged = "\n".join(record.getMessage() for record in caplog.records)
    assert "Connecting to StreamableHTTP endpoint" in logged, "the SDK's DEBUG record is there"
    for secret in ("pa55word-x", "k-1b2c3d4e5f", "literal-t0ken"):
        assert secret not in logged and secret not in message
    assert "reader:***@" in logged and "api_key=***" in logged and "token=***" in logged


# -- prompt against the model's context ---------------------------------------------------------------
def big_tool_recipe(tmp_path: Path, repeats: int) -> Recipe:
    entry = script(tmp_path, "big", BIG_TOOL_SERVER.format(repeats=repeats))
    return Recipe(
        parser=ParserConfig(name="tool_call"),
        tools=ToolsConfig(mcpServers={"catalogue": entry}),
        rollout=RolloutConfig(max_completion_tokens=64),
    )


def test_a_tool_description_past_the_models_context_is_refused_naming_the_tool(tmp_path: Path) -> None:
    model, tokenizer = tiny_model_and_tokenizer()
    context = model.config.max_position_embeddings
    environment = Environment.from_recipe(big_tool_recipe(tmp_path, repeats=300))
    with pytest.raises(ConfigError) as raised:
        environment.use_model(model, tokenizer)
    assert environment.closed and environment.pool.portal is None, "a model that cannot read it: servers stop"
    message = str(raised.value)
    assert f"the model reads at most {context} tokens" in message
    assert "tool catalogue/lookup's description" in message
    assert "mcpServers.catalogue.excludeTools: [lookup]" in message and "\n" not in message
    # The same server with a short description fits, and the Environment is built.
    with Environment.from_recipe(big_tool_recipe(tmp_path, repeats=2)) as environment:
        environment.use_model(model, tokenizer)
        assert [tool.name for tool in environment.prompts.tools] == ["lookup"]
