"""Bad recipes, one mistake each (tests/data/bad_recipes/, ≥ 50 files): each ends `mcp-rl train` with exit
code 2 and one line on stderr naming the problem, before anything is written, under a memory cap (alias bombs
must be refused, not expanded)."""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import pytest
from conftest import ROOT

CASES = ROOT / "tests" / "data" / "bad_recipes"
MEMORY_CAP_BYTES = 8 * 1024**3  # address space: torch and TRL fit; an expanding alias bomb does not


def _cap_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP_BYTES, MEMORY_CAP_BYTES))


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, object]]:
    from tiny import searching_model

    model, tokenizer = searching_model(seed=0)
    folder = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    work = tmp_path_factory.mktemp("runs")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    env.pop("MCP_RL_NOT_SET_ANYWHERE", None)
    done = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "scripts" / "bad_recipes.py"), str(folder), str(work)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
        env=env,
        preexec_fn=_cap_memory,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


def test_there_are_at_least_fifty_cases_and_the_base_is_valid():
    from mcp_rl.config.recipe import load_recipe
    from mcp_rl.env.data import check_data

    assert len([p for p in CASES.glob("*.yaml") if not p.name.startswith("_")]) >= 50
    check_data(load_recipe(str(CASES / "_base.yaml")))  # each case differs from a recipe that loads


@pytest.mark.parametrize("name", sorted(p.stem for p in CASES.glob("*.yaml") if not p.name.startswith("_")))
def test_bad_recipe_is_one_line_exit_2_and_writes_nothing(results, name):
    outcome = results[name]
    lines = [line for line in str(outcome["stderr"]).splitlines() if line.strip()]
    assert outcome["exit_code"] == 2, outcome
    assert len(lines) == 1, lines
    assert str(outcome["expect"]) in lines[0], lines[0]
    assert not outcome["left_behind"], "the output folder was written"


def test_output_pointing_at_a_file(results):
    outcome = results["output_is_a_file"]
    lines = [line for line in str(outcome["stderr"]).splitlines() if line.strip()]
    assert outcome["exit_code"] == 2 and len(lines) == 1 and "is a file" in lines[0], outcome
    assert not outcome["left_behind"]
