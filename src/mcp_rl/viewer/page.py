"""The page itself: served with its files beside it, or written as one self-contained HTML file.

The same script runs in both: served, it asks the server's API; written with ``--out``, it reads a snapshot
of the run embedded in the file (every episode's summary, the last ``max_episodes`` of each source whole),
so the file opens anywhere, offline, without a server.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from mcp_rl.viewer.run_data import RunData

STATIC = Path(__file__).with_name("static")
# The page's own files and uPlot (MIT, https://github.com/leeoniya/uPlot, v1.6.32; see uPlot.LICENSE).
STATIC_FILES = {
    "viewer.js": "text/javascript; charset=utf-8",
    "viewer.css": "text/css; charset=utf-8",
    "uPlot.iife.min.js": "text/javascript; charset=utf-8",
    "uPlot.min.css": "text/css; charset=utf-8",
}
STYLES = ("uPlot.min.css", "viewer.css")
SCRIPTS = ("uPlot.iife.min.js", "viewer.js")


def static_file(name: str) -> tuple[bytes, str]:
    return (STATIC / name).read_bytes(), STATIC_FILES[name]


def _template() -> str:
    return (STATIC / "index.html").read_text()


def page_html() -> str:
    """The page as served: styles and scripts are fetched from /static/."""
    head = "".join(f'<link rel="stylesheet" href="/static/{name}">' for name in STYLES)
    scripts = "".join(f'<script src="/static/{name}"></script>' for name in SCRIPTS)
    return _template().replace("<!--STYLES-->", head).replace("<!--SCRIPTS-->", scripts)


def _inline(name: str) -> str:
    text = (STATIC / name).read_text()
    if "</script" in text.lower() or "</style" in text.lower():  # would end the element early
        raise ValueError(f"{name} cannot be inlined: it holds a closing tag")
    return text


def _embedded_json(value: Any) -> str:
    # Inside <script type="application/json"> only "</script" could end the element: escaping every "<"
    # (and ">", "&") as a JSON \u escape keeps any tool output inert.
    text = json.dumps(value, default=str)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def snapshot(data: RunData, max_episodes: int) -> dict[str, Any]:
    """Everything the page shows, read now: meta, metrics, all summaries, the last episodes whole."""
    data.refresh()
    episodes: dict[str, dict[int, Any]] = {}
    summaries: dict[str, list[dict[str, Any]]] = {}
    for name, source in data.sources.items():
        summaries[name] = source.summaries()
        kept = range(max(0, len(source) - max_episodes), len(source))
        episodes[name] = {index: source.record(index) for index in kept}
    meta = data.meta()
    meta["written"] = time.strftime("%Y-%m-%d %H:%M:%S")
    meta["max_episodes"] = max_episodes
    return {"meta": meta, "metrics": data.metrics.rows, "summaries": summaries, "episodes": episodes}


def write_page(data: RunData, path: str | Path, max_episodes: int = 2000) -> Path:
    """One HTML file holding the page, its library and a snapshot of the run."""
    styles = "".join(f"<style>{_inline(name)}</style>" for name in STYLES)
    scripts = "".join(f"<script>{_inline(name)}</script>" for name in SCRIPTS)
    snapshot_json = _embedded_json(snapshot(data, max_episodes))
    embedded = f'<script type="application/json" id="viewer-data">{snapshot_json}</script>'
    html = _template().replace("<!--STYLES-->", styles).replace("<!--SCRIPTS-->", embedded + scripts)
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html)
    return out
