"""``scaffold``, the whole of ``mcp-rl init``: connect to the servers (through the allow-list ``--tools``
gives), call each tool once where its arguments can be derived, and write ``NAME.yaml``,
``NAME.tasks.jsonl`` (and ``NAME_rewards.py`` for a server that writes), with what the prompt costs.
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
from mcp_rl.env.parsers import Parser, build_parser
from mcp_rl.env.prompt_cost import PromptCost, measure_prompt_cost
from mcp_rl.env.recipe_checks import check_recipe
from mcp_rl.errors import ConfigError
from mcp_rl.generation.models import load_model, load_tokenizer, resolve_model_path
from mcp_rl.scaffold.arguments import (
    example_arguments,
    missing_parameters,
    read_only_arguments,
    server_folders,
)
from mcp_rl.scaffold.few_shot import (
    ANSWER_COLUMN,
    TASK_COLUMN,
    ExampleCall,
    answer_text,
    choose_parser,
    few_shot_messages,
    task_rows,
)
from mcp_rl.scaffold.writing_servers import STATE_REWARD, episode_scope_advice, reward_skeleton
from mcp_rl.tools import BlockingToolPool, ToolSpec
from mcp_rl.tools.server_config import parse_mcp_servers

__all__ = ["Scaffold", "ScaffoldError", "allowed_tools", "recipe_dict", "scaffold", "server_from_command"]

SYSTEM_PROMPT = "Solve the task with the tools, one call at a time; then give the final answer."
# Past this the tool schemas, read by every sample of every step, dominate a small model's step: the shipped
# recipes' whole prompts are well under it (README, "Train on your own MCP server").
PROMPT_WARNING_TOKENS = 1024


class ScaffoldError(ConfigError):
    """``mcp-rl init`` cannot write a recipe: no tools, files already there, a bad server command."""


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
                    f"its call failed ({outcome.failure}: {answer_text(outcome.text)})"
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
        check_recipe(recipe)  # and builds: its server entries resolve, its reward file imports
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
