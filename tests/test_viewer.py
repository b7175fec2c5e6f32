"""`mcp-rl view`: files read as they grow, bad lines and empty folders, secrets kept out, 100k episodes, and
the page itself in a real browser (headless Chromium) on a real run of the tiny model."""

from __future__ import annotations

import http.client
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import run_cli
from synthetic_traces import write_eval_report, write_traces
from tiny import tiny_search_settings, write_corpus

from mcp_rl.config.recipe import load_recipe
from mcp_rl.viewer import RunData, ViewerServer, write_page
from mcp_rl.viewer.jsonl import GrowingJsonl


def get(server: ViewerServer, path: str, host: str | None = None) -> tuple[int, str]:
    port = server.http.server_address[1]
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    connection.request("GET", path, headers={"Host": host or f"127.0.0.1:{port}"})
    response = connection.getresponse()
    return response.status, response.read().decode()


# -- reading files as they grow ---------------------------------------------------------------------------
def test_a_growing_file_is_read_by_complete_lines_and_again_when_replaced(tmp_path):
    path = tmp_path / "traces.jsonl"
    path.write_text('{"a": 1}\n[1, 2]\n{"a": 2}\n{"a": ')  # an array line, and a line still being written
    reader = GrowingJsonl(path)
    assert [line.value for lines in reader.read_new() for line in lines] == [{"a": 1}, {"a": 2}]
    assert reader.errors == ["traces.jsonl line 2: a JSON list, not an object; skipped"]
    with path.open("a") as out:
        out.write("3}\nnot json\n")
    assert [line.value for lines in reader.read_new() for line in lines] == [{"a": 3}]
    assert "traces.jsonl line 5: not valid JSON (Expecting value at column 1); skipped" in reader.errors
    assert not reader.stale()
    path.write_text('{"a": 9}\n')  # a new run in the same folder: shorter
    assert reader.stale()
    reader.rewind()
    assert [line.value for lines in reader.read_new() for line in lines] == [{"a": 9}]


def test_a_live_run_is_followed_and_a_bad_line_is_named(tmp_path):
    run = tmp_path / "run"
    write_traces(run / "traces.jsonl", 40, bad_line_after=4)
    data = RunData(run)
    data.refresh()
    train = data.sources["train"]
    assert len(train) == 40  # the bad line is skipped, every episode around it is kept
    assert data.meta()["sources"][0]["errors"] == [
        "traces.jsonl line 6: not valid JSON (Expecting value at column 40); skipped"
    ]
    with (run / "traces.jsonl").open("a") as out:
        out.write((run / "traces.jsonl").read_text().splitlines()[0] + "\n")
    data.refresh()
    assert len(train) == 41 and train.record(40)["question"] == train.record(0)["question"]
    assert train.generation == 0
    write_traces(run / "traces.jsonl", 3)  # restarted: the list starts over
    data.refresh()
    assert len(train) == 3 and train.generation == 1


def test_an_empty_folder_says_so_and_still_makes_a_page(tmp_path):
    data = RunData(tmp_path)
    data.refresh()
    meta = data.meta()
    assert any("no metrics.jsonl and no traces.jsonl yet" in note for note in meta["notes"])
    page = write_page(data, tmp_path / "page.html").read_text()
    assert "no metrics.jsonl and no traces.jsonl yet" in page


def test_cli_errors_are_one_line(tmp_path):
    missing = run_cli("view", str(tmp_path / "nowhere"))
    assert missing.returncode == 2 and missing.stderr.strip().count("\n") == 0
    assert "does not exist" in missing.stderr
    write_traces(tmp_path / "run" / "traces.jsonl", 5)
    no_report = run_cli("view", str(tmp_path / "run"), str(tmp_path / "eval.json"), "--out", "x.html")
    assert no_report.returncode == 2 and "no such eval report" in no_report.stderr
    written = run_cli("view", str(tmp_path / "run"), "--out", str(tmp_path / "page.html"))
    assert written.returncode == 0, written.stderr
    assert "wrote" in written.stdout and (tmp_path / "page.html").stat().st_size > 50_000


