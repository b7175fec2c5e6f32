"""Real calls → what the model learns from: the parser that fits the tools, each call written in that
parser's own format (checked to parse back to the same call), one short few-shot episode per call, and
template task rows.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_rl.env.parsers import Parser, TagParser, ToolCall, ToolCallParser, build_parser
from mcp_rl.scaffold.arguments import schema_types
from mcp_rl.tools import ToolSpec

__all__ = [
    "ANSWER_COLUMN",
    "PLACEHOLDER_ROW",
    "TASK_COLUMN",
    "ExampleCall",
    "answer_text",
    "choose_parser",
    "few_shot_messages",
    "format_call",
    "task_rows",
]

_ANSWER_CHARS = 120
TASK_COLUMN, ANSWER_COLUMN = "task", "answer"
PLACEHOLDER_ROW = {
    TASK_COLUMN: "TODO: a task your tools help solve",
    ANSWER_COLUMN: "TODO: its reference answer",
}


@dataclass(frozen=True)
class ExampleCall:
    """One real call of a tool: what was sent and what came back."""

    tool: str
    arguments: dict[str, Any]
    result: str


def _single_text_parameter(tool: ToolSpec) -> str | None:
    schema = tool.input_schema
    properties = schema.get("properties") or {}
    if len(properties) != 1:
        return None
    ((name, parameter),) = properties.items()
    if name not in (schema.get("required") or []) or not isinstance(parameter, Mapping):
        return None
    return name if schema_types(parameter) == ["string"] else None


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


def answer_text(result: str) -> str:
    """A result's first non-empty line, cut short: the answer of a few-shot episode or a task row."""
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
        answer = answer_text(call.result)
        final = f"<{answer_tag}> {answer} </{answer_tag}>" if answer_tag else answer
        messages += [
            {"role": "user", "content": _task_text(call)},
            {"role": "assistant", "content": text},
            {"role": observation_role, "content": observation},
            {"role": "assistant", "content": final},
        ]
    return messages


def task_rows(calls: Sequence[ExampleCall], n: int = 3) -> list[dict[str, str]]:
    """Template rows (``task``, ``answer``): a task per real call, placeholders up to two rows at least."""
    rows = [{TASK_COLUMN: _task_text(c), ANSWER_COLUMN: answer_text(c.result)} for c in calls[:n]]
    return rows + [dict(PLACEHOLDER_ROW)] * max(0, 2 - len(rows))
