"""One rule for a recipe's relative paths: against the folder of the file that wrote them, from any working
directory; ``--set`` values against the working directory; a data name found nowhere fails at once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ECHO_SERVER

from mcp_rl.config.recipe import load_recipe
from mcp_rl.env.data import check_data
from mcp_rl.env.recipe_checks import recipe_servers
from mcp_rl.errors import DataError

# A name no hub has: online it is "no such dataset", offline "not reachable"; either way one line, at once.
NOWHERE = "mcp-rl-no-such-dataset-3f9c2a"


def write_rows(path: Path, rows: list[dict[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def write_recipe(path: Path, recipe: dict[str, object]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(recipe))
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A recipe folder holding every kind of file a recipe names by a relative path."""
    folder = tmp_path / "project"
    write_rows(folder / "tasks" / "train.jsonl", [{"question": "Say hi", "answer": "hi"}])
    write_rows(folder / "tasks" / "test.jsonl", [{"question": "Say ho", "answer": "ho"}])
    write_rows(folder / "corpus.jsonl", [{"id": "0", "contents": "hi"}])
    (folder / "seed.db").write_bytes(b"")
    (folder / "model").mkdir()
    (folder / "my_rewards.py").write_text(
        "def score(completions, **kwargs):\n    return [0.0] * len(completions)\n"
    )
    (folder / "demos.py").write_text("def turns(row):\n    return ['<answer> hi </answer>']\n")
    write_recipe(
        folder / "recipe.yaml",
        {
            "model": {"name_or_path": "./model"},
            "data": {"train": "tasks", "eval": "tasks", "corpus": "corpus.jsonl"},
            "tools": {
                "mcpServers": {
                    "db": {
                        "command": "python",
                        "args": ["server.py", "--corpus", "${data.corpus}"],
                        "cwd": ".",
                        "scope": "episode",
                        "setup": [{"copy": "seed.db", "to": "${episode.dir}/seed.db"}],
                    }
                }
            },
            "rewards": [{"name": "exact_match"}, {"name": "my_rewards.py:score"}],
            "warm_start": {"demonstrations": "demos.py:turns"},
        },
    )
    return folder


