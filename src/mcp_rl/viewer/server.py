"""The page over HTTP on 127.0.0.1: the standard library's threading server and a few JSON endpoints.

    GET /                          the page
    GET /static/NAME               its script, styles and the charting library (shipped in the package)
    GET /api/meta                  run, recipe (redacted), sources with their counts and problems, notes
    GET /api/metrics?since=N       metrics.jsonl rows from N on
    GET /api/summaries?source=S&since=N&limit=M   episode summaries from N on, M at most
    GET /api/episode?source=S&id=N                one episode whole
    GET /api/search?source=S&q=TEXT               ids of the episodes holding TEXT, and whether every
                                                  episode was searched (a search stops at a time limit)

A watcher thread re-reads the files every second; requests only read what it indexed, so a large file
never holds a request up: the page shows the episodes read so far and asks again. Every request ends in
bounded time: a search stops at its time limit, and a client that stops sending is dropped.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from mcp_rl.errors import ConfigError
from mcp_rl.viewer.page import STATIC_FILES, page_html, static_file
from mcp_rl.viewer.run_data import RunData

HOST = "127.0.0.1"  # never another interface: the page shows prompts, answers and tool output
MAX_LIMIT = 50_000
REQUEST_TIMEOUT_S = 30.0  # a connection silent this long is closed (its thread would wait forever)
SECURITY_HEADERS = {
    # Everything the page needs comes from this server; nothing runs or loads from elsewhere.
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


class BadRequest(ValueError):
    pass


class Watcher(threading.Thread):
    """Refreshes ``data`` now and then every ``interval_s`` until stopped."""

    def __init__(self, data: RunData, interval_s: float = 1.0) -> None:
        super().__init__(name="mcp-rl-view-watcher", daemon=True)
        self.data, self.interval_s, self.stopped = data, interval_s, threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            self.data.refresh()
            self.stopped.wait(self.interval_s)


def _int(query: dict[str, list[str]], name: str, default: int | None = None) -> int:
    values = query.get(name)
    if not values:
        if default is None:
            raise BadRequest(f"missing parameter {name}")
        return default
    try:
        return max(0, int(values[0]))
    except ValueError:
        raise BadRequest(f"{name} must be a whole number, got {values[0]!r}") from None


def handler_for(data: RunData) -> type[BaseHTTPRequestHandler]:
    """A request handler class bound to one run's data."""

    def source(query: dict[str, list[str]]) -> Any:
        name = (query.get("source") or ["train"])[0]
        if name not in data.sources:
            raise BadRequest(f"no episode source {name!r}; sources: {', '.join(data.sources)}")
        return data.sources[name]

    def search(query: dict[str, list[str]]) -> str:
        text = (query.get("q") or [""])[0]
        if not text:
            raise BadRequest("q is empty: give the text to search for (the page lists every episode without)")
        found = source(query).search(text)
        return json.dumps({"ids": found.ids, "complete": found.complete})

    def episode(query: dict[str, list[str]]) -> str:
        try:
            return json.dumps(source(query).record(_int(query, "id")), default=str)
        except IndexError:
            raise BadRequest(f"no episode {_int(query, 'id')} (yet)") from None

    routes: dict[str, Callable[[dict[str, list[str]]], str]] = {
        "/api/meta": lambda q: json.dumps(data.meta(), default=str),
        "/api/metrics": lambda q: json.dumps(data.metrics_since(_int(q, "since", 0))),
        "/api/summaries": lambda q: source(q).summaries_json(
            _int(q, "since", 0), min(MAX_LIMIT, _int(q, "limit", 5000))
        ),
        "/api/episode": episode,
        "/api/search": search,
    }

    class Handler(BaseHTTPRequestHandler):
        server_version = "mcp-rl-view"
        timeout = REQUEST_TIMEOUT_S

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the terminal shows the URL only
            pass

        def _send(self, status: int, body: bytes, content_type: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for name, value in SECURITY_HEADERS.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(body)

        def _error(self, status: int, message: str) -> None:
            self._send(status, json.dumps({"error": message}).encode(), "application/json")

        def do_GET(self) -> None:
            port = self.server.server_address[1]
            # A page from another site could point a name at 127.0.0.1 (DNS rebinding): answer only to ours.
            if self.headers.get("Host") not in (f"{HOST}:{port}", f"localhost:{port}"):
                self._error(HTTPStatus.FORBIDDEN, "use http://127.0.0.1:PORT/")
                return
            url = urlsplit(self.path)
            if url.path == "/favicon.ico":
                self._send(HTTPStatus.NO_CONTENT, b"", "image/x-icon")
            elif url.path == "/":
                self._send(HTTPStatus.OK, page_html().encode(), "text/html; charset=utf-8")
            elif url.path.startswith("/static/") and url.path[len("/static/") :] in STATIC_FILES:
                body, content_type = static_file(url.path[len("/static/") :])
                self._send(HTTPStatus.OK, body, content_type)
            elif url.path in routes:
                try:
                    body = routes[url.path](parse_qs(url.query)).encode()
                except BadRequest as error:
                    self._error(HTTPStatus.BAD_REQUEST, str(error))
                    return
                self._send(HTTPStatus.OK, body, "application/json")
            else:
                self._error(HTTPStatus.NOT_FOUND, f"nothing at {url.path}")

    return Handler


class ViewerServer:
    """The HTTP server and its watcher; ``start`` returns once it listens (``port`` 0: any free one)."""

    def __init__(self, data: RunData, port: int = 0, interval_s: float = 1.0) -> None:
        self.data = data
        try:
            self.http = ThreadingHTTPServer((HOST, port), handler_for(data))
        except OSError as error:
            raise ConfigError(f"cannot listen on {HOST}:{port} ({error.strerror}); try --port 0") from None
        self.http.daemon_threads = True
        self.watcher = Watcher(data, interval_s)

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.http.server_address[1]}/"

    def start(self) -> ViewerServer:
        self.watcher.start()
        threading.Thread(target=self.http.serve_forever, name="mcp-rl-view-http", daemon=True).start()
        return self

    def serve_forever(self) -> None:
        self.watcher.start()
        self.http.serve_forever()

    def close(self) -> None:
        self.watcher.stopped.set()
        self.http.shutdown()
        self.http.server_close()

    def __enter__(self) -> ViewerServer:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.close()
