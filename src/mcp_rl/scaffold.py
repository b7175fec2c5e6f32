"""``mcp-rl init``: MCP servers → a starting recipe whose few-shot episodes are real calls of their tools.

The steps are plain functions, each usable on its own:

* :func:`example_arguments`: a tool's input schema → arguments taken from its examples, defaults, enums,
  constants or an ``e.g. '...'`` in a parameter's description (``None`` when a required one has none);
* :func:`choose_parser`: the tools → the parser that fits (one tag per tool when every tool takes a single
  string, JSON tool calls otherwise);
* :func:`format_call` / :func:`few_shot_messages`: real calls → chat turns written by the chosen parser's own
  format, each checked to parse back to the same call;
* :func:`recipe_dict` and :func:`task_rows`: everything → a recipe mapping and template task rows;
* :func:`allowed_tools`, :func:`episode_scope_advice`, :func:`reward_skeleton`: an ``includeTools`` list per
  server, the advice to give a writing server a fresh instance per episode, a state-checking reward;
* :func:`scaffold`: connect, call each tool once, write ``NAME.yaml`` and ``NAME.tasks.jsonl`` (and
  ``NAME_rewards.py`` for a server that writes), and measure what the prompt costs.

The recipe is written with :func:`mcp_rl.config.recipe.recipe_to_yaml` and checked with
``recipe_from_dict``, so it
loads as written. Only tools whose arguments can be derived are called: a call can have side effects, so
nothing is invented for a parameter without an example, except a path for a tool that declares
``readOnlyHint``, which is given the folder the server was started on.
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

from mcp_rl.config.recipe import recipe_from_dict, recipe_to_yaml
from mcp_rl.config.sections import Recipe, validate_config
from mcp_rl.env.parsers import Parser, TagParser, ToolCall, ToolCallParser, build_parser
from mcp_rl.env.prompt_cost import PromptCost, measure_prompt_cost
from mcp_rl.errors import ConfigError
from mcp_rl.generation.models import load_model, load_tokenizer, resolve_model_path
from mcp_rl.tools import BlockingToolPool, ToolSpec
from mcp_rl.tools.server_config import parse_mcp_servers

__all__ = [
    "ExampleCall",
    "Scaffold",
    "ScaffoldError",
    "allowed_tools",
    "choose_parser",
    "episode_scope_advice",
    "example_arguments",
    "example_value",
    "few_shot_messages",
    "format_call",
    "missing_parameters",
    "read_only_arguments",
    "recipe_dict",
    "reward_skeleton",
    "scaffold",
    "server_folders",
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
# Past this the tool schemas, read by every sample of every step, dominate a small model's step: the shipped
# recipes' whole prompts are well under it (README, "Train on your own MCP server").
PROMPT_WARNING_TOKENS = 1024
# Words that mark a string parameter as a path, which a read-only tool may be given the server's folder for.
_PATH_WORDS = ("path", "dir", "folder")
STATE_REWARD = "state_check"


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
    warnings: list[str] = field(default_factory=list)
    rewards_path: Path | None = None  # the state-checking reward skeleton, for a server that writes
    cost: PromptCost | None = None


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


def server_folders(entry: Mapping[str, Any]) -> list[str]:
    """The arguments of a server's command that are folders here (a filesystem server's sandbox, say)."""
    args = entry.get("args") if isinstance(entry, Mapping) else None
    return [str(a) for a in args or [] if isinstance(a, str) and "${" not in a and Path(a).is_dir()]


def read_only_arguments(tool: ToolSpec, folders: Sequence[str]) -> dict[str, Any] | None:
    """Arguments for a tool that declares ``readOnlyHint``: its example arguments, with a required path-like
    string that has none given the first of the server's ``folders`` (calling it changes nothing)."""
    if not tool.read_only or not folders:
        return None
    properties = tool.input_schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in tool.input_schema.get("required") or []:
        parameter = properties.get(name)
        if not isinstance(parameter, Mapping):
            return None
        value = example_value(parameter)
        if value is _MISSING:
            if _types(parameter) != ["string"] or not any(word in name.lower() for word in _PATH_WORDS):
                return None
            value = folders[0]
        arguments[name] = value
    return arguments


