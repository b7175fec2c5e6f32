"""The README's Python API example runs as written: a tiny model trains against the real search server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "python_api.py"


def test_readme_shows_the_example_as_it_is_in_the_file():
    """The README quotes the example's code; the file is what this test runs, so they must not drift."""
    code = EXAMPLE.read_text().split('"""', 2)[2].split('if __name__ == "__main__":')[0].strip()
    assert code in (ROOT / "README.md").read_text()


def test_python_api_example_trains_a_tiny_model(searching_tiny_model, tmp_path):
    model, tokenizer = searching_tiny_model
    folder = tmp_path / "tiny"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    out = tmp_path / "out"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    result = subprocess.run(
        [sys.executable, str(EXAMPLE), "--model", str(folder), "--steps", "2", "--output-dir", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env=env,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert (out / "model.safetensors").exists()
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2 * 4, "2 steps of 4 episodes"
    assert all("birth_year_found" in t["rewards"] for t in traces), "the example's own reward was used"
    assert all(t["row"]["expected"] in ("1632", "1762") for t in traces), "its own columns reached the reward"
    # The tiny model was warmed up on another prompt: it may not search here, but every episode goes on.
    assert all(t["turns"] and t["turns"][0]["observation"] for t in traces), "the rollout loop did not run"
