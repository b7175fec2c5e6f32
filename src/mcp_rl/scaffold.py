"""``mcp-rl init``: MCP servers → a starting recipe whose few-shot episodes are real calls of their tools.

The steps are plain functions, each usable on its own:

* :func:`example_arguments`: a tool's input schema → arguments taken from its examples, defaults, enums,
  constants or an ``e.g. '...'`` in a parameter's description (``None`` when a required one has none);
* :func:`choose_parser`: the tools → the parser that fits (one tag per tool when every tool takes a single
  string, JSON tool calls otherwise);
* :func:`format_call` / :func:`few_shot_messages`: real calls → chat turns written by the chosen parser's own
  format, each checked to parse back to the same call;
* :func:`recipe_dict` and :func:`task_rows`: everything → a recipe mapping and template task rows;
* :func:`scaffold`: connect, call each tool once, write ``NAME.yaml`` and ``NAME.tasks.jsonl``.

The recipe is written with :func:`mcp_rl.recipe.recipe_to_yaml` and checked with ``recipe_from_dict``, so it
loads as written. Only tools whose arguments can be derived are called: a call can have side effects, so
nothing is invented for a parameter without an example.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from mcp_rl.configs import Recipe, validate_config
from mcp_rl.errors import ConfigError
from mcp_rl.parsers import Parser, TagParser, ToolCall, ToolCallParser, build_parser
from mcp_rl.pool import BlockingToolPool, ToolSpec
from mcp_rl.recipe import recipe_from_dict, recipe_to_yaml
from mcp_rl.server_config import parse_mcp_servers

__all__ = [
    "ExampleCall",
    "Scaffold",
    "ScaffoldError",
    "choose_parser",
    "example_arguments",
    "example_value",
    "few_shot_messages",
    "format_call",
    "missing_parameters",
    "recipe_dict",
    "scaffold",
    "server_from_command",
    "task_rows",
]

_MISSING = object()
# "e.g. '(3 + 4) * 2'", "for example: \"Paris\"", "such as `x`": the first quoted example in a description.
_DESCRIBED_EXAMPLE = re.compile(
    r"(?:e\.g\.|for example|for instance|such as|example:)\s*:?\s*(['\"`])(.+?)\1", re.IGNORECASE
)
_TEXT_TYPES = ("string",)
_ANSWER_CHARS = 120
TASK_COLUMN, ANSWER_COLUMN = "task", "answer"
PLACEHOLDER_ROW = {
    TASK_COLUMN: "TODO: a task your tools help solve",
    ANSWER_COLUMN: "TODO: its reference answer",
}
SYSTEM_PROMPT = "Solve the task with the tools, one call at a time; then give the final answer."


class ScaffoldError(ConfigError):
    """``mcp-rl init`` cannot write a recipe: no tools, files already there, a bad server command."""


@dataclass(frozen=True)
class ExampleCall:
    """One real call of a tool: what was sent and what came back."""

    tool: str
    arguments: dict[str, Any]
    result: str


@dataclass
class Scaffold:
    """What :func:`scaffold` wrote and why some tools have no example."""

    recipe_path: Path
    tasks_path: Path
    parser: str
    calls: list[ExampleCall] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # tool -> why it was not called


# -- schema → arguments -------------------------------------------------------------------------------
def _types(schema: Mapping[str, Any]) -> list[str]:
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) else [k for k in kind or [] if isinstance(k, str)]


def _from_description(schema: Mapping[str, Any]) -> Any:
    match = _DESCRIBED_EXAMPLE.search(str(schema.get("description") or ""))
    if match is None:
        return _MISSING
    text, kinds = match.group(2).strip(), _types(schema)
    if not kinds or any(kind in _TEXT_TYPES for kind in kinds):
        return text
    try:
        value = json.loads(text)  # 3, 2.5, true, [1, 2], {"a": 1}
    except json.JSONDecodeError:
        return _MISSING
    return value


def example_value(schema: Mapping[str, Any]) -> Any:
    """A value for one parameter from its schema, or ``_MISSING``: the first of ``examples``, ``example``,
    ``default``, ``const``, ``enum``, an object's derivable properties, a described ``e.g. '...'``."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("example", "default", "const"):
        if key in schema:
            return schema[key]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for variant in schema.get("anyOf") or schema.get("oneOf") or []:
        if isinstance(variant, Mapping) and _types(variant) != ["null"]:
            value = example_value({**variant, "description": schema.get("description")})
            if value is not _MISSING:
                return value
    if "object" in _types(schema) and isinstance(schema.get("properties"), Mapping):
        nested = example_arguments(schema)
        return _MISSING if nested is None else nested
    return _from_description(schema)


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """Arguments for a tool from its input schema: every required parameter (and any optional one with an
    example) filled in; ``None`` when a required parameter has nothing to take a value from."""
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    arguments: dict[str, Any] = {}
    for name, parameter in properties.items():
        value = example_value(parameter) if isinstance(parameter, Mapping) else _MISSING
        if value is _MISSING:
            if name in required:
                return None
            continue
        if name in required or "example" in parameter or "examples" in parameter:
            arguments[name] = value
    if any(name not in arguments for name in required):  # required but not described in properties
        return None
    return arguments


