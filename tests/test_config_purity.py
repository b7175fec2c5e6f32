"""Config is pure: reading a recipe parses and validates; the user's code, server commands and the heavy
libraries are reached only when the recipe is checked for building (``mcp_rl.env.recipe_checks``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from mcp_rl.config.recipe import load_recipe
from mcp_rl.env.recipe_checks import check_recipe
from mcp_rl.errors import RecipeError

# What config/ must not pull in: MCP and its event loop, the model libraries, rewards, parsers, tools.
RUNTIME_MODULES = [
    "mcp",
    "anyio",
    "torch",
    "transformers",
    "mcp_rl.rewards",
    "mcp_rl.env.parsers",
    "mcp_rl.tools",
]

_LOADED_AFTER = """
import json, sys
import mcp_rl.config.recipe as recipe
step, runtime = sys.argv[1], json.loads(sys.argv[2])
if step == "load":
    recipe.load_recipe("search", check_trainer=False)
print(json.dumps(sorted(m for m in sys.modules if any(m == r or m.startswith(r + ".") for r in runtime))))
"""


@pytest.mark.parametrize("step", ["import", "load"])
def test_config_imports_no_runtime_layer(step: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _LOADED_AFTER, step, json.dumps(RUNTIME_MODULES)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    loaded = json.loads(done.stdout)
    assert loaded == [], f"{step} of a recipe brought in {loaded}; expected none of {RUNTIME_MODULES}"


def _recipe(folder: Path, **sections: object) -> Path:
    path = folder / "pure.yaml"
    path.write_text(yaml.safe_dump(sections))
    return path


def test_a_reward_file_runs_only_when_the_recipe_is_checked(tmp_path: Path) -> None:
    marker = tmp_path / "imported"
    (tmp_path / "mine.py").write_text(
        f"open({str(marker)!r}, 'w').close()\n\ndef bonus(*, completions, **kwargs):\n    return [1.0]\n"
    )
    recipe = load_recipe(str(_recipe(tmp_path, rewards=[{"name": "mine.py:bonus"}])), check_trainer=False)
    assert recipe.rewards[0].name == f"{tmp_path / 'mine.py'}:bonus" and not marker.exists()
    check_recipe(recipe)
    assert marker.exists(), "checking the recipe imports the reward file"


def test_a_server_command_is_looked_up_only_when_the_recipe_is_checked(tmp_path: Path) -> None:
    servers = {"mcpServers": {"gone": {"command": "mcp-rl-no-such-command-xyz", "args": ["${NOT_SET_42}"]}}}
    recipe = load_recipe(str(_recipe(tmp_path, tools=servers)), check_trainer=False)
    assert recipe.tools.mcpServers["gone"]["args"] == ["${NOT_SET_42}"]  # left for the servers
    with pytest.raises(RecipeError, match=r"^tools\.mcpServers\.gone\.args: environment variable NOT_SET_42"):
        check_recipe(recipe)


def test_a_bad_parser_option_is_refused_only_when_the_parser_is_built(tmp_path: Path) -> None:
    recipe = load_recipe(
        str(_recipe(tmp_path, parser={"name": "search_r1", "options": {"bogus": 1}})), check_trainer=False
    )
    assert recipe.parser.options == {"bogus": 1}
    with pytest.raises(RecipeError, match=r"^parser\.options: invalid options for parser 'search_r1'"):
        check_recipe(recipe)