# -- which tools, which scope -------------------------------------------------------------------------
def allowed_tools(
    pool: BlockingToolPool, servers: Sequence[str], names: Sequence[str]
) -> dict[str, list[str]]:
    """``--tools a,b`` → each of ``servers``' ``includeTools`` (its own tool names; empty for a server none
    of them is on), or a :class:`ScaffoldError` naming a tool no server has."""
    chosen: dict[str, list[str]] = {server: [] for server in servers}
    for name in names:
        spec = pool.resolve(name)
        if spec is None:
            available = ", ".join(tool.name for tool in pool.tools)
            raise ScaffoldError(f"--tools: no tool named {name!r}; the servers have: {available}")
        if spec.remote_name not in chosen[spec.server]:
            chosen[spec.server].append(spec.remote_name)
    return chosen


def episode_scope_advice(server: str, entry: Mapping[str, Any], tools: Sequence[ToolSpec]) -> str | None:
    """The advice for a server whose tools may write (no ``readOnlyHint``): a fresh instance per episode,
    started on a copy of the folder it was given, so one episode's writes are not the next one's start."""
    writing = [tool.name for tool in tools if tool.server == server and not tool.read_only]
    if not writing or entry.get("scope") == "episode":
        return None
    advice = (
        f"{server}: {', '.join(writing)} {'declares' if len(writing) == 1 else 'declare'} no readOnlyHint, "
        "so what one episode writes is the next one's start; give each episode its own instance: "
        "scope: episode"
    )
    folders = server_folders(entry)
    if folders:
        copy = Path(folders[0]).name
        advice += (
            f', args with "${{episode.dir}}/{copy}" in place of {folders[0]}, setup: [{{copy: {folders[0]}}}]'
        )
    return advice


def reward_skeleton(recipe_name: str, check: ExampleCall, folder: str | None = None) -> str:
    """A reward module that checks the state an episode left by calling a read-only tool on the episode's
    own instance, instead of trusting the words of the final answer. ``folder``: the server's folder in the
    check's arguments, which becomes the episode's own copy of it under ``scope: episode``."""
    arguments = json.dumps(check.arguments, ensure_ascii=False)
    return f'''"""Rewards of the {recipe_name} recipe that check what an episode did, not what the model says.

Written by `mcp-rl init` as a starting point: edit the check to what your tasks change. A reward runs while
the episode's own server instance (scope: episode) is still up, so its calls see the state that episode
left, in the episode's own copy of the server's folder (trajectory.tools.dir / the folder's name).
"""

import json
from pathlib import Path

CHECK_TOOL = {check.tool!r}
CHECK_ARGUMENTS = {arguments}
SERVER_FOLDER = {folder!r}


def check_arguments(trajectory):
    """CHECK_ARGUMENTS, with SERVER_FOLDER moved to the episode's copy of it when the episode has one."""
    if SERVER_FOLDER is None or trajectory.tools.dir is None:
        return CHECK_ARGUMENTS
    copy = str(Path(trajectory.tools.dir) / Path(SERVER_FOLDER).name)
    text = json.dumps(CHECK_ARGUMENTS).replace(json.dumps(SERVER_FOLDER)[1:-1], json.dumps(copy)[1:-1])
    return json.loads(text)


def {STATE_REWARD}(trajectories, {ANSWER_COLUMN}, **columns):
    """1.0 when CHECK_TOOL's output on the episode's own instance holds the row's answer; 0.0 when not, or
    when the tool answers with an error ("no such file"); None (the sample is left out) when the check
    could not be made at all (server down, timeout)."""
    scores = []
    for trajectory, expected in zip(trajectories, {ANSWER_COLUMN}, strict=True):
        result = trajectory.tools.call(CHECK_TOOL, check_arguments(trajectory))
        if result.ok:
            scores.append(float(str(expected) in result.text))
        else:
            scores.append(0.0 if result.failure == "tool error" else None)
    return scores
'''


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
    *,
    rewards_path: Path | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """The starting recipe as a mapping: the servers as given, the parser, the prompt, the data, rewards
    (the state check of ``rewards_path`` in place of exact match, when there is one)."""
    main_reward = f"{rewards_path.name}:{STATE_REWARD}" if rewards_path is not None else "exact_match"
    recipe: dict[str, Any] = {
        "name": name,
        "description": f"Starting recipe for the MCP server(s) {', '.join(servers)}, written by mcp-rl init.",
        "data": {"train": tasks_path.name, "answer_column": ANSWER_COLUMN},  # beside the recipe
        "tools": {"mcpServers": dict(servers)},
        "parser": {"name": parser[0], "options": parser[1]},
        "prompt": {
            "system": SYSTEM_PROMPT,
            "user_template": "{" + TASK_COLUMN + "}",
            "few_shot": [dict(m) for m in few_shot],
            "tools_in": "auto",
        },
        "rollout": {"max_turns": 4, "max_new_tokens": 128, "max_completion_tokens": 768},
        "rewards": [{"name": main_reward, "weight": 1.0}, {"name": "format", "weight": 0.1}],
        "trainer": {
            "learning_rate": 5.0e-6,
            "num_generations": 8,
            "per_device_train_batch_size": 8,
            "max_steps": 100,
        },
    }
    if model is not None:
        recipe["model"] = {"name_or_path": model}
    return recipe


