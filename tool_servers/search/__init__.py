"""MCP server with a ``search`` tool over a Search-R1 corpus: BM25, dense, or a remote Search-R1 retriever.

Run ``python -m tool_servers.search --corpus corpus.jsonl``; see ``--help`` for the rest.
"""

from .config import SearchConfig
from .server import build_parser, build_server, main

__all__ = ["SearchConfig", "build_parser", "build_server", "main"]