def missing_parameters(schema: Mapping[str, Any]) -> list[str]:
    """The required parameters no value can be derived for."""
    properties = schema.get("properties") or {}
    return [
        name
        for name in schema.get("required") or []
        if not isinstance(properties.get(name), Mapping) or example_value(properties[name]) is _MISSING
    ]


# -- tools → parser -----------------------------------------------------------------------------------
def _single_text_parameter(tool: ToolSpec) -> str | None:
    schema = tool.input_schema
    properties = schema.get("properties") or {}
    if len(properties) != 1:
        return None
    ((name, parameter),) = properties.items()
    if name not in (schema.get("required") or []) or not isinstance(parameter, Mapping):
        return None
    return name if _types(parameter) == ["string"] else None


def choose_parser(tools: Sequence[ToolSpec]) -> tuple[str, dict[str, Any]]:
    """``(parser name, options)`` for these tools: ``tags`` (``<tool> text </tool>``) when every tool takes
    one required string, which a small model learns fastest; ``tool_call`` (JSON) for anything structured."""
    tags = {}
    for tool in tools:
        argument = _single_text_parameter(tool)
        if argument is None or tool.name in ("answer", "information", "think"):
            return "tool_call", {}
        tags[tool.name] = {"tool": tool.name, "argument": argument}
    try:
        build_parser("tags", tools=tags)  # a tool name may not be a valid tag
    except ValueError:
        return "tool_call", {}
    return ("tags", {"tools": tags}) if tags else ("tool_call", {})


# -- calls → few-shot turns ---------------------------------------------------------------------------
def format_call(parser: Parser, tool: str, arguments: Mapping[str, Any]) -> str:
    """The text a model writes to make this call in ``parser``'s format; checked to parse back to it."""
    if isinstance(parser, ToolCallParser):
        body = json.dumps({"name": tool, "arguments": dict(arguments)}, ensure_ascii=False)
        text = f"<{parser.TAG}>{body}</{parser.TAG}>"
    elif isinstance(parser, TagParser):
        tag = next((t for t, spec in parser.tags.items() if spec.tool == tool), None)
        if tag is None or set(arguments) != {parser.argument(tag)}:
            raise ValueError(f"the {parser.name} parser has no tag for {tool}({', '.join(arguments)})")
        text = f"<{tag}> {arguments[parser.argument(tag)]} </{tag}>"
    else:
        raise ValueError(f"cannot write calls for the {type(parser).__name__} parser")
    parsed = parser.parse(text)
    if [(c.name, c.arguments) for c in parsed.calls] != [(tool, dict(arguments))] or parsed.errors:
        raise ValueError(f"the {parser.name} parser does not read {text!r} back as the call of {tool}")
    return text


def _answer_text(result: str) -> str:
    first = next((line.strip() for line in result.splitlines() if line.strip()), "")
    return first[:_ANSWER_CHARS]


def _task_text(call: ExampleCall) -> str:
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    return f"Use {call.tool} with {arguments} and report what it returns."


def few_shot_messages(
    parser: Parser, calls: Sequence[ExampleCall], observation_role: str = "user"
) -> list[dict[str, str]]:
    """One short episode per call: the task, the call, its real result as the parser frames observations,
    and the final answer (between the parser's answer tags, if it has them)."""
    messages: list[dict[str, str]] = []
    answer_tag = getattr(parser, "answer_tag", None)
    for call in calls:
        text = format_call(parser, call.tool, call.arguments)
        observation = parser.format_observation([(ToolCall(call.tool, call.arguments, text), call.result)])
        answer = _answer_text(call.result)
        final = f"<{answer_tag}> {answer} </{answer_tag}>" if answer_tag else answer
        messages += [
            {"role": "user", "content": _task_text(call)},
            {"role": "assistant", "content": text},
            {"role": observation_role, "content": observation},
            {"role": "assistant", "content": final},
        ]
    return messages


def server_from_command(command: str, name: str | None = None) -> tuple[str, dict[str, Any]]:
    """``'python -m tool_servers.calculator'`` → ``("calculator", {"command": "python", "args": [...]})``;
    the server is named ``name``, else after its script or module."""
    parts = shlex.split(command)
    if not parts:
        raise ScaffoldError(
            "--server: give the command that starts the server, e.g. --server 'python server.py'"
        )
    if name is None:
        words = [part for part in parts[1:] if not part.startswith("-")] or parts[:1]
        stem = re.sub(r"\.(py|js|mjs|cjs|ts)$", "", Path(words[-1]).name).rsplit(".", 1)[-1]
        name = re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-") or "server"
    return name, {"command": parts[0], "args": parts[1:]}


