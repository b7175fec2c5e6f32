"""The calculator MCP server: one tool, ``calculate``, exact arithmetic through a parser (never eval)."""

from __future__ import annotations

import argparse
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from tool_servers.calculator.arithmetic import MAX_EXPRESSION_CHARS, CalcError
from tool_servers.calculator.arithmetic import calculate as calculate_expression
from tool_servers.serving import add_transport_arguments, serve

INSTRUCTIONS = (
    "An exact calculator. Call `calculate` with one arithmetic expression instead of doing arithmetic in "
    "your head; integers, decimals and fractions stay exact."
)


def build_server() -> MCPServer:
    """A fresh calculator server with its one tool registered."""
    server = MCPServer("calculator", instructions=INSTRUCTIONS)

    @server.tool(
        annotations=ToolAnnotations(
            title="Calculator",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        )
    )
    def calculate(
        expression: Annotated[
            str,
            Field(
                # No max_length here: the calculator's own refusal explains the limit better than a
                # schema validation error would.
                description=(
                    "One arithmetic expression, e.g. '(3 + 4) * 2^10 / 7' or 'sqrt(2) * pi' "
                    f"(at most {MAX_EXPRESSION_CHARS} characters)."
                ),
            ),
        ],
    ) -> str:
        """Evaluate an arithmetic expression exactly and return its value.

        Syntax: numbers (42, 3.5, .5, 1e-3); + - * /; // (floor division); % (remainder); ^ or ** (power,
        right-associative, so 2^3^2 = 2^9, and -2^2 = -4); n! (factorial); parentheses.
        Functions: sqrt, abs, round(x) or round(x, digits) (halves round away from zero), floor, ceil,
        min, max, gcd, lcm, factorial, exp, ln, log(x) (natural log) or log(x, base), log10, log2,
        sin, cos, tan, asin, acos, atan (radians), degrees, radians. Constants: pi, e, tau.
        Integers, decimals and fractions are exact: 0.1 + 0.2 = 0.3 and 1/3 + 1/6 = 1/2. A fraction with
        no finite decimal is shown as 'p/q ≈ decimal' (1/3 → 1/3 ≈ 0.3333333333). Results involving pi,
        e, roots that are not exact, or exp/log/trig are floating point, shown as '≈ decimal'.
        Write multiplication explicitly (2*pi, not 2pi). No variables, assignments or comparisons: one
        expression per call. Exact results are limited to about 3000 digits.
        """
        try:
            return calculate_expression(expression)
        except CalcError as err:
            raise ToolError(str(err)) from err

    return server


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and serve the calculator over stdio or streamable HTTP."""
    parser = argparse.ArgumentParser(
        prog="python -m tool_servers.calculator", description="An exact-arithmetic calculator MCP server."
    )
    add_transport_arguments(parser)
    serve(build_server(), parser.parse_args(argv))
