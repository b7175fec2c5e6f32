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
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import json_repair

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


_TAG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")


def _check_tag(tag: Any, what: str) -> str:
    if not isinstance(tag, str) or not _TAG_NAME.fullmatch(tag):
        raise ValueError(f"{what} must be a tag name like 'search' (letters, digits, _ . : -), got {tag!r}")
    return tag


def _input_schema(tool: Mapping[str, Any]) -> dict[str, Any]:
    # MCP's wire format says inputSchema, the project's tool dicts say input_schema, OpenAI says parameters.
    for key in ("input_schema", "inputSchema", "parameters"):
        schema = tool.get(key)
        if isinstance(schema, Mapping):
            return dict(schema)
    return {"type": "object", "properties": {}}


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class _ActionTagParser(Parser):
    """Shared scanner: actions are ``<tag>content</tag>`` spans, found earliest first.

    Subclasses declare their action tags and turn one action's content into calls or errors. The scanner
    handles the answer tag, think blocks, unclosed and orphaned tags and the per-turn call limit, so both
    families report these the same way.
    """

    def __init__(
        self,
        action_tags: Sequence[str],
        *,
        answer_tag: str | None,
        think_tag: str | None,
        max_calls: int | None,
        stop_at_call: bool,
    ) -> None:
        super().__init__()
        self.action_tags = [_check_tag(t, "an action tag") for t in action_tags]
        self.answer_tag = None if answer_tag is None else _check_tag(answer_tag, "answer_tag")
        self.think_tag = None if think_tag is None else _check_tag(think_tag, "think_tag")
        special = [t for t in (self.answer_tag, self.think_tag) if t is not None]
        all_tags = self.action_tags + special
        if len(set(all_tags)) != len(all_tags):
            raise ValueError(f"action, answer and think tags must all differ, got {all_tags}")
        if max_calls is not None and (not isinstance(max_calls, int) or max_calls < 1):
            raise ValueError(f"max_calls must be a positive integer or None, got {max_calls!r}")
        self.max_calls = max_calls
        self.stop_at_call = stop_at_call
        self.stop_strings = [f"</{t}>" for t in self.action_tags] if stop_at_call else []
        if self.answer_tag is not None:
            self.stop_strings.append(f"</{self.answer_tag}>")
        scanned = [*self.action_tags, *([self.answer_tag] if self.answer_tag else [])]
        # No scanned tags at all (no tools, no answer tag) must match nothing, not the empty tag "<>".
        self._token = re.compile("<(/?)(" + "|".join(map(re.escape, scanned)) + ")>" if scanned else "(?!)")

    @abstractmethod
    def _action(self, tag: str, content: str, raw: str) -> list[ToolCall | ParseError]:
        """One complete ``<tag>content</tag>`` → its calls and errors."""

    @abstractmethod
    def _usage(self, tag: str) -> str:
        """A sentence telling the model how to write an action with this tag."""

    def _answer_usage(self) -> str:
        tag = self.answer_tag
        return f"To give the final answer, put it between <{tag}> and </{tag}>."

    def _tag_usage(self, tag: str) -> str:
        return self._answer_usage() if tag == self.answer_tag else self._usage(tag)

    def _think_spans(self, text: str) -> list[tuple[int, int]]:
        if self.think_tag is None:
            return []
        opener, closer = f"<{self.think_tag}>", f"</{self.think_tag}>"
        spans: list[tuple[int, int]] = []
        first_open, first_close = text.find(opener), text.find(closer)
        pos = 0
        # A closer before any opener: the opener was in the prompt (templates that pre-fill "<think>").
        if first_close >= 0 and (first_open < 0 or first_close < first_open):
            pos = first_close + len(closer)
            spans.append((0, pos))
        while (start := text.find(opener, pos)) >= 0:
            end = text.find(closer, start + len(opener))
            # Generation stopped while still thinking: the rest of the turn is thought, not action.
            pos = len(text) if end < 0 else end + len(closer)
            spans.append((start, pos))
        return spans

    def _replace_think(self, text: str, blank: bool) -> str:
        pieces, pos = [], 0
        for start, end in self._think_spans(text):
            pieces += [text[pos:start], " " * (end - start) if blank else ""]
            pos = end
        pieces.append(text[pos:])
        return "".join(pieces)

    def _mask_think(self, text: str) -> str:
        # Blank rather than cut thoughts, so positions in the masked text are positions in the original
        # and every raw span is the model's exact text.
        return self._replace_think(text, blank=True)

    def _strip_think(self, text: str) -> str:
        return self._replace_think(text, blank=False)

    def parse(self, text: str) -> ParsedTurn:
        if not isinstance(text, str):
            text = "" if text is None else str(text)
        masked = self._mask_think(text)
        calls: list[ToolCall] = []
        errors: list[ParseError] = []
        answer: str | None = None
        unclosed: set[str] = set()
        pos = 0
        while match := self._token.search(masked, pos):
            is_closer, tag = match.group(1) == "/", match.group(2)
            if is_closer:
                message = f"Found </{tag}> without a matching <{tag}> before it. {self._tag_usage(tag)}"
                errors.append(ParseError(message, match.group(0)))
                pos = match.end()
                continue
            closer = f"</{tag}>"
            end = masked.find(closer, match.end())
            if end < 0:
                # Like Search-R1's `<(search|answer)>(.*?)</\1>`, a complete action written after an unclosed
                # opener still counts; later openers of the same tag are unclosed too and reported once.
                if tag not in unclosed:
                    unclosed.add(tag)
                    message = (
                        f"<{tag}> was not closed with {closer} (the turn may have run out of tokens). "
                        f"{self._tag_usage(tag)}"
                    )
                    errors.append(ParseError(message, text[match.start() :]))
                pos = match.end()
                continue
            content, raw = text[match.end() : end], text[match.start() : end + len(closer)]
            pos = end + len(closer)
            if tag == self.answer_tag:
                if content.strip():
                    answer = content.strip()
                    break  # the answer ends the episode; anything after it is never run
                errors.append(ParseError(f"The answer was empty. {self._answer_usage()}", raw))
                continue
            for item in self._action(tag, content, raw):
                if isinstance(item, ParseError):
                    errors.append(item)
                elif self.max_calls is not None and len(calls) >= self.max_calls:
                    errors.append(
                        ParseError(
                            f"A turn may make at most {_plural(self.max_calls, 'tool call')}; the call to "
                            f"{item.name} was not run. Make it in a later turn.",
                            item.raw,
                        )
                    )
                else:
                    calls.append(item)
        if self.answer_tag is None and not calls and not errors:
            # Without an answer tag the model finishes by simply not acting: its visible text is the answer.
            answer = self._strip_think(text).strip() or None
        return ParsedTurn(calls=calls, errors=errors, answer=answer)

    def _closing_sentences(self) -> list[str]:
        lines = []
        if self.answer_tag is not None:
            lines.append(self._answer_usage())
        if self.think_tag is not None:
            tag = self.think_tag
            lines.append(f"Reason inside <{tag}> and </{tag}>; actions written there are ignored.")
        return lines