# -- the recipe ---------------------------------------------------------------------------------------
def task_rows(calls: Sequence[ExampleCall], n: int = 3) -> list[dict[str, str]]:
    """Template rows (``task``, ``answer``): a task per real call, placeholders up to two rows at least."""
    rows = [{TASK_COLUMN: _task_text(c), ANSWER_COLUMN: _answer_text(c.result)} for c in calls[:n]]
    return rows + [dict(PLACEHOLDER_ROW)] * max(0, 2 - len(rows))


def recipe_dict(
    name: str,
    servers: Mapping[str, Any],
    parser: tuple[str, dict[str, Any]],
    few_shot: Sequence[Mapping[str, str]],
    tasks_path: Path,
) -> dict[str, Any]:
    """The starting recipe as a mapping: the servers as given, the parser, the prompt, the data, rewards."""
    return {
        "name": name,
        "description": f"Starting recipe for the MCP server(s) {', '.join(servers)}, written by mcp-rl init.",
        "data": {"train": str(tasks_path), "answer_column": ANSWER_COLUMN},
        "tools": {"mcpServers": dict(servers)},
        "parser": {"name": parser[0], "options": parser[1]},
        "prompt": {
            "system": SYSTEM_PROMPT,
            "user_template": "{" + TASK_COLUMN + "}",
            "few_shot": [dict(m) for m in few_shot],
            "tools_in": "auto",
        },
        "rollout": {"max_turns": 4, "max_new_tokens": 128, "max_completion_tokens": 768},
        "rewards": [{"name": "exact_match", "weight": 1.0}, {"name": "format", "weight": 0.1}],
        "trainer": {
            "learning_rate": 5.0e-6,
            "num_generations": 8,
            "per_device_train_batch_size": 8,
            "max_steps": 100,
        },
    }


def _header(result: Scaffold, servers: Mapping[str, Any]) -> str:
    lines = [
        f"# Written by `mcp-rl init` from the MCP server(s) {', '.join(servers)}: a starting point to edit.",
        f"# Tasks: {result.tasks_path.name} holds template rows (columns {TASK_COLUMN}, {ANSWER_COLUMN});"
        " replace them with your own.",
        "# Rewards: exact_match compares the final answer with the answer column; add your own as",
        "#   {name: path/to/rewards.py:function} (next to this file) or {name: package.module:function}.",
        "# Check with: mcp-rl prompt --recipe THIS_FILE; mcp-rl rollout --recipe THIS_FILE --n 2",
    ]
    for call in result.calls:
        lines.append(f"# few-shot: {call.tool}({json.dumps(call.arguments, ensure_ascii=False)}) was called")
    for tool, why in result.skipped.items():
        lines.append(f"# few-shot: {tool} has no example call: {why}; add an episode by hand")
    return "\n".join(lines) + "\n"


def scaffold(
    servers: Mapping[str, Any],
    name: str,
    folder: str | Path = ".",
    *,
    timeout_s: float = 10.0,
    overwrite: bool = False,
) -> Scaffold:
    """Connect to ``servers`` (an ``mcpServers`` mapping), call each tool once where its arguments can be
    derived, and write ``NAME.yaml`` and ``NAME.tasks.jsonl`` in ``folder``."""
    folder = Path(folder).expanduser().resolve()
    recipe_path, tasks_path = folder / f"{name}.yaml", folder / f"{name}.tasks.jsonl"
    for path in (recipe_path, tasks_path):
        if path.exists() and not overwrite:
            raise ScaffoldError(f"{path} exists; pick another --name or --dir, or pass --force to replace it")
    with BlockingToolPool(parse_mcp_servers({"mcpServers": dict(servers)})) as pool:
        tools = pool.tools
        if not tools:
            raise ScaffoldError(f"the server(s) {', '.join(servers)} list no tools: nothing to train on")
        parser_choice = choose_parser(tools)
        result = Scaffold(recipe_path, tasks_path, parser_choice[0])
        for tool in tools:
            arguments = example_arguments(tool.input_schema)
            if arguments is None:
                missing = ", ".join(missing_parameters(tool.input_schema))
                result.skipped[tool.name] = (
                    f"no example, default or enum for its required parameter(s) {missing}"
                )
                continue
            outcome = pool.call(tool.name, arguments, timeout_s=timeout_s)
            if not outcome.ok:
                result.skipped[tool.name] = (
                    f"its call failed ({outcome.failure}: {_answer_text(outcome.text)})"
                )
                continue
            result.calls.append(ExampleCall(tool.name, arguments, outcome.text))
    parser = build_parser(parser_choice[0], **parser_choice[1])
    parser.bind_tools([tool.as_dict() for tool in tools])
    few_shot = few_shot_messages(parser, result.calls)
    raw = recipe_dict(name, servers, parser_choice, few_shot, tasks_path)
    text = _header(result, servers) + recipe_to_yaml(validate_config(Recipe, raw))
    recipe_from_dict(yaml.safe_load(text), name=name)  # what is written loads as written
    folder.mkdir(parents=True, exist_ok=True)
    tasks_path.write_text(
        "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in task_rows(result.calls))
    )
    recipe_path.write_text(text)
    return result
