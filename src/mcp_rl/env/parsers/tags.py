"""The ``tags`` family: ``TagParser`` (one tag per tool, ``<search> query </search>``) and its Search-R1
preset ``SearchR1Parser``, built on the shared action-tag scanner (``action_tags.py``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from mcp_rl.env.parsers.action_tags import ActionTagParser, check_tag_name
from mcp_rl.env.parsers.base import ParseError, ToolCall, input_schema


@dataclass(frozen=True)
class _TagTool:
    tool: str
    argument: str | None  # None: the tool's first required parameter, looked up once tools are bound


class TagParser(ActionTagParser):
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
        self.tags = {
            check_tag_name(tag, "a tool tag"): self._tag_tool(tag, spec) for tag, spec in tools.items()
        }
        self.observation_tag = check_tag_name(observation_tag, "observation_tag")
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
        required = input_schema(tool).get("required") if tool is not None else None
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
                properties = input_schema(tool).get("properties")
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
        usages = [
            f"If I want to use {self.tags[t].tool}, I should put the {self.argument(t)} between "
            f"<{t}> and </{t}>."
            for t in self.tags
        ]
        return self._invalid_action(["My previous action is invalid.", *usages])


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
