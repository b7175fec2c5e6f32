"""``mcp-rl view``: a run's curves, its episodes filtered and read as conversations, and two eval reports side
by side, in a local page (``serve``) or one self-contained HTML file (``write_page``).

Files are read as they grow, so a live run can be watched; episodes are indexed by line and summarized
once, and the page loads their summaries in chunks and the turns of one episode only when it is opened.
Server ``env`` and ``headers`` values (and URL passwords, and secret-looking environment variables) never
reach the page.
"""

from __future__ import annotations

from collections.abc import Callable

from mcp_rl.viewer.page import write_page
from mcp_rl.viewer.run_data import RunData
from mcp_rl.viewer.server import ViewerServer

__all__ = ["RunData", "ViewerServer", "serve", "write_page"]


def serve(data: RunData, port: int = 8765, on_ready: Callable[[str], None] = print) -> None:
    """Serve the page on 127.0.0.1:``port`` until interrupted (Ctrl-C); ``on_ready`` gets its URL."""
    server = ViewerServer(data, port)
    on_ready(server.url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.watcher.stopped.set()
        server.http.server_close()
