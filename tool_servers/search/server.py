"""The ``search`` MCP server: one tool that returns passages formatted as Search-R1 shows them."""

# No ``from __future__ import annotations``: the tool's signature refers to a local (the default topk), and
# the SDK evaluates annotations against module globals only.

import argparse
import contextlib
import sys
from collections.abc import Mapping, Sequence
from typing import Annotated, Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import Field

from tool_servers.serving import add_transport_arguments, serve

from .config import MAX_TOPK, SearchConfig
from .corpus import format_hits
from .retrievers import Retriever, RetrieverError, make_retriever

NO_RESULTS = "No results found."


def build_server(
    config: SearchConfig | argparse.Namespace | Mapping[str, Any], retriever: Retriever | None = None
) -> MCPServer:
    """An ``MCPServer`` exposing ``search``; the index is loaded or built here, before any client connects,
    so a bad corpus fails at start-up and the first call is as fast as the rest."""
    config = SearchConfig.coerce(config)
    if retriever is None:
        retriever = make_retriever(config)
    server = MCPServer(
        "search",
        instructions="Search a text corpus; call `search` with a question or keywords to read passages.",
    )

    @server.tool(
        annotations=ToolAnnotations(
            readOnlyHint=True, idempotentHint=True, openWorldHint=config.retriever == "remote"
        )
    )
    async def search(
        query: Annotated[str, Field(description="What to look for: a question or a few keywords.")],
        topk: Annotated[
            int | None,
            Field(ge=1, description=f"How many passages to return (default {config.topk}, max {MAX_TOPK})."),
        ] = None,
    ) -> str:
        """Search the knowledge corpus and return the most relevant passages.

        Each passage comes on its own line as `Doc i(Title: title) text`.
        """
        if not query.strip():
            raise ToolError("query is empty: pass a question or keywords to search for")
        k = min(topk if topk is not None else config.topk, MAX_TOPK)
        try:
            hits = await retriever.search(query.strip(), k)
        except RetrieverError as exc:
            raise ToolError(str(exc)) from exc
        return format_hits(hits, config.order) if hits else NO_RESULTS

    return server


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m tool_servers.search",
        description="MCP server with a `search` tool over a Search-R1 jsonl corpus or retrieval server.",
    )
    parser.add_argument("--corpus", help='Search-R1 jsonl: {"id": ..., "contents": "\\"Title\\"\\ntext"}.')
    parser.add_argument("--retriever", choices=["bm25", "dense", "remote"], default="bm25")
    parser.add_argument("--retriever-url", help="Search-R1 retrieval server, e.g. http://127.0.0.1:8000.")
    parser.add_argument("--topk", type=int, default=3, help=f"Passages per call by default (1..{MAX_TOPK}).")
    parser.add_argument(
        "--order",
        choices=["best_first", "best_last"],
        default="best_first",
        help="best_last shows the best passage last, nearest to where the model resumes writing.",
    )
    parser.add_argument(
        "--cache-dir", help="Index cache (default $MCP_RL_CACHE/search, else ~/.cache/mcp-rl/search)."
    )
    parser.add_argument("--model", help="Dense retriever: sentence-transformers model (all-MiniLM-L6-v2).")
    parser.add_argument("--device", default="cpu", help="Dense retriever: torch device for the encoder.")
    parser.add_argument("--timeout", type=float, default=30.0, help="Remote retriever: seconds per request.")
    add_transport_arguments(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> None:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        config = SearchConfig.coerce(args)
        # Libraries may print while loading or building an index; on stdio, stdout belongs to the protocol.
        with contextlib.redirect_stdout(sys.stderr):
            server = build_server(config)
    except (ValueError, OSError) as exc:
        parser.exit(2, f"{parser.prog}: error: {exc}\n")
    serve(server, args)