def test_every_relative_path_in_a_recipe_resolves_against_its_folder(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    recipe = load_recipe("../project/recipe.yaml", check_trainer=False)
    assert recipe.model.name_or_path == str(project / "model")
    assert (recipe.data.train, recipe.data.eval) == (str(project / "tasks"), str(project / "tasks"))
    assert recipe.data.corpus == str(project / "corpus.jsonl")
    assert recipe.rewards[1].name == f"{project / 'my_rewards.py'}:score"
    assert recipe.warm_start.demonstrations == f"{project / 'demos.py'}:turns"
    server = recipe_servers(recipe)[0]
    assert server.cwd == str(project)
    assert server.setup == [{"copy": str(project / "seed.db"), "to": "${episode.dir}/seed.db"}]
    # Arguments are the server's own strings, run in its cwd; ${data.corpus} is the resolved field.
    assert server.args[:2] == ["server.py", "--corpus"] and server.args[2] == str(project / "corpus.jsonl")
    assert {"question", "golden_answers"} <= set(check_data(recipe))  # the rows were found


def test_built_in_names_hub_ids_and_absolute_paths_are_kept(tmp_path: Path) -> None:
    absolute = write_rows(tmp_path / "abs" / "rows.jsonl", [{"question": "q", "answer": "a"}])
    recipe = load_recipe(
        str(
            write_recipe(
                tmp_path / "r" / "recipe.yaml",
                {"data": {"train": "fictional", "eval": "someone/qa-set", "corpus": str(absolute)}},
            )
        ),
        check_trainer=False,
    )
    assert (recipe.data.train, recipe.data.eval, recipe.data.corpus) == (
        "fictional",
        "someone/qa-set",
        str(absolute),
    )
    assert recipe.model.name_or_path == "smollm2-135m"


def test_a_base_recipes_paths_resolve_against_the_base_recipes_folder(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    write_rows(shared / "tasks.jsonl", [{"question": "q", "answer": "a"}])
    write_recipe(shared / "base.yaml", {"data": {"train": "tasks.jsonl", "corpus": "corpus.jsonl"}})
    top = write_recipe(
        tmp_path / "mine" / "recipe.yaml", {"base": "../shared/base.yaml", "data": {"eval": "held_out.jsonl"}}
    )
    recipe = load_recipe(str(top), check_trainer=False)
    assert recipe.data.train == str(shared / "tasks.jsonl")
    assert recipe.data.corpus == str(shared / "corpus.jsonl")
    assert recipe.data.eval == str(tmp_path / "mine" / "held_out.jsonl")


def test_paths_given_with_set_resolve_against_the_working_directory(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shell = tmp_path / "shell"
    write_rows(shell / "mine.jsonl", [{"question": "q", "answer": "a"}])
    monkeypatch.chdir(shell)
    recipe = load_recipe(
        str(project / "recipe.yaml"),
        ["data.eval=mine.jsonl", "tools.mcpServers.db.setup.0.copy=other.db"],
        check_trainer=False,
    )
    assert recipe.data.eval == str(shell / "mine.jsonl")
    assert recipe_servers(recipe)[0].setup[0]["copy"] == str(shell / "other.db")
    assert recipe.data.train == str(project / "tasks")  # not overridden: still the recipe's


def test_a_data_name_that_is_neither_a_path_nor_a_built_in_is_one_line(project: Path) -> None:
    recipe = load_recipe(str(project / "recipe.yaml"), ["data.train=my tasks!"], check_trainer=False)
    with pytest.raises(DataError) as info:
        check_data(recipe)
    message = str(info.value)
    assert message.startswith("data.train: 'my tasks!' is no file or folder, nor a built-in dataset")
    assert message.endswith("nor a Hugging Face hub dataset id (name or owner/name)") and "\n" not in message
    recipe = load_recipe(str(project / "recipe.yaml"), ["data.eval=fictionl"], check_trainer=False)
    with pytest.raises(DataError, match=r"^data.eval: 'fictionl' is no file .*\(did you mean fictional\?\)"):
        check_data(recipe, "eval")


# -- the command line, run from another folder -----------------------------------------------------------
@pytest.fixture(scope="module")
def tokenizer_folder(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A tiny tokenizer saved as a model folder: `mcp-rl prompt` loads the tokenizer, never the weights."""
    from tiny_models import tiny_tokenizer

    folder = tmp_path_factory.mktemp("tokenizer")
    tiny_tokenizer(["Say hi", "Say ho", "Use the tools.", "hi ho"]).save_pretrained(folder)
    return str(folder)


def run_from(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``mcp-rl`` as a user runs it from ``cwd``, with no offline switch set: the hub may be asked."""
    env = {k: v for k, v in os.environ.items() if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")}
    return subprocess.run(
        [sys.executable, "-m", "mcp_rl.cli", *args],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**env, "TRANSFORMERS_OFFLINE": "1"},
    )


def test_a_recipe_run_from_its_parent_folder_finds_its_data_and_a_name_found_nowhere_fails_at_once(
    tmp_path: Path, tokenizer_folder: str
) -> None:
    # Issue 25 item 3: `data.train: tasks` run from the parent folder became a hub lookup, 5 retries long.
    # The server's script sits next to the recipe too: `cwd: .` runs it there, so `args` find it.
    write_rows(tmp_path / "project" / "tasks" / "train.jsonl", [{"question": "Say hi", "answer": "hi"}])
    shutil.copy(ECHO_SERVER, tmp_path / "project" / "echo_server.py")
    echo = {"command": "python", "args": ["echo_server.py"], "cwd": "."}
    write_recipe(
        tmp_path / "project" / "recipe.yaml",
        {
            "data": {"train": "tasks"},
            "tools": {"mcpServers": {"echo": echo}},
            "parser": {"name": "tool_call"},
            "prompt": {"system": "Use the tools."},
        },
    )
    shown = run_from(tmp_path, "prompt", "--recipe", "project/recipe.yaml", "--model", tokenizer_folder)
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert f"row 0 of {tmp_path / 'project' / 'tasks'}" in shown.stdout
    assert "━━ user (prompt.user_template)\nSay hi\n" in shown.stdout
    assert "tool(s), described in the system prompt" in shown.stdout  # the server started and listed them
    failed = run_from(tmp_path, "prompt", "--recipe", "project/recipe.yaml", "--set", f"data.train={NOWHERE}")
    lines = [line for line in failed.stderr.splitlines() if line.strip()]
    assert failed.returncode == 2 and len(lines) == 1, failed.stderr[-2000:]
    assert lines[0].startswith(f"data.train: '{NOWHERE}' is no file or folder, nor a built-in dataset")
    assert "Hugging Face hub" in lines[0] and "Retry" not in failed.stderr