# -- secrets ----------------------------------------------------------------------------------------------
def test_secrets_from_headers_env_and_urls_never_reach_the_page(tmp_path, monkeypatch):
    monkeypatch.setenv("VIEW_TEST_KEY", "from-the-environment-123")
    monkeypatch.setenv("SOME_API_TOKEN", "hf_unrelated_token_456")
    run = tmp_path / "run"
    run.mkdir()
    (run / "recipe.yaml").write_text(
        "name: leaky\n"
        "tools:\n  mcpServers:\n"
        "    remote: {url: 'https://user:pa55word@tools.example/mcp',\n"
        "             headers: {Authorization: 'Bearer ${VIEW_TEST_KEY}'}}\n"
        "    local: {command: python, args: [-m, srv], env: {DB_PASSWORD: literal-secret-789}}\n"
    )
    traces = write_traces(run / "traces.jsonl", 3)
    leaked = json.loads(traces.read_text().splitlines()[0])
    leaked["turns"][0]["observation"] = (
        "echo: Bearer from-the-environment-123 literal-secret-789 hf_unrelated_token_456 "
        "https://user:pa55word@tools.example/mcp"
    )
    with traces.open("a") as out:
        out.write(json.dumps(leaked) + "\n")
    secrets = ["from-the-environment-123", "literal-secret-789", "hf_unrelated_token_456", "pa55word"]
    data = RunData(run)
    page = write_page(data, tmp_path / "page.html").read_text()
    with ViewerServer(data, 0) as server:
        served = [get(server, path)[1] for path in ("/", "/api/meta", "/api/summaries", "/api/episode?id=3")]
    for text in [page, *served]:
        assert not [secret for secret in secrets if secret in text]
    episode = json.loads(served[3])
    assert "Bearer *** *** *** https://user:***@tools.example/mcp" in episode["turns"][0]["observation"]
    assert "DB_PASSWORD: '***'" in json.loads(served[1])["recipe_yaml"]


# -- the HTTP server --------------------------------------------------------------------------------------
def test_the_server_listens_on_loopback_only_and_answers_its_own_host(tmp_path):
    write_traces(tmp_path / "traces.jsonl", 10)
    with ViewerServer(RunData(tmp_path), 0) as server:
        assert server.http.server_address[0] == "127.0.0.1"
        status, body = get(server, "/api/summaries?since=8&limit=5")
        assert status == 200 and [item["id"] for item in json.loads(body)["items"]] == [8, 9]
        assert get(server, "/api/meta", host="attacker.example:80")[0] == 403  # DNS rebinding
        assert get(server, "/api/episode?id=99")[0] == 400
        assert get(server, "/api/summaries?source=nope")[0] == 400
        assert get(server, "/static/../../etc/passwd")[0] == 404


def test_100k_episodes_are_indexed_paged_and_searched(tmp_path):
    """A hundred thousand episodes page and search (their timing is bench/viewer.py's, not a test's)."""
    write_traces(tmp_path / "traces.jsonl", 100_000, bad_line_after=50_000)
    data = RunData(tmp_path)
    data.refresh()
    train = data.sources["train"]
    assert len(train) == 100_000 and len(train.errors) == 1
    page = json.loads(train.summaries_json(99_950, 50))
    assert [item["id"] for item in page["items"]] == list(range(99_950, 100_000))
    assert train.record(99_999)["row"]["id"] == "q99999"
    assert train.search("q99999").ids == [99_999]
    found = train.search("PERSON 4321 ")  # any case
    assert found.ids == list(range(4321, 100_000, 5000)) and found.complete


# -- in a real browser ------------------------------------------------------------------------------------
def chromium_binary() -> str | None:
    return next((p for p in (shutil.which("chromium"), "/usr/bin/chromium") if p and os.path.exists(p)), None)


@contextmanager
def browser_page(height: int = 1200) -> Iterator[tuple[Any, Any, list[str]]]:
    """Playwright's sync API, a page in headless Chromium, and the errors its scripts raise or log (the test
    is skipped without Chromium or Playwright)."""
    chromium = chromium_binary()
    if chromium is None:
        pytest.skip("no chromium binary (apt-get install -y chromium)")
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (the dev extra)"
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium)
        page = browser.new_page(viewport={"width": 1400, "height": height})
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda message: errors.append(message.text) if message.type == "error" else None)
        yield sync_api, page, errors
        browser.close()


