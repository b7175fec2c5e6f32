"""mcp-rl: RL post-training for multi-turn tool use over MCP servers."""

__version__ = "0.1.0"
