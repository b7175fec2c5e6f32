"""The viewer and reports on any recipe, and every viewer request in bounded time: the task text from the
column the prompt template names, calls named by the tools called, hops only where rows have them, a link per
episode, the real share of episodes cut by a token limit; empty and endless searches answered at once."""

from __future__ import annotations

import json
import socket
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from synthetic_traces import write_traces
from test_viewer import browser_page, get, read_traces
from tiny import TEST_QUESTIONS, tiny_search_settings, write_corpus

from mcp_rl.config.recipe import load_recipe
from mcp_rl.env.trajectory import CallRecord, Trajectory, Turn
from mcp_rl.evaluation import report_for
from mcp_rl.viewer import RunData, ViewerServer, server, write_page


# -- bounded requests ---------------------------------------------------------------------------------------
def test_an_empty_search_is_refused_at_once_and_a_newline_is_searched_once_per_line(tmp_path):
    """Both used to loop forever on the same line (the page never sends them; a hand-typed URL did)."""
    write_traces(tmp_path / "traces.jsonl", 2000)
    with ViewerServer(RunData(tmp_path), 0) as viewer:
        viewer.data.refresh()
        status, body = get(viewer, "/api/search?source=train&q=")  # raises on its 30 s timeout if it hangs
        assert status == 400 and "q is empty" in json.loads(body)["error"]
        # A newline is found as JSON writes it (every observation holds one); a raw one, between lines, not.
        for query in ("%0A", "birthplace"):
            status, body = get(viewer, f"/api/search?source=train&q={query}")
            assert status == 200 and json.loads(body) == {"ids": list(range(2000)), "complete": True}
    assert viewer.data.sources["train"].search("").ids == []


def test_a_search_past_its_time_limit_stops_and_says_so(tmp_path):
    write_traces(tmp_path / "traces.jsonl", 200)
    data = RunData(tmp_path)
    data.refresh()
    train = data.sources["train"]
    stopped = train.search("person", time_limit_s=0.0)
    assert not stopped.complete and stopped.ids == []
    assert train.search("person").complete and len(train.search("person").ids) == 200


def test_a_client_that_stops_sending_is_dropped(tmp_path, monkeypatch):
    monkeypatch.setattr(server, "REQUEST_TIMEOUT_S", 1.0)
    with ViewerServer(RunData(tmp_path), 0) as viewer:
        port = viewer.http.server_address[1]
        with socket.create_connection(("127.0.0.1", port), timeout=60) as client:
            client.sendall(b"GET /api/meta HTTP/1.1\r\n")  # and never the rest of the request
            started = time.monotonic()
            assert client.recv(1024) == b""  # closed by the server, long before this socket's own timeout
            assert time.monotonic() - started < 50


# -- the eval report --------------------------------------------------------------------------------------
def _episode(index: int, calls: list[str], finish: str, answer: str | None) -> Trajectory:
    trajectory = Trajectory(index, [{"role": "user", "content": f"Problem {index}"}], [1, 2])
    records = [CallRecord(0, name, {"expression": "1 + 1"}, "2") for name in calls]
    trajectory.turns = [Turn(text="<calc> 1 + 1 </calc>", calls=records)]
    trajectory.finish_reason, trajectory.answer = finish, answer
    return trajectory


def test_the_eval_report_names_the_tools_called_and_counts_truncation():
    episodes = [
        _episode(0, ["calculate", "calculate"], "answer", "2"),
        _episode(1, ["calculate", "lookup"], "max_tokens", None),
        _episode(2, [], "no_action", None),
        _episode(3, [], "answer", "4"),
    ]
    report = report_for(episodes, [{"task": f"Problem {i}"} for i in range(4)])
    assert "searched" not in report and not any(key.startswith("by_") for key in report)
    assert report["called_a_tool"] == 0.5
    assert report["called_by_tool"] == {"calculate": 0.5, "lookup": 0.25}
    assert report["truncated"] == 0.25 and report["finish_reasons"]["max_tokens"] == 1


# -- older traces: the task from the recipe's template column --------------------------------------------
def test_traces_without_a_question_show_the_template_column(tmp_path):
    (tmp_path / "recipe.yaml").write_text("name: scaffolded\nprompt:\n  user_template: 'Do this: {task}'\n")
    lines = []
    for index, line in enumerate((write_traces(tmp_path / "traces.jsonl", 3)).read_text().splitlines()):
        record = json.loads(line)
        record["question"] = None  # as the recorder wrote it before it read the template's column
        record["row"] = {"id": f"t{index}", "task": f"Add {index} and 3", "answer": str(index + 3)}
        lines.append(json.dumps(record))
    (tmp_path / "traces.jsonl").write_text("\n".join(lines) + "\n")
    data = RunData(tmp_path)
    data.refresh()
    summaries = data.sources["train"].summaries()
    assert [s["question"] for s in summaries] == ["Add 0 and 3", "Add 1 and 3", "Add 2 and 3"]
    assert all(s["hops"] is None for s in summaries)


