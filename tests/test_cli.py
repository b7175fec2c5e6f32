"""The ``mcp-rl`` command line against real MCP servers: exit codes 0 (ok), 1 (tool failed), 2 (usage)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
import yaml
from conftest import run_cli
from typer.testing import CliRunner

from mcp_rl.cli import app

needs_time_server = pytest.mark.skipif(
    importlib.util.find_spec("mcp_server_time") is None, reason="mcp-server-time is not installed (dev extra)"
)
needs_search_server = pytest.mark.skipif(
    importlib.util.find_spec("tool_servers.search") is None, reason="tool_servers.search is not importable"
)


def last_line(stream: str) -> str:
    return stream.strip().splitlines()[-1]


@pytest.fixture
def time_config(tmp_path: Path) -> str:
    path = tmp_path / "time.json"
    path.write_text(json.dumps({"mcpServers": {"time": {"command": "mcp-server-time"}}}))
    return str(path)


@pytest.fixture
def echo_config(tmp_path: Path, echo_stdio: dict[str, object]) -> str:
    path = tmp_path / "echo.json"
    path.write_text(json.dumps({"mcpServers": {"echo": echo_stdio}}))
    return str(path)


# -- tools --------------------------------------------------------------------------------------------
@needs_time_server
def test_tools_list_shows_a_third_party_servers_tools(time_config: str) -> None:
    result = run_cli("tools", "list", "--config", time_config)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("time\n")
    assert "  get_current_time: Get current time in a specific timezone" in result.stdout
    assert "      timezone: string (required)" in result.stdout


@needs_time_server
def test_tools_list_json_gives_the_raw_schemas(time_config: str) -> None:
    result = run_cli("tools", "list", "--config", time_config, "--json")
    assert result.returncode == 0, result.stderr
    tools = {tool["name"]: tool for tool in json.loads(result.stdout)}
    assert tools["get_current_time"]["server"] == "time"
    assert tools["get_current_time"]["input_schema"]["required"] == ["timezone"]


@needs_time_server
def test_tools_call_prints_the_observation(time_config: str) -> None:
    result = run_cli("tools", "call", "time/get_current_time", '{"timezone": "UTC"}', "--config", time_config)
    assert result.returncode == 0, result.stderr
    assert "UTC" in result.stdout


def test_a_tool_error_exits_1_with_the_observation(echo_config: str) -> None:
    result = run_cli("tools", "call", "fail", '{"message": "the sky fell"}', "--config", echo_config)
    assert result.returncode == 1
    assert "Error (tool error)" in result.stdout and "the sky fell" in result.stdout


def test_arguments_the_schema_refuses_exit_1(echo_config: str) -> None:
    result = run_cli("tools", "call", "echo/echo", "{}", "--config", echo_config)
    assert result.returncode == 1
    assert "Error (bad arguments)" in result.stdout


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ('{"text": ', "arguments: not valid JSON (Expecting value at column 10)"),
        ('["hi"]', "arguments: expected a JSON object of parameter values"),
    ],
)
def test_bad_json_arguments_exit_2_with_one_line(echo_config: str, arguments: str, message: str) -> None:
    result = run_cli("tools", "call", "echo", arguments, "--config", echo_config)
    assert result.returncode == 2
    assert result.stderr.strip().startswith(message) and "\n" not in result.stderr.strip()


def test_unknown_tool_exits_2_naming_the_available_ones(echo_config: str) -> None:
    result = run_cli("tools", "call", "echo/nope", "{}", "--config", echo_config)
    assert result.returncode == 2
    assert last_line(result.stderr).startswith("unknown tool 'echo/nope'; available: echo, sleep")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["tools", "list"], "give exactly one of --recipe NAME or --config FILE.json"),
        (["tools", "list", "--config", "/no/such.json"], "/no/such.json: no such file"),
        (["tools", "list", "--recipe", "serch"], "unknown recipe 'serch' (did you mean search?)"),
        (
            ["tools", "list", "--recipe", "search", "--set", "rollout.max_turns=three"],
            "rollout.max_turns: expected an integer, got 'three'",
        ),
        (["tools", "call", "search", "{}", "--recipe", "search", "--set", "foo"], "--set foo: expected KEY"),
    ],
)
def test_configuration_errors_exit_2_with_one_line(args: list[str], message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.strip() == last_line(result.stderr) and message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_server_that_cannot_start_exits_2(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text(json.dumps({"mcpServers": {"broken": {"command": "no-such-command-for-mcp-rl"}}}))
    result = run_cli("tools", "list", "--config", str(path))
    assert result.returncode == 2
    assert last_line(result.stderr).startswith(
        "MCP server 'broken' (no-such-command-for-mcp-rl) failed to start"
    )
    assert "Traceback" not in result.stderr


@needs_search_server
def test_tools_list_and_call_from_the_search_recipe() -> None:
    listed = run_cli("tools", "list", "--recipe", "search")
    assert listed.returncode == 0, listed.stderr
    assert "search\n  search: " in listed.stdout and "query: string (required)" in listed.stdout
    called = run_cli("tools", "call", "search/search", '{"query": "Tregamen Congress"}', "--recipe", "search")
    assert called.returncode == 0, called.stderr
    assert "Doc 1(Title: " in called.stdout and "Tregamen Congress" in called.stdout


# -- serve --------------------------------------------------------------------------------------------
def test_serve_runs_a_shipped_server_with_its_own_arguments() -> None:
    result = run_cli("serve", "calculator", "--help")
    assert result.returncode == 0
    assert "usage: python -m tool_servers.calculator" in result.stdout and "--transport" in result.stdout


def test_serve_answers_mcp_over_stdio(tmp_path: Path) -> None:
    path = tmp_path / "calc.json"
    command = [sys.executable, "-m", "mcp_rl.cli", "serve", "calculator"]
    path.write_text(json.dumps({"mcpServers": {"calc": {"command": command[0], "args": command[1:]}}}))
    result = run_cli("tools", "call", "calculate", '{"expression": "6 * 7"}', "--config", str(path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "42"


def test_serve_unknown_name_exits_2() -> None:
    result = run_cli("serve", "serch")
    assert result.returncode == 2
    assert last_line(result.stderr) == (
        "unknown tool server 'serch' (did you mean search?); available: calculator, search"
    )


# -- recipes (in process: no servers start) -----------------------------------------------------------
runner = CliRunner()


def test_recipes_lists_names_and_descriptions() -> None:
    result = runner.invoke(app, ["recipes"])
    assert result.exit_code == 0
    lines = {line.split()[0]: line for line in result.stdout.splitlines()}
    assert {"search", "search-nq", "calculator"} <= set(lines)
    assert "fictional encyclopedia" in lines["search"]


def test_recipes_show_prints_the_resolved_recipe_as_yaml() -> None:
    result = runner.invoke(app, ["recipes", "show", "search", "--set", "rollout.max_turns=2"])
    assert result.exit_code == 0, result.output
    shown = yaml.safe_load(result.stdout)
    assert shown["name"] == "search" and shown["rollout"]["max_turns"] == 2
    assert shown["data"]["corpus"].endswith("fictional/corpus.jsonl")


def test_recipes_show_fields_prints_every_fields_help() -> None:
    result = runner.invoke(app, ["recipes", "show", "search", "--fields"])
    assert result.exit_code == 0, result.output
    assert "rollout.max_turns: int = 4\n      Most model turns per episode." in result.stdout


def test_recipes_show_a_bad_override_exits_2() -> None:
    result = runner.invoke(app, ["recipes", "show", "search", "--set", "trainer.learning_rat=1"])
    assert result.exit_code == 2
    assert result.stderr == "trainer.learning_rat: not a GRPOConfig field (did you mean learning_rate?)\n"


# -- prompt -------------------------------------------------------------------------------------------
def _echo_recipe(tmp_path: Path, echo_stdio: dict[str, object], model: str, **prompt: object) -> str:
    tasks = tmp_path / "tasks.csv"
    tasks.write_text("topic,expected\nalpha,alpha\nbeta,beta\n")
    recipe = {
        "model": {"name_or_path": model},
        "data": {"train": str(tasks), "answer_column": "expected"},
        "tools": {"mcpServers": {"echo": echo_stdio}},
        "parser": {"name": "tool_call"},
        "prompt": {"system": "Use the tools.", "user_template": "Repeat {topic}", **prompt},
        "rewards": [{"name": "exact_match"}],
    }
    path = tmp_path / "echo-tasks.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return str(path)


def test_prompt_prints_the_first_messages_and_their_token_count(
    tmp_path: Path, echo_stdio: dict[str, object], tiny_folder: str
) -> None:
    call = '<tool_call>{"name": "echo", "arguments": {"text": "hi"}}</tool_call>'
    few_shot = [{"role": "user", "content": "Repeat hi"}, {"role": "assistant", "content": call}]
    recipe = _echo_recipe(tmp_path, echo_stdio, tiny_folder, few_shot=few_shot)
    result = run_cli("prompt", "--recipe", recipe, "--row", "1")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    # The tiny ChatML template ignores tools=, so the parser describes them in the system prompt.
    assert "━━ tools: 5 tool(s), described in the system prompt by the tool_call parser" in out
    assert '"name": "echo"' in out and "Use the tools." in out
    assert f"━━ few-shot 2/2: assistant\n{call}\n" in out
    assert "━━ user (prompt.user_template)\nRepeat beta\n" in out  # row 1, not row 0
    templated = out.split("━━ chat-templated prompt: ")[1].split("\n━━ observation frame")[0]
    count, _, text = templated.partition(" tokens\n")
    assert text.endswith("<|im_start|>user\nRepeat beta<|im_end|>\n<|im_start|>assistant\n")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_folder)
    assert int(count) == len(tokenizer(text, add_special_tokens=False)["input_ids"])
    assert out.endswith(f"prompt tokens: {count}\n")
    assert "<|im_end|>\n<|im_start|>user\n<observation><|im_end|>\n<|im_start|>assistant\n" in out


def test_prompt_errors_name_the_row_and_the_columns(
    tmp_path: Path, echo_stdio: dict[str, object], tiny_folder: str
) -> None:
    recipe = _echo_recipe(tmp_path, echo_stdio, tiny_folder)
    result = run_cli("prompt", "--recipe", recipe, "--row", "2")
    assert result.returncode == 2
    assert last_line(result.stderr) == "--row 2: data.train has only 2 row(s); give --row 0..1"
    result = run_cli("prompt", "--recipe", recipe, "--set", "prompt.user_template=Say {word}")
    assert result.returncode == 2
    assert last_line(result.stderr).startswith("prompt.user_template: {word} is not a column of data.train (")
    assert last_line(result.stderr).endswith("its columns: topic, expected, golden_answers")


def test_train_and_eval_check_the_data_columns_before_anything_loads_or_is_written(
    tmp_path: Path, echo_stdio: dict[str, object]
) -> None:
    recipe = _echo_recipe(tmp_path, echo_stdio, str(tmp_path / "no-model-needed"))
    out = tmp_path / "run"
    for args in (["train", "-o", str(out)], ["eval", "--output", str(out / "eval.json")]):
        result = run_cli(*args, "--recipe", recipe, "--set", "prompt.user_template=Say {word}")
        assert result.returncode == 2, result.stderr
        assert last_line(result.stderr).startswith(
            "prompt.user_template: {word} is not a column of data.train ("
        )
        assert not out.exists()