# json_repair's time grows quadratically with unbalanced nesting (0.4 s at 3,000 "{"); no real tool call
# nests anywhere near this deep, so such text is reported as not understood instead of repaired.
_MAX_REPAIR_DEPTH = 64


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
            value, pos = decoder.raw_decode(text, pos)
            values.append(value)
        if values:
            return values[0] if len(values) == 1 else values
    except (ValueError, RecursionError):
        pass
    if _nesting_depth(text) > _MAX_REPAIR_DEPTH:
        return None
    try:
        return json_repair.loads(text)
    except Exception:  # the repairer's failure modes are not part of its contract (RecursionError, ...)
        return None


_FENCE = re.compile(r"^\s*```[A-Za-z0-9_-]*\s*\n?(.*?)\n?\s*```\s*$", re.DOTALL)


def _type_name(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number" if isinstance(value, int | float) else type(value).__name__
    )


class ToolCallParser(_ActionTagParser):
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
        body = content.strip()
        if fence := _FENCE.match(body):
            body = fence.group(1).strip()
        if not body:
            return [ParseError(f"The tool call was empty. {self._format_hint()}", raw)]
        value = _decode_json(body)
        # A model may batch calls as a JSON list inside one tag; each item is judged on its own.
        items = value if isinstance(value, list) and value else [value]
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
                        "parameters": _input_schema(tool),
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
        parts = [
            "My previous action is invalid. If I want to call a tool, I should write "
            '<tool_call>{"name": <tool-name>, "arguments": <args-json-object>}</tool_call>.'
        ]
        if self.answer_tag is not None:
            parts.append(
                f"If I want to give the final answer, I should put the answer between <{self.answer_tag}> "
                f"and </{self.answer_tag}>."
            )
        parts.append("Let me try again.")
        return "\n" + " ".join(parts) + "\n"


