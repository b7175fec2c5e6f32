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

By concern: ``arguments.py`` (schema → arguments), ``few_shot.py`` (parser, turns, task rows),
``writing_servers.py`` (scope advice, the state-checking reward), ``writer.py`` (``scaffold`` itself);
this package re-exports the public names.

The recipe is written with :func:`mcp_rl.config.recipe.recipe_to_yaml` and checked with
``recipe_from_dict``, so it loads as written. Only tools whose arguments can be derived are called: a call
can have side effects, so nothing is invented for a parameter without an example, except a path for a tool
that declares ``readOnlyHint``, which is given the folder the server was started on.
"""

from mcp_rl.scaffold.arguments import (
    example_arguments,
    example_value,
    missing_parameters,
    read_only_arguments,
    server_folders,
)
from mcp_rl.scaffold.few_shot import ExampleCall, choose_parser, few_shot_messages, format_call, task_rows
from mcp_rl.scaffold.writer import (
    Scaffold,
    ScaffoldError,
    allowed_tools,
    recipe_dict,
    scaffold,
    server_from_command,
)
from mcp_rl.scaffold.writing_servers import episode_scope_advice, reward_skeleton

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
