"""An exact-arithmetic calculator MCP server (``python -m tool_servers.calculator``)."""

from tool_servers.calculator.arithmetic import CalcError, calculate, evaluate, format_value
from tool_servers.calculator.server import build_server, main

__all__ = ["CalcError", "build_server", "calculate", "evaluate", "format_value", "main"]
