"""`mcp-rl train` says what a run costs: the prompt's tokens before the first step, and once, after the
first steps, how long the rest will take at their pace (tiny model, real search server)."""

from __future__ import annotations

import re
from pathlib import Path

from conftest import run_cli
from tiny import tiny_search_overrides


def test_train_prints_the_prompt_cost_then_its_own_pace_once(
    tiny_model_dir: Path, tiny_corpus: Path, tiny_qa: Path, tmp_path: Path
) -> None:
    settings = tiny_search_overrides(
        tiny_model_dir, tiny_corpus, tiny_qa, **{"trainer.max_steps": 5, "trainer.save_steps": 100}
    )
    result = run_cli("train", "--recipe", "search", "-o", str(tmp_path / "run"), *settings, timeout_s=600)
    assert result.returncode == 0, result.stderr[-3000:]
    printed = result.stdout + result.stderr
    cost = re.search(
        r"cost: prompt ([\d,]+) tokens \(([\d,]+) of them the 1 tool schema\(s\)\), 2 samples", printed
    )
    # The tiny model's chat template drops the schemas it is given: they cost nothing, and the line says so.
    assert cost and int(cost[2].replace(",", "")) == 0 < int(cost[1].replace(",", "")), printed[-3000:]
    paces = re.findall(
        r"~(\d+) min for the (\d+) steps left at the pace of the first (\d+) \(([\d.]+) s a step\)", printed
    )
    assert len(paces) == 1, printed[-3000:]  # once, not at every step
    minutes, left, first, seconds = paces[0]
    assert (left, first) == ("2", "3") and float(seconds) > 0
    assert abs(int(minutes) - float(seconds) * 2 / 60) <= 0.5  # the rest at that pace, rounded
    assert printed.index("cost: prompt") < printed.index("at the pace of the first")
