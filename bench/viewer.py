"""``mcp-rl view`` on a large trace file: how soon the first page of episodes shows, and how fast the rest is.

    python bench/viewer.py [--quick] [--episodes N] [--no-browser]

Writes N synthetic episodes (100,000 with --quick, 300,000 without; ~1.5 KB each, the recorder's format) to
a temporary run folder, starts the viewer's server on 127.0.0.1 and measures

- first_page_s: server start → the first 50 episode summaries served (the page shows them while the rest
  of the file is still being read); the target is under 2 s;
- first_rows_browser_s: with headless Chromium (where installed, with playwright): page load → the first
  rows drawn in the table;
- index_all_s and index_episodes_per_s: the whole file read and summarized;
- episode_ms: one whole episode (the last one) fetched; search_s: a full-text search over every line;
- filter_ms: in the browser, all summaries loaded, a failure-kind filter applied and the first page drawn.

Progress goes to stderr; the last line on stdout is one JSON object. Targets are reported, not enforced.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

from _common import finish, log, version  # bench/ is sys.path[0]

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from synthetic_traces import write_traces

from mcp_rl.viewer import RunData, ViewerServer

TARGET_FIRST_PAGE_S = 2.0


def _get(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=60) as response:
        return json.loads(response.read())


def _browser(url: str, episodes: int) -> dict[str, float]:
    chromium = shutil.which("chromium")
    try:
        from playwright.sync_api import expect, sync_playwright
    except ImportError:
        chromium = None
    if chromium is None:
        log("no chromium or playwright: browser timings skipped")
        return {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        started = time.perf_counter()
        page.goto(url)
        page.wait_for_selector("#list tbody tr", timeout=60_000)
        first_rows = time.perf_counter() - started
        expect(page.locator("#list-info")).to_contain_text(f"of {episodes:,} episodes", timeout=300_000)
        started = time.perf_counter()
        page.select_option("select[name=failure]", "timeout")
        expect(page.locator("#list tbody tr .badge.fail").first).to_be_visible()
        filtered = time.perf_counter() - started
        browser.close()
    return {"first_rows_browser_s": round(first_rows, 3), "filter_ms": round(filtered * 1000, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100,000 episodes instead of 300,000")
    parser.add_argument("--episodes", type=int, default=None)
    parser.add_argument("--no-browser", action="store_true")
    args = parser.parse_args()
    episodes = args.episodes or (100_000 if args.quick else 300_000)
    folder = Path(tempfile.mkdtemp(prefix="mcp-rl-view-bench-"))
    try:
        log(f"writing {episodes:,} synthetic episodes")
        traces = write_traces(folder / "traces.jsonl", episodes, bad_line_after=episodes // 2)
        size_mb = traces.stat().st_size / 1e6
        started = time.perf_counter()
        server = ViewerServer(RunData(folder), 0, interval_s=0.2).start()
        try:
            while len(_get(f"{server.url}api/summaries?since=0&limit=50")["items"]) < 50:
                time.sleep(0.01)
            first_page = time.perf_counter() - started
            log(f"first page after {first_page:.2f} s")
            while len(server.data.sources["train"]) < episodes or server.data.sources["train"].indexing:
                time.sleep(0.05)
            index_all = time.perf_counter() - started
            log(f"all {episodes:,} episodes read after {index_all:.1f} s")
            tick = time.perf_counter()
            _get(f"{server.url}api/episode?id={episodes - 1}")
            episode_ms = (time.perf_counter() - tick) * 1000
            tick = time.perf_counter()
            hits = _get(f"{server.url}api/search?q=q{episodes - 1}")["ids"]
            search_s = time.perf_counter() - tick
            assert hits == [episodes - 1], hits
            errors = _get(f"{server.url}api/meta")["sources"][0]["error_count"]
            browser = {} if args.no_browser else _browser(server.url, episodes)
        finally:
            server.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    result = {
        "benchmark": "viewer",
        "episodes": episodes,
        "file_mb": round(size_mb, 1),
        "first_page_s": round(first_page, 3),
        "target_first_page_s": TARGET_FIRST_PAGE_S,
        "first_page_within_target": first_page < TARGET_FIRST_PAGE_S,
        "index_all_s": round(index_all, 2),
        "index_episodes_per_s": round(episodes / index_all),
        "episode_ms": round(episode_ms, 1),
        "search_s": round(search_s, 3),
        "bad_lines_reported": errors,
        **browser,
        "python": sys.version.split()[0],
        "playwright": version("playwright"),
    }
    finish(
        result, f"first page {first_page:.2f} s (target < {TARGET_FIRST_PAGE_S} s), all in {index_all:.1f} s"
    )


if __name__ == "__main__":
    main()