@dataclass(frozen=True)
class _TagTool:
    tool: str
    argument: str | None  # None: the tool's first required parameter, looked up once tools are bound


class TagParser(_ActionTagParser):
    """One tag per tool: ``<search> text </search>`` calls ``search(query="text")``.

    Options: ``tools`` maps a tag to ``{"tool": name, "argument": parameter}`` or just to a tool name (the
    argument is then the tool's first required parameter, or "query" while the schema is unknown);
    ``answer_tag`` ("answer"), ``observation_tag`` ("information"), ``think_tag`` (None),
    ``max_calls`` (None), ``stop_at_call`` (True).
    """

    name: ClassVar[str] = "tags"
    DEFAULT_ARGUMENT: ClassVar[str] = "query"

    def __init__(
        self,
        *,
        tools: Mapping[str, str | Mapping[str, Any]] | None = None,
        answer_tag: str | None = "answer",
        observation_tag: str = "information",
        think_tag: str | None = None,
        max_calls: int | None = None,
        stop_at_call: bool = True,
    ) -> None:
        if tools is None or not isinstance(tools, Mapping):
            raise ValueError(
                f"the {self.name!r} parser needs tools={{tag: tool}} or "
                "{tag: {'tool': name, 'argument': parameter}}, e.g. {'search': 'search'}"
            )
        self.tags = {_check_tag(tag, "a tool tag"): self._tag_tool(tag, spec) for tag, spec in tools.items()}
        self.observation_tag = _check_tag(observation_tag, "observation_tag")
        super().__init__(
            list(self.tags),
            answer_tag=answer_tag,
            think_tag=think_tag,
            max_calls=max_calls,
            stop_at_call=stop_at_call,
        )

    @staticmethod
    def _tag_tool(tag: str, spec: str | Mapping[str, Any]) -> _TagTool:
        if isinstance(spec, str) and spec:
            return _TagTool(tool=spec, argument=None)
        if isinstance(spec, Mapping):
            unknown = set(spec) - {"tool", "argument"}
            tool, argument = spec.get("tool", tag), spec.get("argument")
            if (
                not unknown
                and isinstance(tool, str)
                and tool
                and (argument is None or isinstance(argument, str))
            ):
                return _TagTool(tool=tool, argument=argument or None)
        raise ValueError(
            f"tag {tag!r}: expected a tool name or {{'tool': name, 'argument': parameter}}, got {spec!r}"
        )

    def argument(self, tag: str) -> str:
        """The parameter that receives the text of ``tag``."""
        spec = self.tags[tag]
        if spec.argument is not None:
            return spec.argument
        tool = self._tools.get(spec.tool)
        required = _input_schema(tool).get("required") if tool is not None else None
        if isinstance(required, list) and required and isinstance(required[0], str):
            return required[0]
        return self.DEFAULT_ARGUMENT

    def _usage(self, tag: str) -> str:
        return f"To use {self.tags[tag].tool}, put the {self.argument(tag)} between <{tag}> and </{tag}>."

    def _action(self, tag: str, content: str, raw: str) -> list[ToolCall | ParseError]:
        text = content.strip()
        if not text:
            return [ParseError(f"<{tag}> was empty. {self._usage(tag)}", raw)]
        return [ToolCall(name=self.tags[tag].tool, arguments={self.argument(tag): text}, raw=raw)]

    def format_observation(self, items: Sequence[tuple[ToolCall | ParseError, str]]) -> str:
        joined = "\n".join(result.strip() for _, result in items)
        return f"\n\n<{self.observation_tag}>{joined}</{self.observation_tag}>\n\n"

    def describe_tools(self, tools: Sequence[Mapping[str, Any]]) -> str:
        self.bind_tools(tools)
        obs = self.observation_tag
        lines = [f"You can use tools by writing tags; results come back between <{obs}> and </{obs}>."]
        for tag, spec in self.tags.items():
            argument = self.argument(tag)
            line = f"- <{tag}> {argument} </{tag}>: calls {spec.tool}"
            tool = self._tools.get(spec.tool)
            if tool is not None:
                if description := str(tool.get("description") or "").strip():
                    line += f". {description}"
                properties = _input_schema(tool).get("properties")
                parameter = properties.get(argument) if isinstance(properties, Mapping) else None
                if isinstance(parameter, Mapping) and (
                    about := str(parameter.get("description") or "").strip()
                ):
                    line += f" ({argument}: {about})"
            lines.append(line)
        if self.stop_at_call:
            lines.append("Write one tag at a time and wait for its result.")
        return "\n".join(lines + self._closing_sentences())

    @property
    def invalid_action_message(self) -> str:
        parts = ["My previous action is invalid."]
        parts += [
            f"If I want to use {self.tags[t].tool}, I should put the {self.argument(t)} between "
            f"<{t}> and </{t}>."
            for t in self.tags
        ]
        if self.answer_tag is not None:
            parts.append(
                f"If I want to give the final answer, I should put the answer between <{self.answer_tag}> "
                f"and </{self.answer_tag}>."
            )
        parts.append("Let me try again.")
        return "\n" + " ".join(parts) + "\n"


