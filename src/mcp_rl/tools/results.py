"""What a tool call produces: the tool as the model sees it (``ToolSpec``), the outcome of a call
(``ToolResult``, built for failures by ``failed``), why a call failed (``FailureKind``), the error a pool
that cannot be used at all raises (``ToolPoolError``), and the classification of error text and
exceptions into those failure kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any


class FailureKind(StrEnum):
    """Why a call produced no tool output; the values are what logs and observations say."""

    TIMEOUT = "timeout"
    CONNECTION_LOST = "connection lost"
    UNAVAILABLE = "server unavailable"
    TOOL_ERROR = "tool error"
    BAD_ARGUMENTS = "bad arguments"
    UNKNOWN_TOOL = "unknown tool"


class ToolPoolError(RuntimeError):
    """The pool cannot be used at all (a server failed to start, or the pool is closed)."""


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: a pool-unique name, plus where it really lives."""

    name: str
    server: str
    remote_name: str
    description: str
    input_schema: dict[str, Any]
    output_schema: dict[str, Any] | None = None
    # The server declares the tool idempotent or read-only (MCP annotations): a call lost in flight may
    # be sent again without the risk of doing its work twice.
    idempotent: bool = False
    # The server declares that the tool changes nothing (readOnlyHint): no fresh instance per episode needed.
    read_only: bool = False

    def as_dict(self) -> dict[str, Any]:
        """MCP's shape, for prompts and parsers."""
        return {"name": self.name, "description": self.description, "input_schema": self.input_schema}

    def as_openai(self) -> dict[str, Any]:
        """The function-calling shape chat templates take through ``tools=``."""
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.input_schema},
        }


@dataclass
class ToolResult:
    """The outcome of one call. ``text`` is always the observation the model reads, failures included."""

    tool: str
    arguments: dict[str, Any]
    text: str
    failure: FailureKind | None = None
    latency_s: float = 0.0
    attempts: int = 1
    structured: Any = None

    @property
    def ok(self) -> bool:
        return self.failure is None


def failed(tool: str, arguments: dict[str, Any], kind: FailureKind, detail: str, **extra: Any) -> ToolResult:
    """A failed call's result: the text the model reads is ``Error (<kind>): <detail>``."""
    return ToolResult(tool=tool, arguments=arguments, text=f"Error ({kind}): {detail}", failure=kind, **extra)


def describe_error(error: BaseException) -> str:
    """An exception as one line, ``Type: message`` (a group's members joined with "; "), for failure
    texts, start errors and log records alike."""
    if isinstance(error, BaseExceptionGroup):
        return "; ".join(describe_error(e) for e in error.exceptions)
    # One line: a pydantic error spans dozens, and this text lands in one-line errors and log records.
    message = " ".join(str(error).split())
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


def classify_error_result(text: str) -> FailureKind:
    """The failure kind of a result the server marked ``isError``, by its text: servers say "unknown tool"
    or "validation error" in words, not codes."""
    lowered = text.lower()
    if "unknown tool" in lowered or "tool not found" in lowered:
        return FailureKind.UNKNOWN_TOOL
    if "validation error" in lowered or "invalid arguments" in lowered:
        return FailureKind.BAD_ARGUMENTS
    return FailureKind.TOOL_ERROR


def matches_error_pattern(config: Any, text: str) -> bool:
    """Whether a successful result's text is really an error, by the server's ``errorPattern``."""
    pattern = getattr(config, "error_pattern", None)
    return pattern is not None and pattern.search(text) is not None
