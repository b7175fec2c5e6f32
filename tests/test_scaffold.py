"""`mcp-rl init`: real MCP servers → a recipe whose few-shot turns are real calls, which loads and runs."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import ECHO_SERVER, run_cli

from mcp_rl.config.recipe import load_recipe
from mcp_rl.env.parsers import build_parser
from mcp_rl.scaffold import (
    ExampleCall,
    ScaffoldError,
    choose_parser,
    episode_scope_advice,
    example_arguments,
    few_shot_messages,
    format_call,
    read_only_arguments,
    scaffold,
    server_from_command,
)
from mcp_rl.tools import ToolSpec


def _tool(name: str, properties: dict[str, Any], required: list[str], *, read_only: bool = False) -> ToolSpec:
    schema = {"type": "object", "properties": properties, "required": required}
    return ToolSpec(
        name=name, server="s", remote_name=name, description="", input_schema=schema, read_only=read_only
    )


def test_example_arguments_come_from_the_schema_only() -> None:
    schema = {
        "type": "object",
        "properties": {
            "city": {"type": "string", "examples": ["Draskel", "Ober"]},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
            "days": {"type": "integer", "default": 3},
            "expression": {"type": "string", "description": "An expression, e.g. '(3 + 4) * 2'."},
            "limit": {"type": "integer", "description": "At most this many, e.g. '5'."},
            "where": {
                "type": "object",
                "properties": {"lat": {"type": "number", "example": 1.5}},
                "required": ["lat"],
            },
            "verbose": {"type": "boolean"},  # optional, nothing to take: left out
        },
        "required": ["city", "units", "days", "expression", "limit", "where"],
    }
    assert example_arguments(schema) == {
        "city": "Draskel",
        "units": "metric",
        "days": 3,
        "expression": "(3 + 4) * 2",
        "limit": 5,
        "where": {"lat": 1.5},
    }
    assert (
        example_arguments(
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
        )
        is None
    )
    assert example_arguments({"type": "object", "properties": {}}) == {}


def test_the_parser_fits_the_tools() -> None:
    search = _tool("search", {"query": {"type": "string"}}, ["query"])
    assert choose_parser([search]) == ("tags", {"tools": {"search": {"tool": "search", "argument": "query"}}})
    structured = _tool("forecast", {"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"])
    assert choose_parser([search, structured]) == ("tool_call", {})
    assert choose_parser([_tool("pid", {}, [])]) == ("tool_call", {})
    assert choose_parser([_tool("bad name!", {"q": {"type": "string"}}, ["q"])]) == ("tool_call", {})


def test_calls_are_written_in_the_parsers_own_format_and_parse_back() -> None:
    json_parser = build_parser("tool_call")
    assert format_call(json_parser, "add", {"a": 1, "b": [2]}) == (
        '<tool_call>{"name": "add", "arguments": {"a": 1, "b": [2]}}</tool_call>'
    )
    tags = build_parser("tags", tools={"calc": {"tool": "calculate", "argument": "expression"}})
    assert format_call(tags, "calculate", {"expression": "1+1"}) == "<calc> 1+1 </calc>"
    with pytest.raises(ValueError, match="no tag for calculate"):
        format_call(tags, "calculate", {"expression": "1", "digits": 2})
    messages = few_shot_messages(tags, [ExampleCall("calculate", {"expression": "1+1"}, "2")])
    assert messages == [
        {"role": "user", "content": 'Use calculate with {"expression": "1+1"} and report what it returns.'},
        {"role": "assistant", "content": "<calc> 1+1 </calc>"},
        {"role": "user", "content": "\n\n<information>2</information>\n\n"},
        {"role": "assistant", "content": "<answer> 2 </answer>"},
    ]


def test_server_from_command_names_the_server_after_its_script() -> None:
    assert server_from_command("python -m tool_servers.calculator") == (
        "calculator",
        {"command": "python", "args": ["-m", "tool_servers.calculator"]},
    )
    assert server_from_command("node build/index.js --port 3", "weather")[0] == "weather"
    assert server_from_command("python /x/echo.py")[0] == "echo"


def test_init_on_the_echo_server_writes_a_recipe_that_rolls_out(tmp_path: Path, tiny_folder: str) -> None:
    servers = {"mcpServers": {"echo": {"command": sys.executable, "args": [ECHO_SERVER]}}}
    config = tmp_path / "servers.json"
    config.write_text(json.dumps(servers))
    result = run_cli(
        "init", "--config", str(config), "--dir", str(tmp_path), "--timeout", "1", "--model", tiny_folder
    )
    assert result.returncode == 0, result.stderr
    assert "echo not called: no example, default or enum for its required parameter(s) text" in result.stdout
    assert "hang not called: its call failed (timeout" in result.stdout
    # None of the echo tools declares readOnlyHint, none can check state: the advice, no skeleton.
    assert "warning: echo: echo, sleep, hang, fail, pid declare no readOnlyHint" in result.stdout
    assert "no read-only tool could be called to check what an episode wrote" in result.stdout
    assert not (tmp_path / "echo_rewards.py").exists()
    assert re.search(r"cost: prompt [\d,]+ tokens \([\d,]+ of them the 5 tool schema\(s\)\)", result.stdout)
    text = (tmp_path / "echo.yaml").read_text()
    assert "# few-shot: sleep has no example call" in text
    recipe = load_recipe(str(tmp_path / "echo.yaml"))
    assert recipe.tools.mcpServers == servers["mcpServers"]  # pasted unchanged
    assert recipe.parser.name == "tool_call" and recipe.data.answer_column == "answer"
    call, observation = recipe.prompt.few_shot[1]["content"], recipe.prompt.few_shot[2]["content"]
    assert call == '<tool_call>{"name": "pid", "arguments": {}}</tool_call>'
    pid = observation.removeprefix("<tool_response>\n").removesuffix("\n</tool_response>")
    assert pid.isdigit()  # the real server's answer
    rows = [json.loads(line) for line in (tmp_path / "echo.tasks.jsonl").read_text().splitlines()]
    assert (
        rows[0] == {"task": "Use pid with {} and report what it returns.", "answer": pid} and len(rows) == 2
    )
    shown = run_cli("rollout", "--recipe", str(tmp_path / "echo.yaml"), "--n", "2", "--model", tiny_folder)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "━━ episode 2: TODO: a task your tools help solve" in shown.stdout  # the template row
    assert "━━ episode 1: Use pid with {} and report what it returns." in shown.stdout
    again = run_cli("init", "--config", str(config), "--dir", str(tmp_path))
    assert (
        again.returncode == 2
        and "echo.yaml exists; pick another --name or --dir, or pass --force" in again.stderr
    )


def test_init_on_the_calculator_uses_tags_and_a_real_result(tmp_path: Path, tiny_folder: str) -> None:
    result = run_cli(
        "init", "--server", "python -m tool_servers.calculator", "--dir", str(tmp_path), "--no-measure"
    )
    assert result.returncode == 0, result.stderr
    path = tmp_path / "calculator.yaml"
    recipe = load_recipe(str(path))
    assert recipe.parser.name == "tags" and recipe.tools.mcpServers == {
        "calculator": {"command": "python", "args": ["-m", "tool_servers.calculator"]}
    }
    assert [m["content"] for m in recipe.prompt.few_shot[1:]] == [
        "<calculate> (3 + 4) * 2^10 / 7 </calculate>",
        "\n\n<information>1024</information>\n\n",
        "<answer> 1024 </answer>",
    ]
    shown = run_cli("rollout", "--recipe", str(path), "--n", "2", "--model", tiny_folder)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "━━ episode 2: TODO: a task your tools help solve" in shown.stdout


def test_a_read_only_tool_gets_the_servers_folder_for_a_path_and_a_writing_one_never(tmp_path: Path) -> None:
    path = {"path": {"type": "string"}}
    assert read_only_arguments(_tool("ls", path, ["path"], read_only=True), [str(tmp_path)]) == {
        "path": str(tmp_path)
    }
    assert read_only_arguments(_tool("rm", path, ["path"]), [str(tmp_path)]) is None  # may write
    text = {"text": {"type": "string"}}  # not a path: nothing to take
    assert read_only_arguments(_tool("grep", text, ["text"], read_only=True), [str(tmp_path)]) is None
    assert read_only_arguments(_tool("ls", path, ["path"], read_only=True), []) is None


def test_the_episode_scope_advice_names_the_writing_tools_and_the_folder(tmp_path: Path) -> None:
    tools = [_tool("ls", {}, [], read_only=True), _tool("write", {}, []), _tool("move", {}, [])]
    entry = {"command": "npx", "args": ["-y", "server-filesystem", str(tmp_path)]}
    advice = episode_scope_advice("s", entry, tools)
    assert advice is not None and advice.startswith("s: write, move declare no readOnlyHint")
    assert (
        f'"${{episode.dir}}/{tmp_path.name}" in place of {tmp_path}, setup: [{{copy: {tmp_path}}}]' in advice
    )
    assert episode_scope_advice("s", {**entry, "scope": "episode"}, tools) is None  # already per episode
    assert episode_scope_advice("s", entry, tools[:1]) is None  # read-only tools only


def test_init_tools_names_an_unknown_tool_and_keeps_the_others_out(tmp_path: Path) -> None:
    servers = {"echo": {"command": sys.executable, "args": [ECHO_SERVER]}}
    with pytest.raises(ScaffoldError, match="--tools: no tool named 'nope'; the servers have: echo, sleep"):
        scaffold(servers, "echo", tmp_path, tools=["pid", "nope"], measure=False)
    assert not (tmp_path / "echo.yaml").exists()
    with pytest.raises(ScaffoldError, match="--tools: name at least one tool"):
        scaffold(servers, "echo", tmp_path, tools=[], measure=False)
    result = scaffold(servers, "echo", tmp_path, tools=["pid"], measure=False)
    recipe = load_recipe(str(result.recipe_path))
    assert recipe.tools.mcpServers["echo"]["includeTools"] == ["pid"]
    assert [call.tool for call in result.calls] == ["pid"] and not result.skipped
    assert "sleep" not in json.dumps(recipe.prompt.few_shot)