class SearchR1Parser(TagParser):
    """The Search-R1 protocol: ``<search> query </search>`` → ``\\n\\n<information>…</information>\\n\\n``,
    ``<answer> … </answer>`` ends the episode, generation stops at ``</search>`` or ``</answer>``.

    Options: ``tool`` ("search": the MCP tool behind ``<search>``), ``argument`` ("query"), ``think_tag``
    (None: like the original, a ``<search>`` inside ``<think>`` still runs), ``max_calls`` (None).
    """

    name: ClassVar[str] = "search_r1"

    def __init__(
        self,
        *,
        tool: str = "search",
        argument: str = "query",
        think_tag: str | None = None,
        max_calls: int | None = None,
    ) -> None:
        super().__init__(
            tools={"search": {"tool": tool, "argument": argument}},
            answer_tag="answer",
            observation_tag="information",
            think_tag=think_tag,
            max_calls=max_calls,
        )

    def describe_tools(self, tools: Sequence[Mapping[str, Any]]) -> str:
        # The paper's instruction, so a recipe reproduces its prompt; the question is appended by the data.
        self.bind_tools(tools)
        return (
            "Answer the given question. You must conduct reasoning inside <think> and </think> first every "
            "time you get new information. After reasoning, if you find you lack some knowledge, you can "
            "call a search engine by <search> query </search> and it will return the top searched results "
            "between "
            "<information> and </information>. You can search as many times as your want. If you find no "
            "further external knowledge needed, you can directly provide the answer inside <answer> and "
            "</answer>, without detailed illustrations. For example, <answer> Beijing </answer>."
        )

    @property
    def invalid_action_message(self) -> str:
        return (
            "\nMy previous action is invalid. If I want to search, I should put the query between <search> "
            "and </search>. If I want to give the final answer, I should put the answer between <answer> "
            "and </answer>. Let me try again.\n"
        )


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
