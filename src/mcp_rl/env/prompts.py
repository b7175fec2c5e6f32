"""Prompts: tool schemas (from the pool, never written twice) and few-shot turns → the first message list.

Also how an observation is appended token-in/token-out: as a chat message rendered by the template, or as
raw text continuing the assistant's turn.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mcp_rl.config.sections import PromptConfig
from mcp_rl.env.parsers import Parser
from mcp_rl.errors import ConfigError
from mcp_rl.tools import ToolSpec

_PROBE_TOOL = {
    "type": "function",
    "function": {
        "name": "probe_tool_xyz",
        "description": "probe",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    },
}
_PLACEHOLDER = "\u2063OBSERVATION\u2063"


def template_fields(template: str) -> list[str]:
    """The row columns a ``str.format`` template reads: ``'{question} ({meta[year]})'`` → question, meta."""
    fields = []
    for _, field, _, _ in string.Formatter().parse(template):
        if field:
            name = re.split(r"[.\[]", field, maxsplit=1)[0]
            if name and not name.isdigit() and name not in fields:
                fields.append(name)
    return fields


def template_supports_tools(tokenizer: Any) -> bool:
    """True when the chat template renders ``tools=`` (SmolLM2's, for one, silently ignores it)."""
    messages = [{"role": "user", "content": "hi"}]
    try:
        with_tools = tokenizer.apply_chat_template(messages, tools=[_PROBE_TOOL], tokenize=False)
        without = tokenizer.apply_chat_template(messages, tokenize=False)
    except Exception:
        return False
    return with_tools != without and "probe_tool_xyz" in with_tools


def _format_row(template: str, row: Mapping[str, Any]) -> str:
    try:
        return template.format(**row)
    except KeyError as missing:
        raise ConfigError(
            f"prompt.user_template refers to {missing} but the dataset rows have only {sorted(row)}"
        ) from None


@dataclass
class PromptBuilder:
    """Builds each question's messages and knows how the tokenizer writes observations back."""

    config: PromptConfig
    parser: Parser
    tools: Sequence[ToolSpec]
    tokenizer: Any

    def __post_init__(self) -> None:
        mode = self.config.tools_in
        self.use_template_tools = bool(self.tools) and (
            mode == "template" or (mode == "auto" and template_supports_tools(self.tokenizer))
        )

    def messages(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        """System prompt (tool descriptions unless the template renders them), few-shot turns, question."""
        system = self.config.system or ""
        if self.tools and not self.use_template_tools and self.config.tools_in != "none":
            description = self.parser.describe_tools([tool.as_dict() for tool in self.tools])
            system = f"{system}\n\n{description}".strip()
        messages: list[dict[str, Any]] = [{"role": "system", "content": system}] if system else []
        messages += [dict(m) for m in self.config.few_shot]
        messages.append({"role": "user", "content": _format_row(self.config.user_template, row)})
        return messages

    def encode(self, messages: Sequence[Mapping[str, Any]]) -> list[int]:
        """Prompt token ids, ending with the generation prompt (the assistant's turn opened)."""
        tools = [tool.as_openai() for tool in self.tools] if self.use_template_tools else None
        text = self.tokenizer.apply_chat_template(
            list(messages), tools=tools, add_generation_prompt=True, tokenize=False
        )
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def observation_frame(self, role: str) -> tuple[str, str]:
        """The template text around an observation: (before, after).

        For a chat role this is what the template writes between the end of the assistant's content and
        the next assistant turn, e.g. ``<|im_end|>\\n<|im_start|>user\\n`` … ``<|im_start|>assistant\\n``.
        For ``inline`` there is no frame: the observation continues the assistant's own turn.
        """
        if role == "inline":
            return "", ""
        marker = "\u2063END\u2063"
        base = [{"role": "user", "content": "q"}, {"role": "assistant", "content": marker}]
        rendered = self.tokenizer.apply_chat_template(
            [*base, {"role": role, "content": _PLACEHOLDER}], add_generation_prompt=True, tokenize=False
        )
        after_marker = rendered[rendered.index(marker) + len(marker) :]
        before, _, after = after_marker.partition(_PLACEHOLDER)
        return before, after
