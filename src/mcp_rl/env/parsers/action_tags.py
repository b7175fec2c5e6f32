"""The action-tag scanner every action format is built on: ``ActionTagParser`` finds ``<tag>content</tag>``
actions in a turn, earliest first, and reports the answer tag, think blocks, unclosed and orphaned tags and
the per-turn call limit the same way for every family (``tags`` and ``tool_call``), which only say what one
action's content means.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from mcp_rl.env.parsers.base import ParsedTurn, ParseError, Parser, ToolCall

__all__ = ["ActionTagParser", "check_tag_name"]

_TAG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:-]*")


def check_tag_name(tag: Any, what: str) -> str:
    """``tag`` if it can be written as ``<tag>``; else a ``ValueError`` naming ``what`` (a recipe option)."""
    if not isinstance(tag, str) or not _TAG_NAME.fullmatch(tag):
        raise ValueError(f"{what} must be a tag name like 'search' (letters, digits, _ . : -), got {tag!r}")
    return tag


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


class ActionTagParser(Parser):
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
        self.action_tags = [check_tag_name(t, "an action tag") for t in action_tags]
        self.answer_tag = None if answer_tag is None else check_tag_name(answer_tag, "answer_tag")
        self.think_tag = None if think_tag is None else check_tag_name(think_tag, "think_tag")
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
        # Tags with no closer left in the text: once a search from some point fails, every later opener of
        # the tag is unclosed too, so the rest of the text is not rescanned per opener (quadratic).
        closer_gone: set[str] = set()
        pos = 0
        while match := self._token.search(masked, pos):
            is_closer, tag = match.group(1) == "/", match.group(2)
            if is_closer:
                message = f"Found </{tag}> without a matching <{tag}> before it. {self._tag_usage(tag)}"
                errors.append(ParseError(message, match.group(0)))
                pos = match.end()
                continue
            closer = f"</{tag}>"
            end = -1 if tag in closer_gone else masked.find(closer, match.end())
            if end < 0:
                closer_gone.add(tag)
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

    def _invalid_action(self, parts: list[str]) -> str:
        """An ``invalid_action_message``: ``parts`` (how to act), how to answer, then "Let me try again."."""
        parts = list(parts)
        if self.answer_tag is not None:
            parts.append(
                f"If I want to give the final answer, I should put the answer between <{self.answer_tag}> "
                f"and </{self.answer_tag}>."
            )
        parts.append("Let me try again.")
        return "\n" + " ".join(parts) + "\n"

    def _closing_sentences(self) -> list[str]:
        lines = []
        if self.answer_tag is not None:
            lines.append(self._answer_usage())
        if self.think_tag is not None:
            tag = self.think_tag
            lines.append(f"Reason inside <{tag}> and </{tag}>; actions written there are ignored.")
        return lines
