"""The ``tool_call`` family: Qwen/Hermes JSON tool calls, ``<tool_call>{"name": ..., "arguments": {...}}
</tool_call>`` (``ToolCallParser``), with the JSON decoding that accepts concatenated values, code fences
and, within a nesting limit, text that ``json_repair`` can mend.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import json_repair

from mcp_rl.env.parsers.action_tags import ActionTagParser
from mcp_rl.env.parsers.base import ParseError, ToolCall, input_schema

# json_repair's time grows quadratically with unbalanced nesting and with the length of an unterminated
# string (docs/limits.md); no real tool call nests anywhere near this deep or needs
# repairs this long, so such text is reported as not understood instead of repaired.
_MAX_REPAIR_DEPTH = 64
_MAX_REPAIR_CHARS = 2000
# Calls batched in one tag (concatenated JSON values or a JSON list): far more than any turn needs, and few
# enough that a tag of 30,000 numbers is one error, not 30,000 (each costing time and observation tokens).
_MAX_CALLS_PER_TAG = 64


def _nesting_depth(text: str) -> int:
    depth = deepest = 0
    for char in text:
        if char in "{[":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "}]":
            depth = max(depth - 1, 0)
    return deepest


def _decode_json(text: str) -> Any:
    """Strict JSON first (several concatenated values become a list), then ``json_repair``; a failure of
    either is ``None``, which callers report as not understood."""
    decoder, values, pos = json.JSONDecoder(), [], 0
    try:
        while pos < len(text):
            while pos < len(text) and text[pos].isspace():
                pos += 1
            if pos == len(text):
                break
            if len(values) > _MAX_CALLS_PER_TAG:
                return values  # judged as too many by the caller, without decoding the rest
            value, pos = decoder.raw_decode(text, pos)
            values.append(value)
        if values:
            return values[0] if len(values) == 1 else values
    except (ValueError, RecursionError):
        pass
    if len(text) > _MAX_REPAIR_CHARS or _nesting_depth(text) > _MAX_REPAIR_DEPTH:
        return None
    try:
        return json_repair.loads(text)
    except Exception:  # the repairer's failure modes are not part of its contract (RecursionError, ...)
        return None


_FENCE_LANGUAGE = re.compile(r"[A-Za-z0-9_-]*")


def _unfenced(body: str) -> str:
    """``body`` (stripped) without a surrounding Markdown code fence, e.g. ```json ... ```.

    Done by hand: the regex this replaces backtracked cubically on a fence followed by whitespace
    (docs/limits.md); this is linear, whatever the text.
    """
    if len(body) < 6 or not body.startswith("```") or not body.endswith("```"):
        return body
    inner = body[3:-3]
    language = _FENCE_LANGUAGE.match(inner)
    return inner[language.end() if language else 0 :].strip()


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


class ToolCallParser(ActionTagParser):
    """Qwen/Hermes JSON tool calls: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``.

    Options: ``answer_tag`` ("answer"; ``None``: a turn without a call is the answer), ``think_tag``
    (None), ``stop_at_call`` (True: generation stops after the first call, one call per turn),
    ``max_calls`` (None: no limit).
    """

    name: ClassVar[str] = "tool_call"
    TAG: ClassVar[str] = "tool_call"

    def __init__(
        self,
        *,
        answer_tag: str | None = "answer",
        think_tag: str | None = None,
        stop_at_call: bool = True,
        max_calls: int | None = None,
    ) -> None:
        super().__init__(
            [self.TAG],
            answer_tag=answer_tag,
            think_tag=think_tag,
            max_calls=max_calls,
            stop_at_call=stop_at_call,
        )

    def _call_format(self) -> str:
        example = '<tool_call>{"name": "<tool name>", "arguments": {"<parameter>": <value>}}</tool_call>'
        hint = f"{example}, with valid JSON."
        if self._tools:
            hint += f" Available tools: {', '.join(self._tools)}."
        return hint

    def _format_hint(self) -> str:
        return f"Write each call as {self._call_format()}"

    def _usage(self, tag: str) -> str:
        return f"To call a tool, write {self._call_format()}"

    def _action(self, tag: str, content: str, raw: str) -> list[ToolCall | ParseError]:
        body = _unfenced(content.strip())
        if not body:
            return [ParseError(f"The tool call was empty. {self._format_hint()}", raw)]
        value = _decode_json(body)
        # A model may batch calls as a JSON list inside one tag; each item is judged on its own.
        items = value if isinstance(value, list) and value else [value]
        if len(items) > _MAX_CALLS_PER_TAG:
            return [
                ParseError(
                    f"Invalid tool call: more than {_MAX_CALLS_PER_TAG} values in one <{tag}>. "
                    f"{self._format_hint()}",
                    raw,
                )
            ]
        return [self._call(item, raw) for item in items]

    def _call(self, value: Any, raw: str) -> ToolCall | ParseError:
        def error(problem: str) -> ParseError:
            return ParseError(f"Invalid tool call: {problem}. {self._format_hint()}", raw)

        if not isinstance(value, dict):
            return error("the text inside <tool_call> is not a JSON object")
        # OpenAI's envelope {"type": "function", "function": {...}} is unwrapped rather than rejected.
        if "name" not in value and isinstance(value.get("function"), dict):
            value = value["function"]
        name = value.get("name")
        if name is None:
            return error('the JSON object has no "name" field')
        if not isinstance(name, str) or not name.strip():
            return error(f'"name" must be a non-empty string, got {_type_name(name)}')
        arguments = value.get("arguments", value.get("parameters"))
        if isinstance(arguments, str):
            # Some templates (OpenAI style) serialise the arguments as a JSON string.
            arguments = _decode_json(arguments) if arguments.strip() else {}
            if arguments is None or arguments == "":
                return error('"arguments" is a string that is not valid JSON; write it as a JSON object')
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return error(
                f'"arguments" must be a JSON object of parameter names to values, got {_type_name(arguments)}'
            )
        return ToolCall(name=name.strip(), arguments=arguments, raw=raw)

    def format_observation(self, items: Sequence[tuple[ToolCall | ParseError, str]]) -> str:
        return "\n".join(f"<tool_response>\n{result}\n</tool_response>" for _, result in items)

    def describe_tools(self, tools: Sequence[Mapping[str, Any]]) -> str:
        self.bind_tools(tools)
        signatures = "\n".join(
            json.dumps(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": str(tool.get("description") or ""),
                        "parameters": input_schema(tool),
                    },
                },
                ensure_ascii=False,
                default=str,
            )
            for name, tool in self._tools.items()
        )
        how_many = (
            "Call one function at a time and wait for its result."
            if self.stop_at_call
            else "You may call one or more functions in a turn."
        )
        lines = [
            "# Tools",
            "",
            "You may call functions to assist with the user query. " + how_many,
            "",
            "You are provided with function signatures within <tools></tools> XML tags:",
            "<tools>",
            signatures,
            "</tools>",
            "",
            "For each function call, return a json object with function name and arguments within "
            "<tool_call></tool_call> XML tags:",
            "<tool_call>",
            '{"name": <function-name>, "arguments": <args-json-object>}',
            "</tool_call>",
            "",
            "Results come back within <tool_response></tool_response> XML tags.",
            *self._closing_sentences(),
        ]
        return "\n".join(lines)

    @property
    def invalid_action_message(self) -> str:
        return self._invalid_action(
            [
                "My previous action is invalid. If I want to call a tool, I should write "
                '<tool_call>{"name": <tool-name>, "arguments": <args-json-object>}</tool_call>.'
            ]
        )