def _header(result: Scaffold, servers: Mapping[str, Any]) -> str:
    lines = [
        f"# Written by `mcp-rl init` from the MCP server(s) {', '.join(servers)}: a starting point to edit.",
        f"# Tasks: {result.tasks_path.name} holds template rows (columns {TASK_COLUMN}, {ANSWER_COLUMN});"
        " replace them with your own.",
        (
            f"# Rewards: {STATE_REWARD} in {result.rewards_path.name} checks the state an episode left "
            "(edit its check); add your own as"
            if result.rewards_path is not None
            else "# Rewards: exact_match compares the final answer with the answer column; add your own as"
        ),
        "#   {name: path/to/rewards.py:function} (next to this file) or {name: package.module:function}.",
        "# Check with: mcp-rl prompt --recipe THIS_FILE; mcp-rl rollout --recipe THIS_FILE --n 2",
    ]
    if result.cost is not None:
        lines.append(f"# {result.cost.line()}")
    lines += [f"# warning: {warning}" for warning in result.warnings]
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
    tools: Sequence[str] | None = None,
    model: str | None = None,
    measure: bool = True,
) -> Scaffold:
    """Connect to ``servers`` (an ``mcpServers`` mapping), call each tool once where its arguments can be
    derived, and write ``NAME.yaml`` and ``NAME.tasks.jsonl`` in ``folder`` (and ``NAME_rewards.py`` when a
    tool may write). ``tools`` keeps only those tools (each server's ``includeTools``); ``model`` is the
    recipe's model, whose tokenizer counts the prompt and which (``measure``) times it on this machine."""
    folder = Path(folder).expanduser().resolve()
    recipe_path, tasks_path = folder / f"{name}.yaml", folder / f"{name}.tasks.jsonl"
    rewards_path = folder / f"{name}_rewards.py"
    for path in (recipe_path, tasks_path, rewards_path):
        if path.exists() and not overwrite:
            raise ScaffoldError(f"{path} exists; pick another --name or --dir, or pass --force to replace it")
    if tools is not None and not tools:
        raise ScaffoldError("--tools: name at least one tool, e.g. --tools read_file,write_file")
    servers = {server: dict(entry) for server, entry in servers.items()}
    if tools is not None:  # the calls below then go through the allow-list the recipe will have
        with BlockingToolPool(parse_mcp_servers({"mcpServers": servers})) as pool:
            chosen = allowed_tools(pool, list(servers), tools)
        for server, included in chosen.items():
            servers[server]["includeTools"] = included
    with BlockingToolPool(parse_mcp_servers({"mcpServers": servers})) as pool:
        exposed = pool.tools
        if not exposed:
            raise ScaffoldError(f"the server(s) {', '.join(servers)} list no tools: nothing to train on")
        parser_choice = choose_parser(exposed)
        result = Scaffold(recipe_path, tasks_path, parser_choice[0])
        for tool in exposed:
            arguments = example_arguments(tool.input_schema)
            if arguments is None:
                arguments = read_only_arguments(tool, server_folders(servers[tool.server]))
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
    parser.bind_tools([tool.as_dict() for tool in exposed])
    few_shot = few_shot_messages(parser, result.calls)
    for server, entry in servers.items():
        advice = episode_scope_advice(server, entry, exposed)
        if advice is not None:
            result.warnings.append(advice)
    read_only = {tool.name for tool in exposed if tool.read_only}
    check = next((call for call in result.calls if call.tool in read_only), None)
    writes = any(not tool.read_only for tool in exposed)
    if writes and check is not None:
        result.rewards_path = rewards_path
    elif writes:
        result.warnings.append(
            "no read-only tool could be called to check what an episode wrote: exact_match trusts the "
            "model's words; add a reward that checks the state (README: rewards that check what it did)"
        )
    raw = recipe_dict(
        name, servers, parser_choice, few_shot, tasks_path, rewards_path=result.rewards_path, model=model
    )
    body = recipe_to_yaml(validate_config(Recipe, raw))
    folder.mkdir(parents=True, exist_ok=True)
    if result.rewards_path is not None and check is not None:
        server = next(tool.server for tool in exposed if tool.name == check.tool)
        folders = [f for f in server_folders(servers[server]) if f in json.dumps(check.arguments)]
        rewards_path.write_text(reward_skeleton(name, check, folders[0] if folders else None))
    try:
        recipe = recipe_from_dict(yaml.safe_load(body), name=name, base_dir=folder)  # loads as written
    except Exception:
        if result.rewards_path is not None:
            rewards_path.unlink(missing_ok=True)
        raise
    rows = task_rows(result.calls)
    result.cost = _measured_cost(recipe, parser, exposed, rows[0], measure, result.warnings)
    tasks_path.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows))
    recipe_path.write_text(_header(result, servers) + body)
    return result


def _measured_cost(
    recipe: Recipe,
    parser: Parser,
    tools: Sequence[ToolSpec],
    row: Mapping[str, Any],
    measure: bool,
    warnings: list[str],
) -> PromptCost | None:
    """The prompt's cost with the recipe's model (a warning instead when that model cannot be loaded here),
    and the warning when the prompt is large."""
    try:
        if measure:
            model, tokenizer = load_model(recipe.model)
        else:
            model, tokenizer = None, load_tokenizer(resolve_model_path(recipe.model.name_or_path))
    except (ConfigError, OSError) as error:
        warnings.append(f"prompt cost not measured: {error}")
        return None
    cost = measure_prompt_cost(recipe, parser, tools, row, tokenizer=tokenizer, model=model)
    if cost.tokens > PROMPT_WARNING_TOKENS:
        warnings.append(
            f"the prompt is {cost.tokens:,} tokens, {cost.schema_tokens:,} of them the {cost.tools} tool "
            "schema(s), read by every sample of every step: keep only the tools the tasks need with "
            "includeTools: [a, b] in the server's entry (mcp-rl init --tools a,b)"
        )
    return cost
