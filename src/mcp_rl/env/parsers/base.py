"""What every parser shares: the parse results (``ToolCall``, ``ParseError``, ``ParsedTurn``), the
``Parser`` interface an action format implements, and helpers for tool dicts in any of their shapes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    raw: str


@dataclass(frozen=True)
class ParseError:
    message: str
    raw: str


@dataclass(frozen=True)
class ParsedTurn:
    calls: list[ToolCall]
    errors: list[ParseError]
    answer: str | None

    @property
    def has_action(self) -> bool:
        return bool(self.calls or self.errors) or self.answer is not None


class Parser(ABC):
    name: ClassVar[str]
    stop_strings: list[str]

    def __init__(self) -> None:
        self._tools: dict[str, Mapping[str, Any]] = {}

    @abstractmethod
    def parse(self, text: str) -> ParsedTurn: ...

    @abstractmethod
    def format_observation(self, items: Sequence[tuple[ToolCall | ParseError, str]]) -> str: ...

    @abstractmethod
    def describe_tools(self, tools: Sequence[Mapping[str, Any]]) -> str: ...

    @property
    @abstractmethod
    def invalid_action_message(self) -> str: ...

    def bind_tools(self, tools: Sequence[Mapping[str, Any]]) -> None:
        """Remember the MCP tools so parsing and messages can use their schemas (``describe_tools`` calls
        this, so a parser that described the tools already knows them)."""
        self._tools = {str(t["name"]): t for t in tools if isinstance(t, Mapping) and "name" in t}


def input_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    """A tool dict's JSON schema for its arguments, whichever key its shape uses (an empty object schema
    when it has none), so parsers read parameters the same way from MCP, project and OpenAI tool dicts."""
    # MCP's wire format says inputSchema, the project's tool dicts say input_schema, OpenAI says parameters.
    for key in ("input_schema", "inputSchema", "parameters"):
        schema = tool.get(key)
        if isinstance(schema, Mapping):
            return dict(schema)
    return {"type": "object", "properties": {}}
