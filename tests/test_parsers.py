"""Parsers: hand-written cases per format, then fuzzing that no model text can make a parser raise."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest

from mcp_rl.env.parsers import (
    PARSERS,
    ParsedTurn,
    ParseError,
    Parser,
    SearchR1Parser,
    TagParser,
    ToolCall,
    ToolCallParser,
    build_parser,
)

SEARCH_TOOL: dict[str, Any] = {
    "name": "search",
    "description": "Search Wikipedia and return the top passages.",
    "input_schema": {
        "type": "object",
        "properties": {
            "q": {"type": "string", "description": "keywords to look up"},
            "k": {"type": "integer"},
        },
        "required": ["q"],
    },
}
CALC_TOOL: dict[str, Any] = {
    "name": "calculate",
    "description": "Evaluate an arithmetic expression.",
    "inputSchema": {
        "type": "object",
        "properties": {"expression": {"type": "string"}},
        "required": ["expression"],
    },
}


def call(name: str, arguments: Any) -> str:
    return f"<tool_call>{json.dumps({'name': name, 'arguments': arguments}, ensure_ascii=False)}</tool_call>"


def only_error(turn: ParsedTurn) -> ParseError:
    assert turn.calls == [] and turn.answer is None and len(turn.errors) == 1, turn
    return turn.errors[0]


# ---------------------------------------------------------------------------------------------- tool_call


class TestToolCall:
    parser = ToolCallParser()

    def test_good_call_keeps_exact_raw_span(self) -> None:
        raw = call("search", {"query": "capital of France"})
        turn = self.parser.parse(f"Let me look it up.\n{raw}")
        assert turn.calls == [ToolCall("search", {"query": "capital of France"}, raw)]
        assert turn.errors == [] and turn.answer is None and turn.has_action

    def test_whitespace_and_newlines_inside_the_tag(self) -> None:
        turn = self.parser.parse(
            '<tool_call>\n  {"name": " search ", "arguments": {"query": "x"}}\n</tool_call>'
        )
        assert turn.calls[0].name == "search" and turn.calls[0].arguments == {"query": "x"}

    def test_several_calls_in_order(self) -> None:
        parser = ToolCallParser(stop_at_call=False)
        text = call("a", {"x": 1}) + "\nand\n" + call("b", {"y": [1, 2]}) + call("c", {})
        turn = parser.parse(text)
        assert [c.name for c in turn.calls] == ["a", "b", "c"]
        assert [c.arguments for c in turn.calls] == [{"x": 1}, {"y": [1, 2]}, {}]
        assert all(c.raw in text for c in turn.calls)

    @pytest.mark.parametrize(
        "body",
        [
            "{'name': 'search', 'arguments': {'query': 'x'}}",  # single quotes
            '{"name": "search", "arguments": {"query": "x",},}',  # trailing commas
            '{"name": "search", "arguments": {"query": "x"}',  # missing closing brace
            '{"name": "search", "arguments": {"query": "x"',  # two missing
            "{name: search, arguments: {query: x}}",  # unquoted keys and values
            '```json\n{"name": "search", "arguments": {"query": "x"}}\n```',  # code fence
            '{"name": "search", "arguments": {"query": "x"}} and some chatter',
        ],
    )
    def test_repaired_json(self, body: str) -> None:
        turn = self.parser.parse(f"<tool_call>{body}</tool_call>")
        assert turn.errors == []
        assert turn.calls == [ToolCall("search", {"query": "x"}, f"<tool_call>{body}</tool_call>")]

    @pytest.mark.parametrize(
        "body", ["hello there", "search for cats", "}", "[[[", "42", '"just a string"', "null"]
    )
    def test_hopeless_json_is_an_error_showing_the_format(self, body: str) -> None:
        raw = f"<tool_call>{body}</tool_call>"
        error = only_error(self.parser.parse(raw))
        assert "not a JSON object" in error.message
        assert '<tool_call>{"name": ' in error.message and "</tool_call>" in error.message
        assert error.raw == raw

    def test_missing_name(self) -> None:
        error = only_error(self.parser.parse('<tool_call>{"arguments": {"query": "x"}}</tool_call>'))
        assert 'no "name"' in error.message

    def test_tool_name_as_only_key_is_not_a_name(self) -> None:
        error = only_error(self.parser.parse('<tool_call>{"search": {"query": "x"}}</tool_call>'))
        assert '"name"' in error.message

    @pytest.mark.parametrize("name", ["1", "null", '""', '"  "', "[]"])
    def test_name_must_be_a_non_empty_string(self, name: str) -> None:
        turn = self.parser.parse(f'<tool_call>{{"name": {name}, "arguments": {{}}}}</tool_call>')
        assert turn.calls == [] and len(turn.errors) == 1 and '"name"' in turn.errors[0].message

    def test_arguments_as_json_string(self) -> None:
        turn = self.parser.parse(call("search", json.dumps({"query": "x", "k": 3})))
        assert turn.calls[0].arguments == {"query": "x", "k": 3}

    def test_arguments_as_repairable_string(self) -> None:
        turn = self.parser.parse(call("search", "{'query': 'x',}"))
        assert turn.calls[0].arguments == {"query": "x"}

    def test_arguments_as_empty_string_means_none(self) -> None:
        assert self.parser.parse(call("now", "")).calls[0].arguments == {}

    @pytest.mark.parametrize(
        ("arguments", "kind"), [([1, 2], "a list"), (3, "a number"), ("not json at all", "not valid JSON")]
    )
    def test_arguments_must_be_an_object(self, arguments: Any, kind: str) -> None:
        error = only_error(self.parser.parse(call("search", arguments)))
        assert '"arguments"' in error.message and kind in error.message

    def test_missing_or_null_arguments_mean_no_arguments(self) -> None:
        assert self.parser.parse('<tool_call>{"name": "now"}</tool_call>').calls[0].arguments == {}
        assert self.parser.parse(call("now", None)).calls[0].arguments == {}

    def test_parameters_alias_and_openai_envelope(self) -> None:
        turn = self.parser.parse('<tool_call>{"name": "s", "parameters": {"q": 1}}</tool_call>')
        assert turn.calls[0].arguments == {"q": 1}
        envelope = {"type": "function", "function": {"name": "s", "arguments": '{"q": 2}'}}
        turn = self.parser.parse(f"<tool_call>{json.dumps(envelope)}</tool_call>")
        assert (turn.calls[0].name, turn.calls[0].arguments) == ("s", {"q": 2})

    def test_a_list_of_calls_in_one_tag(self) -> None:
        turn = self.parser.parse(
            '<tool_call>[{"name": "a"}, {"name": "b", "arguments": {"x": 1}}, 3]</tool_call>'
        )
        assert [c.name for c in turn.calls] == ["a", "b"]
        assert len(turn.errors) == 1 and "not a JSON object" in turn.errors[0].message

    def test_concatenated_objects_are_several_calls(self) -> None:
        turn = self.parser.parse('<tool_call>{"name": "a"} {"name": "b"}</tool_call>')
        assert [c.name for c in turn.calls] == ["a", "b"]

    def test_empty_call(self) -> None:
        assert "empty" in only_error(self.parser.parse("<tool_call>  \n </tool_call>")).message

    def test_unclosed_call_is_an_error(self) -> None:
        text = 'I will search. <tool_call>{"name": "search", "arguments": {"query": "capi'
        error = only_error(self.parser.parse(text))
        assert "not closed" in error.message and "</tool_call>" in error.message
        assert error.raw == text[text.index("<tool_call>") :]

    def test_unclosed_call_after_a_good_one(self) -> None:
        turn = ToolCallParser(stop_at_call=False).parse(call("a", {}) + "<tool_call>{")
        assert [c.name for c in turn.calls] == ["a"] and len(turn.errors) == 1

    def test_orphan_closing_tag(self) -> None:
        error = only_error(self.parser.parse('{"name": "search"}</tool_call>'))
        assert "without a matching <tool_call>" in error.message and error.raw == "</tool_call>"

    def test_answer_only(self) -> None:
        turn = self.parser.parse("I know this.\n<answer>  Paris \n</answer>")
        assert turn == ParsedTurn(calls=[], errors=[], answer="Paris") and turn.has_action

    def test_answer_after_call_keeps_both(self) -> None:
        turn = self.parser.parse(call("search", {"query": "x"}) + "<answer>Paris</answer>")
        assert len(turn.calls) == 1 and turn.answer == "Paris"

    def test_call_after_answer_is_ignored(self) -> None:
        turn = self.parser.parse("<answer>Paris</answer>" + call("search", {"query": "x"}) + "<tool_call>{")
        assert turn == ParsedTurn(calls=[], errors=[], answer="Paris")

    def test_empty_and_unclosed_answers_are_errors(self) -> None:
        assert "empty" in only_error(self.parser.parse("<answer>   </answer>")).message
        error = only_error(self.parser.parse("<answer> Par"))
        assert "not closed" in error.message and "</answer>" in error.message

    def test_no_action(self) -> None:
        turn = self.parser.parse("I am not sure what to do.")
        assert turn == ParsedTurn(calls=[], errors=[], answer=None) and not turn.has_action
        assert "<tool_call>" in self.parser.invalid_action_message
        assert "<answer>" in self.parser.invalid_action_message

    def test_without_answer_tag_plain_text_is_the_answer(self) -> None:
        parser = ToolCallParser(answer_tag=None)
        assert parser.stop_strings == ["</tool_call>"]
        assert parser.parse("  The capital is Paris.\n").answer == "The capital is Paris."
        assert parser.parse("<answer>Paris</answer>").answer == "<answer>Paris</answer>"
        turn = parser.parse("Searching. " + call("search", {"query": "x"}))
        assert turn.answer is None and len(turn.calls) == 1
        assert parser.parse("<tool_call>{").answer is None
        assert not parser.parse(" \n ").has_action
        assert "<answer>" not in parser.invalid_action_message

    def test_think_blocks_are_ignored(self) -> None:
        parser = ToolCallParser(answer_tag=None, think_tag="think")
        text = "<think>maybe " + call("a", {}) + "</think>" + call("b", {})
        assert [c.name for c in parser.parse(text).calls] == ["b"]
        assert parser.parse("<think>it is Paris</think>\n\nParis").answer == "Paris"
        # the template pre-filled "<think>": the turn starts inside the thought
        assert parser.parse("it is Paris</think>Paris").answer == "Paris"
        # generation stopped while still thinking: nothing in the thought runs
        assert not parser.parse("<think>I will " + call("a", {})).has_action
        # without think_tag the same text is an action
        assert ToolCallParser().parse("<think>I will " + call("a", {})).calls[0].name == "a"

    def test_max_calls(self) -> None:
        parser = ToolCallParser(stop_at_call=False, max_calls=2)
        turn = parser.parse(call("a", {}) + call("b", {}) + call("c", {}))
        assert [c.name for c in turn.calls] == ["a", "b"]
        assert len(turn.errors) == 1 and "c was not run" in turn.errors[0].message

    def test_unicode(self) -> None:
        turn = self.parser.parse(call("search", {"query": "東京タワー 🗼 Zürich"}) + "ünïcödé")
        assert turn.calls[0].arguments == {"query": "東京タワー 🗼 Zürich"}
        assert self.parser.parse("<answer> 北京 </answer>").answer == "北京"

    def test_tags_are_case_sensitive(self) -> None:
        assert not self.parser.parse('<TOOL_CALL>{"name": "a"}</TOOL_CALL><Answer>x</Answer>').has_action

    def test_stop_strings(self) -> None:
        assert ToolCallParser().stop_strings == ["</tool_call>", "</answer>"]
        assert ToolCallParser(stop_at_call=False).stop_strings == ["</answer>"]
        assert ToolCallParser(answer_tag="final").stop_strings == ["</tool_call>", "</final>"]
        assert ToolCallParser(answer_tag="final").parse("<final>x</final>").answer == "x"

    def test_format_observation(self) -> None:
        turn = ToolCallParser(stop_at_call=False).parse(call("a", {}) + "<tool_call>x</tool_call>")
        items = [(turn.calls[0], "result one"), (turn.errors[0], turn.errors[0].message)]
        text = self.parser.format_observation(items)
        assert text == (
            "<tool_response>\nresult one\n</tool_response>\n"
            f"<tool_response>\n{turn.errors[0].message}\n</tool_response>"
        )

    def test_describe_tools_lists_one_json_schema_per_line(self) -> None:
        parser = ToolCallParser()
        text = parser.describe_tools([SEARCH_TOOL, CALC_TOOL])
        block = text[text.index("<tools>\n") + len("<tools>\n") : text.index("\n</tools>")]
        lines = block.split("\n")
        assert len(lines) == 2
        first = json.loads(lines[0])
        assert first["function"]["name"] == "search"
        assert first["function"]["parameters"] == SEARCH_TOOL["input_schema"]
        assert json.loads(lines[1])["function"]["parameters"]["required"] == ["expression"]
        assert '{"name": <function-name>, "arguments": <args-json-object>}' in text
        assert "<answer>" in text
        # once the tools are known, errors name them
        assert (
            "Available tools: search, calculate"
            in only_error(parser.parse("<tool_call>?</tool_call>")).message
        )


# ---------------------------------------------------------------------------------------------- tags


class TestTags:
    def test_custom_tag_maps_to_a_tool(self) -> None:
        parser = TagParser(tools={"query": {"tool": "search", "argument": "q"}})
        turn = parser.parse("<think>hmm</think>\n<query>  capital of France </query>")
        assert turn.calls == [
            ToolCall("search", {"q": "capital of France"}, "<query>  capital of France </query>")
        ]
        assert parser.stop_strings == ["</query>", "</answer>"]

    def test_argument_resolves_lazily_from_the_schema(self) -> None:
        parser = TagParser(tools={"query": "search"})
        assert parser.parse("<query>x</query>").calls[0].arguments == {"query": "x"}
        parser.describe_tools([SEARCH_TOOL])
        assert parser.parse("<query>x</query>").calls[0].arguments == {"q": "x"}
        assert "put the q between <query> and </query>" in parser.invalid_action_message
        parser.bind_tools([{"name": "search", "input_schema": {"type": "object"}}])
        assert parser.parse("<query>x</query>").calls[0].arguments == {"query": "x"}

    def test_tool_defaults_to_the_tag(self) -> None:
        parser = TagParser(tools={"calculate": {"argument": "expression"}})
        assert parser.parse("<calculate>1+1</calculate>").calls[0] == ToolCall(
            "calculate", {"expression": "1+1"}, "<calculate>1+1</calculate>"
        )

    def test_earliest_action_wins(self) -> None:
        parser = TagParser(
            tools={"search": "search", "calc": {"tool": "calculate", "argument": "expression"}}
        )
        turn = parser.parse("<calc> 2*3 </calc> then <search>x</search> then <calc>4</calc>")
        assert [(c.name, c.arguments) for c in turn.calls] == [
            ("calculate", {"expression": "2*3"}),
            ("search", {"query": "x"}),
            ("calculate", {"expression": "4"}),
        ]

    def test_answer_ends_the_turn(self) -> None:
        parser = build_parser("search_r1")
        turn = parser.parse("<search>a</search><answer> Paris </answer><search>b</search><search>")
        assert [c.arguments["query"] for c in turn.calls] == ["a"]
        assert turn.answer == "Paris" and turn.errors == []

    def test_unclosed_and_empty_actions(self) -> None:
        parser = build_parser("search_r1")
        error = only_error(parser.parse("<think>I need to look</think><search> capital of"))
        assert "not closed" in error.message and "</search>" in error.message
        assert error.raw == "<search> capital of"
        error = only_error(parser.parse("<search>  \n </search>"))
        assert "empty" in error.message and "put the query between <search> and </search>" in error.message

    def test_unclosed_opener_then_complete_action(self) -> None:
        # like Search-R1's regex, the complete answer after a stray opener still counts
        turn = build_parser("search_r1").parse("<search> a <search> b <answer> c </answer>")
        assert turn.answer == "c" and len(turn.errors) == 1 and "not closed" in turn.errors[0].message

    def test_nested_opener_belongs_to_the_first_closer(self) -> None:
        turn = build_parser("search_r1").parse("<search> a <search> b </search>")
        assert turn.calls[0].arguments == {"query": "a <search> b"}

    def test_think_tag_hides_actions(self) -> None:
        parser = TagParser(tools={"search": "search"}, think_tag="think")
        turn = parser.parse("<think>should I <search>x</search>?</think><search>y</search>")
        assert [c.arguments["query"] for c in turn.calls] == ["y"]
        assert parser.parse("<think><answer>no</answer></think><answer>yes</answer>").answer == "yes"
        assert not parser.parse("<think> <search>x</search>").has_action

    def test_think_is_an_action_free_zone_only_when_asked(self) -> None:
        turn = build_parser("search_r1").parse("<think> let me <search>x</search>")
        assert turn.calls[0].arguments == {"query": "x"}

    def test_case_sensitive_and_exact_tags(self) -> None:
        parser = build_parser("search_r1")
        assert not parser.parse("<Search>x</Search> <search >x</search > <ANSWER>y</ANSWER>").has_action

    def test_unicode_and_multiline_query(self) -> None:
        turn = build_parser("search_r1").parse("<search>\n  Gödel\tincompleteness 定理 \n</search>")
        assert turn.calls[0].arguments == {"query": "Gödel\tincompleteness 定理"}

    def test_max_calls(self) -> None:
        parser = TagParser(tools={"search": "search"}, max_calls=1, stop_at_call=False)
        assert parser.stop_strings == ["</answer>"]
        turn = parser.parse("<search>a</search><search>b</search>")
        assert [c.arguments["query"] for c in turn.calls] == ["a"]
        assert "at most 1 tool call;" in turn.errors[0].message

    def test_no_answer_tag(self) -> None:
        parser = TagParser(tools={"search": "search"}, answer_tag=None)
        assert parser.stop_strings == ["</search>"]
        assert parser.parse(" It is Paris. ").answer == "It is Paris."
        assert parser.parse("<search>x</search>").answer is None

    def test_no_tools_only_answers(self) -> None:
        parser = TagParser(tools={})
        assert parser.parse("<>x</> <answer>y</answer>").answer == "y"
        assert not TagParser(tools={}, answer_tag=None).parse("<>x</>").calls

    def test_format_observation(self) -> None:
        parser = build_parser("search_r1")
        turn = parser.parse("<search>x</search>")
        assert parser.format_observation([(turn.calls[0], "  Doc 1(Title: A) a\n")]) == (
            "\n\n<information>Doc 1(Title: A) a</information>\n\n"
        )
        custom = TagParser(tools={"q": "search"}, observation_tag="result")
        assert (
            custom.format_observation([(turn.calls[0], "a"), (turn.calls[0], "b")])
            == "\n\n<result>a\nb</result>\n\n"
        )

    def test_describe_tools(self) -> None:
        parser = TagParser(tools={"query": "search", "calc": "calculate"}, think_tag="think")
        text = parser.describe_tools([SEARCH_TOOL, CALC_TOOL, {"name": "unused"}])
        assert "<query> q </query>" in text and SEARCH_TOOL["description"] in text
        assert "keywords to look up" in text
        assert "<calc> expression </calc>" in text and CALC_TOOL["description"] in text
        assert "<answer>" in text and "<information>" in text and "<think>" in text
        assert "unused" not in text

    @pytest.mark.parametrize(
        "options",
        [
            {},
            {"tools": ["search"]},
            {"tools": {"bad tag": "search"}},
            {"tools": {"search": ""}},
            {"tools": {"search": {"tool": "search", "argumnet": "q"}}},
            {"tools": {"search": 3}},
            {"tools": {"answer": "search"}},
            {"tools": {"search": "s"}, "think_tag": "answer"},
            {"tools": {"search": "s"}, "max_calls": 0},
            {"tools": {"search": "s"}, "observation_tag": "<information>"},
        ],
    )
    def test_bad_options_raise_value_error(self, options: dict[str, Any]) -> None:
        with pytest.raises(ValueError):
            build_parser("tags", **options)


class TestSearchR1:
    parser = SearchR1Parser()

    def test_protocol(self) -> None:
        assert self.parser.name == "search_r1"
        assert self.parser.stop_strings == ["</search>", "</answer>"]
        assert self.parser.invalid_action_message == (
            "\nMy previous action is invalid. If I want to search, I should put the query between <search> "
            "and </search>. If I want to give the final answer, I should put the answer between <answer> "
            "and </answer>. Let me try again.\n"
        )
        describe = self.parser.describe_tools([SEARCH_TOOL])
        assert "<search> query </search>" in describe and "<answer> Beijing </answer>" in describe

    def test_typical_turns(self) -> None:
        turn = self.parser.parse("<think>I need the capital.</think>\n<search> capital of France </search>")
        assert turn.calls == [
            ToolCall("search", {"query": "capital of France"}, "<search> capital of France </search>")
        ]
        assert self.parser.parse("<think>Found it.</think>\n<answer> Paris </answer>").answer == "Paris"

    def test_argument_is_fixed_even_after_binding(self) -> None:
        parser = SearchR1Parser(tool="retriever-search")
        parser.bind_tools([SEARCH_TOOL | {"name": "retriever-search"}])
        assert parser.parse("<search>x</search>").calls[0] == ToolCall(
            "retriever-search", {"query": "x"}, "<search>x</search>"
        )

    def test_matches_the_reference_regex(self) -> None:
        # Search-R1 takes the first complete `<(search|answer)>(.*?)</\1>`; our first action must agree.
        reference = re.compile(r"<(search|answer)>(.*?)</\1>", re.DOTALL)
        fragments = [
            "<search>",
            "</search>",
            "<answer>",
            "</answer>",
            "<think>",
            "</think>",
            " q ",
            "a",
            "\n",
        ]
        rng = random.Random(7)
        for _ in range(3000):
            text = "".join(rng.choice(fragments) for _ in range(rng.randrange(1, 10)))
            turn = self.parser.parse(text)
            match = reference.search(text)
            if match is None:
                assert turn.calls == [] and turn.answer is None, text
                continue
            tag, content = match.group(1), match.group(2).strip()
            if not content:
                continue  # the reference runs an empty search or accepts an empty answer; we ask again
            if tag == "search":
                assert turn.calls and turn.calls[0].arguments == {"query": content}, text
                assert turn.calls[0].raw == match.group(0)
            else:
                assert turn.calls == [] and turn.answer == content, text


# ---------------------------------------------------------------------------------------------- registry


def test_registry() -> None:
    assert set(PARSERS) == {"tool_call", "tags", "search_r1"}
    assert isinstance(build_parser("tool_call", answer_tag=None), ToolCallParser)
    assert isinstance(build_parser("tags", tools={"query": "search"}), TagParser)
    assert isinstance(build_parser("search_r1", tool="wiki"), SearchR1Parser)
    with pytest.raises(ValueError, match="available parsers: search_r1, tags, tool_call"):
        build_parser("hermes")
    with pytest.raises(ValueError, match="invalid options for parser 'search_r1'"):
        build_parser("search_r1", answer="x")


# ---------------------------------------------------------------------------------------------- fuzzing

VALID_CALL = '<tool_call>{"name": "search", "arguments": {"query": "capital of France", "k": 3}}</tool_call>'
FRAGMENTS = [
    "<tool_call>", "</tool_call>", "<search>", "</search>", "<answer>", "</answer>", "<think>", "</think>",
    "<query>", "</query>", "<information>", "</information>", "<tool_response>", "<", ">", "</", "/>",
    "{", "}", "[", "]", ":", ",", '"', "'", "\\", '\\"', "\\u12", "\\ud800", '"name"', '"arguments"',
    '"parameters"', '"function"', '"search"', '"query"', "name", "null", "true", "NaN", "-Infinity", "1e999",
    "0", "-", ".", "```json\n", "```", " ", "\n", "\t", "\r\n", "\x00", "\ufeff", "é", "北京", "🙂", "\ud83d",
    '{"name": "a"}', '{"name": 1}', '{"arguments": {}}', '"arguments": "{\\"q\\": 1}"',
    '{"name": "a", "arguments": [',
    VALID_CALL, "<search> capital of France </search>", "<answer> Paris </answer>",
]  # fmt: skip


def random_text(rng: random.Random) -> str:
    kind = rng.randrange(6)
    if kind == 0:  # random unicode, surrogates and control characters included
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randrange(40)))
    if kind == 1:  # a valid call cut anywhere, as when the token budget runs out
        return VALID_CALL[: rng.randrange(len(VALID_CALL) + 1)]
    if kind == 2:  # a valid call with one character broken
        i = rng.randrange(len(VALID_CALL))
        return VALID_CALL[:i] + rng.choice([*FRAGMENTS, "", "{", "}"]) + VALID_CALL[i + 1 :]
    if kind == 3:  # deep nesting
        depth = rng.randrange(1, 3000)
        return "<tool_call>" + rng.choice(["[", "{", '{"a":']) * depth + "</tool_call>"
    pieces = [rng.choice(FRAGMENTS) for _ in range(rng.randrange(1, 25))]
    if kind == 4:
        pieces = [p if rng.random() < 0.8 else chr(rng.randrange(0x110000)) for p in pieces]
    return "".join(pieces)


def fuzz_parsers() -> list[Parser]:
    return [
        ToolCallParser(),
        ToolCallParser(answer_tag=None, think_tag="think", stop_at_call=False, max_calls=2),
        TagParser(tools={"query": "search", "search": {"tool": "web", "argument": "q"}}, think_tag="think"),
        SearchR1Parser(),
    ]


FUZZ_PARSERS = fuzz_parsers()


def check_turn(parser: Parser, text: str) -> None:
    turn = parser.parse(text)
    assert isinstance(turn, ParsedTurn)
    assert isinstance(turn.calls, list) and isinstance(turn.errors, list)
    for c in turn.calls:
        assert isinstance(c, ToolCall)
        assert isinstance(c.name, str) and c.name
        assert isinstance(c.arguments, dict) and all(isinstance(k, str) for k in c.arguments)
        assert isinstance(c.raw, str) and c.raw in text
    for e in turn.errors:
        assert (
            isinstance(e, ParseError) and isinstance(e.message, str) and e.message and isinstance(e.raw, str)
        )
    assert turn.answer is None or (
        isinstance(turn.answer, str) and turn.answer and turn.answer == turn.answer.strip()
    )
    assert turn.has_action == bool(turn.calls or turn.errors or turn.answer is not None)
    items: list[tuple[ToolCall | ParseError, str]] = [(c, "ok") for c in turn.calls]
    items += [(e, e.message) for e in turn.errors]
    assert isinstance(parser.format_observation(items), str)


@pytest.mark.parametrize("parser", FUZZ_PARSERS, ids=lambda p: f"{p.name}")
def test_fuzz_never_raises(parser: Parser) -> None:
    rng = random.Random(1234)
    for _ in range(10_000):
        check_turn(parser, random_text(rng))


try:  # hypothesis is optional: the seeded loops above are the fuzzing that always runs
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st
except ImportError:

    def test_hypothesis_never_raises() -> None:
        pytest.skip("hypothesis is not installed")

else:
    fragments_or_text = st.sampled_from(FRAGMENTS) | st.text(max_size=3)

    @settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        text=st.one_of(st.text(), st.lists(fragments_or_text, max_size=20).map("".join)),
        index=st.integers(0, len(FUZZ_PARSERS) - 1),
    )
    def test_hypothesis_never_raises(text: str, index: int) -> None:
        check_turn(FUZZ_PARSERS[index], text)


def test_describe_tools_tolerates_odd_tool_dicts() -> None:
    odd = [
        {"name": "x"},
        {"name": "y", "description": None, "input_schema": None},
        {"description": "no name"},
    ]
    for parser in fuzz_parsers():
        assert isinstance(parser.describe_tools(odd), str)
        check_turn(parser, VALID_CALL + "<search>x</search><query>y</query>")


# ------------------------------------------------------------------- pathological inputs (issue 11, defect 5)
# Their time is held to a bound in bench/parsers.py; here only what the parsers make of them is checked.


def test_a_fence_followed_by_whitespace_is_not_understood() -> None:
    parser = ToolCallParser()
    for filler in (" " * 1500, "\n" * 3000):
        turn = parser.parse("<tool_call>```" + filler + "x</tool_call>")
        assert not turn.calls and len(turn.errors) == 1 and "not a JSON object" in turn.errors[0].message
    fenced = parser.parse(
        '<tool_call>```json\n\n{"name": "search", "arguments": {"query": "x"}}\n \n```</tool_call>'
    )
    assert [(c.name, c.arguments) for c in fenced.calls] == [("search", {"query": "x"})]


def test_many_unclosed_openers_are_one_error() -> None:
    turn = SearchR1Parser().parse("<search>" * 50_000 + "<answer> Paris </answer>")
    assert turn.answer == "Paris" and not turn.calls
    assert [e.message.split(" was not closed")[0] for e in turn.errors] == ["<search>"]


def test_an_unterminated_megabyte_string_is_not_repaired() -> None:
    turn = ToolCallParser().parse('<tool_call>{"name": "search", "arguments": {"query": "' + "a" * 1_000_000)
    assert not turn.calls and len(turn.errors) == 1 and "not closed" in turn.errors[0].message
    cut = ToolCallParser().parse(
        '<tool_call>{"name": "search", "arguments": {"query": "' + "a" * 1_000_000 + "</tool_call>"
    )
    assert not cut.calls and "not a JSON object" in cut.errors[0].message


def test_thousands_of_values_in_one_tag_are_one_error() -> None:
    turn = ToolCallParser().parse("<tool_call>" + "1 " * 30_000 + "</tool_call>")
    assert not turn.calls and len(turn.errors) == 1 and "more than 64 values" in turn.errors[0].message
    listed = ToolCallParser().parse("<tool_call>[" + ",".join(["{}"] * 1000) + "]</tool_call>")
    assert len(listed.errors) == 1 and "more than 64 values" in listed.errors[0].message