# -- a real run of a recipe whose template reads a `task` column -----------------------------------------
@pytest.fixture(scope="module")
def task_run(tiny_model_dir, tmp_path_factory) -> Path:
    """Two GRPO steps of the tiny model against the real search server, on rows with a ``task`` column (no
    ``question``, no ``hops``), through ``mcp-rl train``'s code."""
    from mcp_rl.training.run import train

    folder = tmp_path_factory.mktemp("tasks")
    corpus = write_corpus(folder / "corpus.jsonl")
    rows = folder / "tasks.jsonl"
    rows.write_text(
        "".join(
            json.dumps({"id": str(i), "task": q, "golden_answers": ["Draskel"]}) + "\n"
            for i, q in enumerate(TEST_QUESTIONS * 2)
        )
    )
    settings = tiny_search_settings(
        tiny_model_dir,
        corpus,
        rows,
        **{
            "prompt.user_template": "'Task: {task}'",
            "trainer.save_strategy": "'no'",
            "trainer.per_device_train_batch_size": 4,
            "trainer.num_generations": 4,
            "rollout.temperature": 1.3,
        },
    )
    out = folder / "run"
    train(load_recipe("search", settings), out)
    return out


def test_traces_hold_the_task_column_and_the_rendered_prompt(task_run):
    traces = read_traces(task_run)
    assert len(traces) == 8
    for trace in traces:
        assert trace["question"] == trace["row"]["task"] and trace["question"] in TEST_QUESTIONS
        assert trace["user_prompt"] == f"Task: {trace['row']['task']}"
    # The logged share of episodes cut by a token limit is the traces' own, step by step.
    cut_by_step: dict[int, list[bool]] = defaultdict(list)
    for trace in traces:
        cut = trace["finish_reason"] == "max_tokens" or (
            trace["answer"] is None and trace["info"].get("last_finish") == "length"
        )
        cut_by_step[trace["step"]].append(cut)
    metrics = [json.loads(line) for line in (task_run / "metrics.jsonl").read_text().splitlines()]
    logged = {m["step"]: m["rollout/truncated"] for m in metrics if "rollout/truncated" in m}
    assert logged == {step: sum(cut) / len(cut) for step, cut in cut_by_step.items()}


def called_text(trace: dict) -> str:
    """The list's "tools called" cell: each tool by name, with its count when called twice or more."""
    calls = Counter(c["name"] for turn in trace["turns"] for c in turn["calls"])
    named = [name if n == 1 else f"{name} ×{n}" for name, n in sorted(calls.items())]
    return "called " + ", ".join(named) if named else ""


def test_the_page_shows_the_task_and_links_each_episode(task_run, tmp_path):
    traces = read_traces(task_run)
    last = len(traces) - 1
    data = RunData(task_run)
    with ViewerServer(data, 0) as viewer, browser_page(1000) as (sync_api, page, errors):
        page.goto(viewer.url)
        page.wait_for_selector("#list tbody tr")
        rows = page.locator("#list tbody tr")
        sync_api.expect(rows).to_have_count(len(traces))
        # The list: each episode's task text, its calls by the tool's name; no hops filter (no hops column).
        by_id = {int(row.get_attribute("data-id")): row.locator("td").all_inner_texts() for row in rows.all()}
        assert any(called_text(trace) for trace in traces), "the run needs episodes that called a tool"
        for index, cells in by_id.items():
            assert cells[2] == traces[index]["row"]["task"]
            assert cells[6] == called_text(traces[index])
        assert page.locator("label:has(select[name=hops])").is_hidden()
        assert page.locator("#list thead th").nth(2).inner_text() == "task"
        # A row opens its episode and names it in the URL; that URL opens the same episode on a new load.
        rows.first.click()
        opened = int(rows.first.get_attribute("data-id"))
        page.wait_for_selector("#conversation .block.task")
        assert page.evaluate("location.hash") == f"#episode=train/{opened}"
        assert page.inner_text("#conversation .block.task pre") == traces[opened]["user_prompt"]
        page.goto(f"{viewer.url}#episode=train/{last}")
        page.reload()
        page.wait_for_selector("#conversation .block.task")
        assert page.inner_text("#conversation .block.task pre") == f"Task: {traces[last]['row']['task']}"
        assert page.inner_text("#episode-title") == f"#{last}"
        # The same link into the self-contained file, opened without a server.
        single = write_page(data, tmp_path / "page.html")
        page.goto(f"{single.as_uri()}#episode=train/{last}")
        page.wait_for_selector("#conversation .block.task")
        assert page.inner_text("#conversation .block.task pre") == traces[last]["user_prompt"]
    assert not errors, errors