def read_traces(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "traces.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def real_run(tiny_model_dir, tiny_qa, tmp_path_factory) -> Path:
    """Three GRPO steps of the tiny model against the real search server, through ``mcp-rl train``'s code.
    The server counts results naming Draskel (all of this model's) as tool errors; sampled at T 1.3 the
    model calls it in some episodes and not in others, so some episodes hold a failed call and some none."""
    from mcp_rl.training.run import train

    corpus = write_corpus(tmp_path_factory.mktemp("corpus") / "corpus.jsonl")
    out = tmp_path_factory.mktemp("run") / "run"
    settings = tiny_search_settings(
        tiny_model_dir,
        corpus,
        tiny_qa,
        **{
            "trainer.save_strategy": "'no'",
            "trainer.max_steps": 3,
            "trainer.per_device_train_batch_size": 4,
            "trainer.num_generations": 4,
            "rollout.temperature": 1.3,
            "tools.mcpServers.search.errorPattern": "Draskel",
        },
    )
    train(load_recipe("search", settings), out)
    return out


def test_the_page_in_a_real_browser(real_run, tmp_path):
    traces = read_traces(real_run)
    failing = {
        i for i, t in enumerate(traces) if any(c["failure"] for turn in t["turns"] for c in turn["calls"])
    }
    assert failing and len(failing) < len(traces), "the run needs episodes with and without failed calls"
    reports = [
        write_eval_report(tmp_path / f"{name}.json", 30, seed, name) for seed, name in ((1, "a"), (2, "b"))
    ]
    data = RunData(real_run, reports)
    with ViewerServer(data, 0) as server, browser_page() as (sync_api, page, errors):
        page.goto(server.url)
        page.wait_for_selector("#list tbody tr")
        # The curves: a uPlot canvas per panel with data (rewards, calls, failures, latency, tokens, a pick).
        assert page.locator("#charts canvas").count() >= 5
        assert "Reward per function" in page.inner_text("#charts")
        # Filtering by failure kind lists exactly the episodes with such a call.
        page.select_option("select[name=failure]", "tool error")
        sync_api.expect(page.locator("#list tbody tr")).to_have_count(len(failing))  # no eval: CSP forbids it
        shown = page.locator("#list tbody tr").evaluate_all("rows => rows.map(r => Number(r.dataset.id))")
        assert set(shown) == failing
        # One episode: its calls (arguments, failure) and its spans in and out of the loss, on the text.
        page.locator("#list tbody tr").first.click()
        page.wait_for_selector("#conversation .call")
        trace = traces[shown[0]]
        call = next(c for turn in trace["turns"] for c in turn["calls"] if c["failure"])
        assert f"{call['name']}({json.dumps(call['arguments'], separators=(',', ':'))})" in page.inner_text(
            "#conversation .call >> nth=0"
        )
        assert "failed: tool error" in page.inner_text("#conversation")
        masked = page.locator("#conversation .block.masked pre").all_inner_texts()
        assert trace["turns"][0]["observation"].strip() in [text.strip() for text in masked]
        model = page.locator("#conversation .block.model pre").all_inner_texts()
        assert model == [turn["text"] for turn in trace["turns"]]
        # Before / after: the two reports' numbers (pass@k of a sampled report included), then their
        # questions side by side.
        first, second = (json.loads(report.read_text()) for report in reports)
        numbers = page.inner_text("#compare-reports")
        pass_row = next(line for line in numbers.splitlines() if line.startswith("pass@2 exact_match"))
        values = [f"{report['pass_at_k']['exact_match']['2']:.3f}" for report in (first, second)]
        assert pass_row.split(maxsplit=2)[2] == " · ".join(values)
        assert page.locator("#compare-list tbody tr").count() == 30
        page.locator("#compare-list tbody tr").first.click()
        page.wait_for_selector("#pair .block.model")
        screenshot = tmp_path / "viewer.png"
        page.screenshot(path=str(screenshot), full_page=True)
        # The same run as one file, opened without a server.
        single = write_page(data, tmp_path / "page.html")
        page.goto(single.as_uri())
        page.wait_for_selector("#list tbody tr")
        assert page.locator("#list tbody tr").count() == len(traces)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 20_000
    assert not errors, errors
