"""ToolPool: many MCP servers, many concurrent tool calls, failures that come back as results.

Every connection is owned by one supervisor task (``connection.py``); callers from anywhere in a rollout
batch share its session. ``ToolPool`` (``pool.py``) is the async core that routes calls by its tool
catalog (``catalog.py``), checks their arguments (``arguments.py``), sends them with caps, timeouts and
retries (``calling.py``) and counts them (``call_stats.py``); ``BlockingToolPool`` (``blocking.py``) runs it
on a background event loop for synchronous callers such as the trainer. Results and failure kinds live in
``results.py``. This package re-exports the public names, so ``from mcp_rl.tools import ...`` is the way
to use it. Nothing here imports torch or another layer of mcp_rl: an agent may use it alone.
"""

from mcp_rl.tools.blocking import REWARD_RESULT_CHARS, BlockingToolPool, EpisodeTools
from mcp_rl.tools.episodes import Episode
from mcp_rl.tools.pool import ToolPool
from mcp_rl.tools.results import FailureKind, ToolPoolError, ToolResult, ToolSpec, failed

__all__ = [
    "REWARD_RESULT_CHARS",
    "BlockingToolPool",
    "Episode",
    "EpisodeTools",
    "FailureKind",
    "ToolPool",
    "ToolPoolError",
    "ToolResult",
    "ToolSpec",
    "failed",
]
