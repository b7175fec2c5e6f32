"""The README's "A server that writes" walk-through, run as written: ``init`` on the real filesystem
server (through ``npx``), its advice applied, tasks and a held-out split, then ``train`` and ``eval`` with a
tiny model.

The ``init`` itself is conftest's ``filesystem_init``, run once for the session and shared with
test_allow_list.py; this test works on its own copy of what it wrote. Skips where Node.js or the cached
server package is missing (the ``sandbox`` fixture says why)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from conftest import FILESYSTEM, InitRun, run_cli

TRAIN_TASKS = [
    {"task": "Write the word hello to hello.txt.", "answer": "hello.txt"},
    {"task": "Create a file named todo.txt containing milk.", "answer": "todo.txt"},
]
HELD_OUT_TASKS = [
    {"task": "Write bye to bye.txt.", "answer": "bye.txt"},
    {"task": "Which file is in the folder?", "answer": "notes.txt"},  # already there: the check must see it
]
# The tiny model reads 2,048 tokens: schemas go to its chat template (which drops them), turns are short.
TINY_ROLLOUT = {"prompt.tools_in": "template", "rollout.max_new_tokens": 16, "rollout.max_turns": 2}
# Seconds, not minutes, for the run: 1 step of 2 completions, the top layer trained.
TINY_TRAIN = {
    **TINY_ROLLOUT,
    "trainer.max_steps": 1,
    "trainer.num_generations": 2,
    "trainer.per_device_train_batch_size": 2,
    "trainer.gradient_accumulation_steps": 1,
    "trainer.bf16": False,
    "model.train_top_layers": 1,
}


def as_overrides(settings: dict[str, object]) -> list[str]:
    return [arg for key, value in settings.items() for arg in ("--set", f"{key}={value}")]


def eval_report(recipe_path: Path, *args: str) -> tuple[dict[str, Any], str]:
    """``mcp-rl eval --limit 10`` of the recipe with the tiny model's turns: its report and its stderr."""
    output = recipe_path.parent / "eval.json"  # not the default runs/ of the directory the CLI runs in
    done = run_cli(
        "eval", "--recipe", str(recipe_path), "--limit", "10", "--output", str(output),
        *as_overrides(TINY_ROLLOUT), *args, timeout_s=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(output.read_text()), done.stderr


def write_jsonl(path: Path, rows: list[dict[str, str]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def apply_the_readme_edits(recipe_path: Path, folder: Path) -> None:
    """The README's YAML: one instance per episode on a copy of the folder, held-out tasks, and the few-shot
    episode's folder as ``.`` (the episode's instance refuses the original folder's absolute path)."""
    recipe = yaml.safe_load(recipe_path.read_text())
    entry = recipe["tools"]["mcpServers"]["fs"]
    entry.update(
        scope="episode", args=["-y", FILESYSTEM, "${episode.dir}/sandbox"], setup=[{"copy": str(folder)}]
    )
    recipe["data"]["eval"] = "fs.test.jsonl"
    for message in recipe["prompt"]["few_shot"]:
        message["content"] = message["content"].replace(str(folder), ".")
    recipe["rollout"]["max_completion_tokens"] = 256  # the tiny model reads 2,048 tokens at most
    recipe_path.write_text(yaml.safe_dump(recipe, sort_keys=False))


def test_filesystem_server_from_init_to_train_and_eval(
    tmp_path: Path, sandbox: Path, filesystem_init: InitRun
) -> None:
    recipe_path = filesystem_init.copy_to(tmp_path)
    few_shot = yaml.safe_load(recipe_path.read_text())["prompt"]["few_shot"]
    assert str(sandbox) in few_shot[1]["content"]  # the folder init called with, which the edit replaces
    apply_the_readme_edits(recipe_path, sandbox)
    write_jsonl(tmp_path / "fs.tasks.jsonl", TRAIN_TASKS)
    write_jsonl(tmp_path / "fs.test.jsonl", HELD_OUT_TASKS)

    # Without data.eval, eval would score the one training file: it says so.
    untrained, warnings = eval_report(recipe_path, "--set", "data.eval=null")
    assert untrained["n"] == len(TRAIN_TASKS) and "warning: data.eval is not set" in warnings, warnings

    run_dir = tmp_path / "runs" / "fs"
    train = run_cli(
        "train", "--recipe", str(recipe_path), "-o", str(run_dir), *as_overrides(TINY_TRAIN), timeout_s=600
    )
    assert train.returncode == 0, train.stderr[-3000:]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["steps"] == 1 and "rewards/state_check/mean" in summary["last_5_steps"], summary
    assert (run_dir / "final" / "config.json").exists()

    report, warnings = eval_report(recipe_path, "--model", str(run_dir / "final"))
    assert "warning: data.eval is not set" not in warnings
    assert report["n"] == len(HELD_OUT_TASKS) and report["questions"] == str(tmp_path / "fs.test.jsonl")
    assert report["model"] == str(run_dir / "final") and not report["reward_errors"], report
    # notes.txt is in every episode's copy, so at least that row scores 1.0 whatever the model did.
    assert report["rewards"]["state_check"] >= 1 / len(HELD_OUT_TASKS), report
    # Every episode wrote to its own copy: the original folder is as the fixture left it.
    assert sorted(p.name for p in sandbox.iterdir()) == ["notes.txt"]
