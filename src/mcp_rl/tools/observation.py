"""An MCP tool result → the bounded text a model reads as its observation."""

from __future__ import annotations

import base64
import binascii
import json
import re
from typing import Any

from mcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

TRUNCATION_MARKER = "… [truncated {n} characters]"
# The engine's mark where an observation's tokens were cut to ``rollout.max_observation_tokens``.
TOKEN_TRUNCATION_MARKER = " …[truncated]"
# Lone surrogates (U+D800–U+DFFF) are not Unicode: a tokenizer raises on them and no transport can encode
# them, so tool text carrying one is repaired with U+FFFD (the replacement character) before anyone sees it.
_SURROGATES = re.compile("[\ud800-\udfff]")


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def valid_unicode(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a no-op, and cheap, for valid text)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATES.sub("\ufffd", text)
    return text


def _structured_text(value: Any) -> str:
    # A hostile or buggy server can nest structured content past the JSON encoder's recursion limit; the
    # model is told so instead of the rollout dying on a RecursionError.
    try:
        return value if isinstance(value, str) else compact_json(value)
    except (RecursionError, ValueError, TypeError) as error:
        return f"[structured content that cannot be shown as JSON: {type(error).__name__}]"


def _size(data: str) -> str:
    try:
        n = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        n = len(data)
    return f"{n / 1024:.1f} KB" if n >= 1024 else f"{n} B"


def _text_block(text: str) -> str:
    # Servers send structured results as (often indented) JSON text: re-dump it compactly, because every
    # character the model reads costs tokens; a plain string stays as it is.
    stripped = text.strip()
    if stripped[:1] in "{[":
        try:
            return compact_json(json.loads(stripped))
        except (ValueError, RecursionError):  # not JSON, or nested too deep to re-dump: keep it as sent
            pass
    return text


def render_block(block: Any) -> str:
    """One content block as text: text as is, binary content described rather than dumped."""
    if isinstance(block, TextContent):
        return _text_block(block.text)
    if isinstance(block, ImageContent):
        return f"[image: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, AudioContent):
        return f"[audio: {block.mime_type}, {_size(block.data)}]"
    if isinstance(block, EmbeddedResource):
        resource = block.resource
        if isinstance(resource, TextResourceContents):
            return resource.text
        return f"[resource {resource.uri}: {resource.mime_type or 'binary'}, {_size(resource.blob)}]"
    if isinstance(block, ResourceLink):
        return f"[resource link: {block.uri}" + (f" ({block.name})" if block.name else "") + "]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"


def truncate(text: str, budget_chars: int | None) -> str:
    """Cut ``text`` to ``budget_chars`` with a visible marker saying how much was dropped."""
    if budget_chars is None or len(text) <= budget_chars:
        return text
    marker = TRUNCATION_MARKER.format(n=len(text) - budget_chars)
    return text[: max(budget_chars, 0)] + marker


def render_result(result: CallToolResult, budget_chars: int | None = None) -> str:
    """The observation text of a tool result: text blocks, else structured content as compact JSON."""
    parts = [render_block(block) for block in result.content]
    if not parts and result.structured_content is not None:
        structured = result.structured_content
        # Primitive returns are wrapped as {"result": x} by MCP servers; the model only needs x.
        if isinstance(structured, dict) and set(structured) == {"result"}:
            structured = structured["result"]
        parts = [_structured_text(structured)]
    return valid_unicode(truncate("\n".join(parts), budget_chars))
