"""Runtime objects built from a recipe's configuration: its action parser and its tool pool.

``mcp_rl.config.sections`` only describes a run; the functions here turn that description into the objects a
rollout uses, so that reading and checking a recipe never imports the MCP client or the parsers.
"""

from __future__ import annotations

from mcp_rl.config.sections import Recipe
from mcp_rl.env.parsers import Parser, build_parser
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_logs import TextSink

__all__ = ["recipe_parser", "tool_pool"]


def recipe_parser(recipe: Recipe) -> Parser:
    """The parser ``recipe.parser`` names, built with its options.

    Args:
        recipe: A loaded recipe (see ``mcp_rl.config.recipe.load_recipe``), whose parser options are
        already checked.

    Returns:
        A fresh parser; bind it to the pool's tools before use.
    """
    return build_parser(recipe.parser.name, **recipe.parser.options)


def tool_pool(recipe: Recipe, errlog: TextSink | None = None) -> BlockingToolPool:
    """A tool pool, not yet started, over the recipe's MCP servers and observation budget.

    Args:
        recipe: A loaded recipe; its ``tools.mcpServers`` may be empty (a pool without tools).
        errlog: Where the servers' stderr lines go (a ``ServerLog``, see ``command_server_log``);
            ``None`` means this process's stderr.

    Returns:
        A ``BlockingToolPool``: call ``start()`` or use it as a context manager.
    """
    return BlockingToolPool(
        recipe.server_configs(), observation_chars=recipe.tools.observation_chars, errlog=errlog
    )
