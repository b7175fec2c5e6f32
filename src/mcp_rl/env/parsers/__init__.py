"""Model text of one turn → tool calls and/or a final answer, and how results are written back.

A parser owns one action format end to end: the strings that stop generation after an action, the
extraction of actions from a turn, the observation text for the results, the system-prompt text that
teaches the format, and the observation for a turn without any action. Two families:

* ``tool_call``: Qwen/Hermes ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.
* ``tags``: one tag per tool, e.g. ``<search> query </search>`` → ``search(query=...)``;
  ``search_r1`` is its preset for the Search-R1 protocol.

``parse`` never raises: whatever the model wrote becomes calls, an answer, or ``ParseError`` items whose
message is an observation that teaches the model the correct format. It expects the text to include the
stop string that ended generation (an action without its closing tag is reported as unclosed).

The shared types live in ``base.py``, the tag scanner in ``action_tags.py``, the ``tags`` family in
``tags.py``, the ``tool_call`` family in ``tool_call.py``; this package registers them (``PARSERS``,
``build_parser``) and re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mcp_rl.env.parsers.base import ParsedTurn, ParseError, Parser, ToolCall
from mcp_rl.env.parsers.tags import SearchR1Parser, TagParser
from mcp_rl.env.parsers.tool_call import ToolCallParser

__all__ = [
    "PARSERS",
    "ParseError",
    "ParsedTurn",
    "Parser",
    "SearchR1Parser",
    "TagParser",
    "ToolCall",
    "ToolCallParser",
    "build_parser",
]


PARSERS: dict[str, Callable[..., Parser]] = {
    cls.name: cls for cls in (ToolCallParser, TagParser, SearchR1Parser)
}


def build_parser(name: str, **options: Any) -> Parser:
    """The parser registered as ``name``, built with ``options`` (a recipe's parser section)."""
    factory = PARSERS.get(name)
    if factory is None:
        raise ValueError(f"unknown parser {name!r}; available parsers: {', '.join(sorted(PARSERS))}")
    try:
        return factory(**options)
    except TypeError as exc:  # an unknown or misspelt option in a recipe
        raise ValueError(f"invalid options for parser {name!r}: {exc}") from exc
