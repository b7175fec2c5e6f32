"""One tool call on one server connection: a slot of the server's concurrency cap taken before the call's
deadline, the request sent on the live session (waiting for a reconnect when it is down), the reply or the
error turned into a ``ToolResult``, and a call lost with its connection sent again where that is safe.
"""

from __future__ import annotations

from typing import Any

import anyio
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp.types import CallToolResult
from mcp_types.jsonrpc import CONNECTION_CLOSED, INVALID_PARAMS, METHOD_NOT_FOUND

from mcp_rl.tools.connection import ServerConnection
from mcp_rl.tools.observation import render_result
from mcp_rl.tools.results import (
    FailureKind,
    ToolResult,
    ToolSpec,
    classify_error_result,
    describe_error,
    failed,
    matches_error_pattern,
)
from mcp_rl.tools.server_config import ServerConfig

__all__ = ["call_on_connection"]


async def call_on_connection(
    connection: ServerConnection,
    spec: ToolSpec,
    arguments: dict[str, Any],
    timeout_s: float,
    budget: int | None,
) -> ToolResult:
    """Call ``spec`` on ``connection`` within ``timeout_s`` in all (the wait for a slot and for a reconnect
    included), its output cut to ``budget`` characters. Never raises for the tool's or the server's
    failures; ``attempts`` on the result counts the sends."""
    attempts = 0
    deadline = anyio.current_time() + timeout_s
    if not await _acquire_before(connection.limiter, deadline):
        return failed(
            spec.name,
            arguments,
            FailureKind.TIMEOUT,
            f"{spec.name}: no free slot on server {spec.server!r} within {timeout_s:.1f} s "
            f"({connection.config.max_concurrency} calls in flight)",
            attempts=0,
        )
    try:
        while True:
            attempts += 1
            client = connection.client
            if client is None or connection.lost.is_set():
                client = None
                with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
                    client = await connection.wait_ready()
            if client is None:
                return failed(
                    spec.name,
                    arguments,
                    FailureKind.UNAVAILABLE,
                    f"server {spec.server!r} is not connected ({connection.last_error})",
                    attempts=attempts,
                )
            result = await _call_once(connection, client, spec, arguments, deadline, budget)
            result.attempts = attempts
            if not _retry_lost(result, spec, connection.config, attempts):
                return result
    finally:
        connection.limiter.release()


async def _call_once(
    connection: ServerConnection,
    client: Client,
    spec: ToolSpec,
    arguments: dict[str, Any],
    deadline: float,
    budget: int | None,
) -> ToolResult:
    # One scope serves both ends: its deadline is the timeout, and the supervisor cancels it (after taking
    # it out of `inflight`) when the connection drops.
    scope = anyio.CancelScope(deadline=deadline)
    inflight = connection.inflight
    inflight.add(scope)
    outcome: CallToolResult | BaseException | None = None
    remaining = max(0.0, deadline - anyio.current_time())
    try:
        with scope:
            try:
                outcome = await client.call_tool(spec.remote_name, arguments)
            except Exception as error:
                outcome = error
    finally:
        dropped = scope.cancel_called and inflight is not connection.inflight
        inflight.discard(scope)
    if dropped and not isinstance(outcome, CallToolResult):
        return failed(
            spec.name,
            arguments,
            FailureKind.CONNECTION_LOST,
            f"server {spec.server!r} went away during the call",
        )
    if scope.cancelled_caught and not isinstance(outcome, CallToolResult):
        return failed(
            spec.name,
            arguments,
            FailureKind.TIMEOUT,
            f"{spec.name} did not answer within {remaining:.1f} s",
        )
    if isinstance(outcome, CallToolResult):
        if outcome.is_error:  # bounded, prefix included, by the pool
            text = render_result(outcome, None)
            kind = classify_error_result(text)
            return ToolResult(spec.name, arguments, f"Error ({kind}): {text}", failure=kind)
        text = render_result(outcome, budget)
        if matches_error_pattern(connection.config, text):
            # The server said "Error: ..." as plain text (errorPattern): a failure in the metrics, while
            # the model reads the server's own words.
            return ToolResult(spec.name, arguments, text, failure=FailureKind.TOOL_ERROR)
        return ToolResult(spec.name, arguments, text, structured=outcome.structured_content)
    return _failure_from_exception(connection, spec, arguments, outcome)


def _failure_from_exception(
    connection: ServerConnection, spec: ToolSpec, arguments: dict[str, Any], error: BaseException | None
) -> ToolResult:
    if isinstance(error, MCPError):
        if error.code == CONNECTION_CLOSED:
            connection.lost.set()
            return failed(
                spec.name,
                arguments,
                FailureKind.CONNECTION_LOST,
                f"server {spec.server!r}: {error.message}",
            )
        kind = {
            INVALID_PARAMS: FailureKind.BAD_ARGUMENTS,
            METHOD_NOT_FOUND: FailureKind.UNKNOWN_TOOL,
        }.get(error.code, FailureKind.TOOL_ERROR)
        return failed(spec.name, arguments, kind, error.message)
    if isinstance(error, anyio.ClosedResourceError | anyio.BrokenResourceError | anyio.EndOfStream | OSError):
        connection.lost.set()
        return failed(
            spec.name,
            arguments,
            FailureKind.CONNECTION_LOST,
            f"server {spec.server!r}: {describe_error(error)}",
        )
    detail = describe_error(error) if error else "no result"
    return failed(spec.name, arguments, FailureKind.TOOL_ERROR, detail)


def _retry_lost(result: ToolResult, spec: ToolSpec, config: ServerConfig, attempts: int) -> bool:
    """Whether a call is sent again: only one lost with its connection (it may or may not have run), only
    ``retries`` times, and only to a tool whose server declares it idempotent or read-only, or that the
    configuration says is safe to repeat (``retryLostCalls``). Any other lost call comes back as
    "connection lost": running a side effect twice is worse than one failed call the model can repeat."""
    if result.failure is not FailureKind.CONNECTION_LOST or attempts > config.retries:
        return False
    return spec.idempotent or config.retry_lost_calls


async def _acquire_before(limiter: anyio.CapacityLimiter, deadline: float) -> bool:
    """Take a slot of the server's concurrency cap, waiting no later than the call's deadline: calls
    queued behind hung ones time out on time instead of waiting for a slot first."""
    # The limiter's context manager costs two checkpoints per call even when the cap is far away.
    try:
        limiter.acquire_nowait()
        return True
    except anyio.WouldBlock:
        with anyio.move_on_after(max(0.0, deadline - anyio.current_time())):
            await limiter.acquire()
            return True
    return False
