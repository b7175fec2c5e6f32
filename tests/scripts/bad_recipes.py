"""Run ``mcp-rl train`` on every recipe of tests/data/bad_recipes/ in this one process; JSON results out.

    python tests/scripts/bad_recipes.py TINY_MODEL_FOLDER WORK_DIR > results.json

One process (TRL is imported once) run by tests/test_bad_recipes.py under a memory cap. For each file: the
exit code, what went to stderr, and whether the output folder was left behind. ``--model`` points every run
at the tiny model (so the cases that get as far as loading it stay fast), except the missing-model case.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from typer.testing import CliRunner

from mcp_rl.cli import app

CASES = Path(__file__).resolve().parents[1] / "data" / "bad_recipes"


def run(recipe: Path, output: Path, model: str | None) -> dict[str, object]:
    args = ["train", "--recipe", str(recipe), "-o", str(output)]
    if model is not None:
        args += ["--model", model]
    result = CliRunner().invoke(app, args)
    return {
        "exit_code": result.exit_code,
        "stderr": result.stderr,
        "stdout": result.stdout[-2000:],
        "exception": repr(result.exception) if result.exit_code not in (0, 2) else None,
        "left_behind": output.exists(),
    }


def main() -> None:
    model, work = sys.argv[1], Path(sys.argv[2])
    results: dict[str, object] = {}
    for recipe in sorted(CASES.glob("*.yaml")):
        if recipe.name.startswith("_"):
            continue
        name = recipe.stem
        results[name] = run(recipe, work / name / "out", None if name == "model_missing" else model)
        results[name]["expect"] = recipe.read_bytes().split(b"\n", 1)[0].decode().removeprefix("# expect: ")
    # `-o` naming an existing file, with an otherwise valid recipe.
    a_file = work / "a-file"
    a_file.write_text("not a folder")
    results["output_is_a_file"] = run(CASES / "_base.yaml", a_file, model)
    results["output_is_a_file"]["expect"] = "is a file"
    results["output_is_a_file"]["left_behind"] = a_file.read_text() != "not a folder"
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    main()
