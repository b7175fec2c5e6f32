"""What a recipe needs checked by building: the part of its validation that imports or looks things up.

``mcp_rl.config`` only parses and validates, so reading a recipe runs nothing of the user's and touches
nothing of the machine's. The checks here do: a ``file.py:function`` reward or demonstration function is
imported (its module runs), the parser is built from its options, and each ``mcpServers`` entry is resolved
(environment variables expanded, commands found on PATH, pip's index settings read). ``check_recipe`` runs
them all when an environment is built from a recipe, before the model loads and before anything is
written, so a mistake there is still one line naming the field.
"""

from __future__ import annotations

from typing import Any

from mcp_rl.config.errors import did_you_mean
from mcp_rl.config.sections import Recipe, RewardSpec
from mcp_rl.env.parsers import build_parser
from mcp_rl.errors import RecipeError
from mcp_rl.rewards import BUILTIN_REWARDS
from mcp_rl.rewards.registry import import_object, unknown_options
from mcp_rl.tools.server_config import ServerConfig, ServerConfigError, parse_mcp_servers

__all__ = ["check_recipe", "recipe_servers"]


def check_recipe(recipe: Recipe) -> None:
    """Raise the first ``RecipeError`` building ``recipe`` would meet: rewards, warm-start demonstrations,
    parser options, overlap without a generator of its own, then server entries."""
    for i, reward in enumerate(recipe.rewards):
        _check_reward(reward, f"rewards[{i}].name")
    demonstrations = recipe.warm_start.demonstrations
    if isinstance(demonstrations, str):  # its shape was checked at load: 'file.py:function' by now
        _imported_function(demonstrations, "warm_start.demonstrations")
    try:
        build_parser(recipe.parser.name, **recipe.parser.options)
    except ValueError as error:
        raise RecipeError(f"parser.options: {error}") from None
    if recipe.grpo.overlap and recipe.rollout.backend != "process":  # else found only once the model loaded
        raise RecipeError(
            f"grpo.overlap needs a generator with its own copy of the weights, but rollout.backend is "
            f"{recipe.rollout.backend}: set rollout.backend: process"
        )
    recipe_servers(recipe)  # a bad server entry fails here, not minutes later when servers start


def recipe_servers(recipe: Recipe) -> list[ServerConfig]:
    """``tools.mcpServers`` as server configs, with ``tools.timeout_s`` applied; [] when none. Resolving an
    entry is runtime work (environment variables, PATH, pip's index settings), hence here, not in config."""
    if not recipe.tools.mcpServers:
        return []
    try:
        servers = parse_mcp_servers({"mcpServers": recipe.tools.mcpServers})
    except ServerConfigError as error:
        message = str(error)
        raise RecipeError(
            f"tools.{message}" if message.startswith("mcpServers") else f"tools.mcpServers: {message}"
        ) from None
    if recipe.tools.timeout_s is not None:
        for server in servers:
            server.timeout_s = recipe.tools.timeout_s
    return servers


def _check_reward(reward: RewardSpec, where: str) -> None:
    """A built-in name, or a function that imports now: ``path/to/file.py:function`` (already absolute,
    see ``mcp_rl.config.paths``) or ``package.module:function``; and options that it takes as keyword
    arguments."""
    if reward.name in BUILTIN_REWARDS:
        return
    module, sep, function = reward.name.rpartition(":")
    if not (sep and module and all(part.isidentifier() for part in function.split("."))):
        raise RecipeError(
            f"{where}: unknown reward {reward.name!r}{did_you_mean(reward.name, BUILTIN_REWARDS)}; "
            f"built-in: {', '.join(BUILTIN_REWARDS)}, or 'path/to/file.py:function' (next to the recipe) or "
            "'package.module:function' for your own"
        )
    unknown = unknown_options(_imported_function(reward.name, where), reward.options)
    if unknown:
        options = where.removesuffix(".name") + ".options"
        raise RecipeError(
            f"{options}: {', '.join(unknown)} not parameter(s) of {function}; remove them from the options "
            "or add them to the function"
        )


def _imported_function(spec: str, where: str) -> Any:
    try:
        target = import_object(spec)
    except ValueError as error:
        raise RecipeError(f"{where}: {error}") from None
    if not callable(target):
        raise RecipeError(f"{where}: {spec!r} is {type(target).__name__}, not a function")
    return target
