"""``includeTools``/``excludeTools``: only the allowed tools reach the prompt and can be called; a call to
another comes back as an observation the model can learn from. Real servers: ours over stdio, and the
third-party filesystem server through ``npx`` as its README configures it."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import yaml
from conftest import FILESYSTEM, FILESYSTEM_TOOLS, SQLITE_SERVER, InitRun, run_cli

from mcp_rl.errors import ServerConfigError
from mcp_rl.tools import FailureKind, ToolPool, ToolPoolError
from mcp_rl.tools.server_config import parse_mcp_servers, parse_server


def sqlite_servers(db: Path, **lists: list[str]) -> dict[str, dict[str, object]]:
    return {"db": {"command": sys.executable, "args": [SQLITE_SERVER, "--db", str(db)], **lists}}


@pytest.mark.anyio
async def test_include_tools_keeps_the_others_out_and_refuses_their_calls(tmp_path: Path) -> None:
    async with ToolPool(parse_mcp_servers(sqlite_servers(tmp_path / "a.db", includeTools=["sql"]))) as pool:
        assert [tool.name for tool in pool.tools] == ["sql"]
        refused = await pool.call("pid", {})
        by_server = await pool.call("db/pid", {})
        allowed = await pool.call("sql", {"query": "SELECT 1 + 1"})
        typo = await pool.call("sqll", {"query": "SELECT 1"})
        metrics = pool.metrics()
    assert refused.failure is FailureKind.UNKNOWN_TOOL and by_server.failure is FailureKind.UNKNOWN_TOOL
    assert refused.text == "Error (unknown tool): 'pid' is not enabled for this task; available: sql"
    assert "'db/pid' is not enabled for this task" in by_server.text
    assert allowed.ok and json.loads(allowed.text) == [[2]]
    assert typo.text.startswith("Error (unknown tool): no tool named 'sqll'")  # not a withheld tool
    assert metrics["tools/pid/failures/unknown_tool"] == 1.0


@pytest.mark.anyio
async def test_exclude_tools_withholds_and_wins_over_include(tmp_path: Path) -> None:
    servers = sqlite_servers(tmp_path / "a.db", includeTools=["sql", "pid"], excludeTools=["sql"])
    async with ToolPool(parse_mcp_servers(servers)) as pool:
        assert [tool.name for tool in pool.tools] == ["pid"]
        result = await pool.call("sql", {"query": "CREATE TABLE t (x)"})
        assert result.failure is FailureKind.UNKNOWN_TOOL and "available: pid" in result.text
    # The refused statement never reached the database: a fresh pool on it with every tool finds no table.
    async with ToolPool(parse_mcp_servers(sqlite_servers(tmp_path / "a.db"))) as pool:
        tables = await pool.call("sql", {"query": "SELECT name FROM sqlite_master"})
    assert tables.ok and json.loads(tables.text) == []


@pytest.mark.anyio
async def test_an_allow_list_naming_a_tool_the_server_lacks_fails_at_start(tmp_path: Path) -> None:
    servers = sqlite_servers(tmp_path / "a.db", includeTools=["sql", "query"])
    with pytest.raises(
        ToolPoolError,
        match=r"mcpServers\.db\.includeTools: the server has no tool\(s\) query; "
        r"its tools: pid, sql",
    ):
        async with ToolPool(parse_mcp_servers(servers)):
            pass


def test_a_bad_allow_list_is_one_line_naming_the_field() -> None:
    for value in ("sql", [1], [""]):
        with pytest.raises(
            ServerConfigError, match=r"mcpServers\.db\.includeTools must be a list of tool names"
        ):
            parse_server("db", {"command": "python", "includeTools": value})
    assert parse_server("db", {"command": "python", "excludeTools": ["x"]}).exclude_tools == ["x"]
    assert parse_server("db", {"command": "python"}).include_tools is None  # no list: every tool


# -- the filesystem server (third party, through npx) ----------------------------------------------------
def test_filesystem_server_from_init_to_a_state_checked_rollout(
    tmp_path: Path,
    sandbox: Path,
    tiny_folder: str,
    filesystem_init: InitRun,
) -> None:
    # init with the README's --tools (run once for the session: conftest's filesystem_init).
    said = filesystem_init.stdout
    assert f'few-shot: list_directory({{"path": "{sandbox}"}}) called' in said  # read-only: the folder
    assert "few-shot: write_file not called" in said  # a writing tool is never guessed for
    assert "warning: fs: write_file declares no readOnlyHint" in said
    assert f'"${{episode.dir}}/sandbox" in place of {sandbox}' in said
    cost = re.search(r"cost: prompt ([\d,]+) tokens \(([\d,]+) of them the 3 tool schema\(s\)\)", said)
    assert cost and 0 < int(cost[2].replace(",", "")) < int(cost[1].replace(",", "")), said
    assert "min a step on this machine" in said  # measured on the tiny model
    recipe_path = filesystem_init.copy_to(tmp_path)
    recipe = yaml.safe_load(recipe_path.read_text())
    entry = recipe["tools"]["mcpServers"]["fs"]
    assert entry["includeTools"] == FILESYSTEM_TOOLS
    assert recipe["rewards"][0]["name"] == "fs_rewards.py:state_check"

    # Narrowed to two tools in the recipe: only those two schemas reach the prompt.
    entry["includeTools"] = ["list_directory", "write_file"]
    recipe_path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    prompt = run_cli("prompt", "--recipe", str(recipe_path), "--model", tiny_folder, timeout_s=300)
    assert prompt.returncode == 0, prompt.stderr[-3000:]
    assert "2 tool" in prompt.stdout and '"write_file"' in prompt.stdout
    assert "read_text_file" not in prompt.stdout and "move_file" not in prompt.stdout

    # The advice applied: each episode on its own copy of the sandbox; the reward checks that copy.
    entry.update(
        scope="episode", args=["-y", FILESYSTEM, "${episode.dir}/sandbox"], setup=[{"copy": str(sandbox)}]
    )
    recipe["rollout"]["max_completion_tokens"] = 256  # the tiny model reads 2,048 tokens at most
    recipe_path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    (tmp_path / "fs.tasks.jsonl").write_text(
        json.dumps({"task": "Which file is in the folder?", "answer": "notes.txt"}) + "\n"
        + json.dumps({"task": "Is there a file named absent.txt?", "answer": "absent.txt"}) + "\n"
    )  # fmt: skip
    shown = run_cli(
        "rollout", "--recipe", str(recipe_path), "--n", "2", "--model", tiny_folder, timeout_s=300
    )
    assert shown.returncode == 0, shown.stderr[-3000:]
    scores = re.findall(r"rewards: state_check ([\d.]+|-)", shown.stdout)
    # 1.00 only if the check listed the episode's copy: the instance refuses paths outside its own folder.
    assert scores == ["1.00", "0.00"], shown.stdout[-3000:]
    assert sorted(p.name for p in sandbox.iterdir()) == ["notes.txt"]  # shared with other tests: untouched
