"""Ordinary MCP servers used by mcp-rl recipes.

Each subpackage is a standalone MCP server (``python -m tool_servers.NAME``) that a production agent can
use unchanged; none of them imports ``mcp_rl``.
"""
