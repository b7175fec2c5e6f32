"""For a server whose tools may write (no ``readOnlyHint``): the advice to give each episode its own
instance on a copy of the server's folder, and a reward module that checks the state an episode left
instead of trusting the final answer's words.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_rl.scaffold.arguments import server_folders
from mcp_rl.scaffold.few_shot import ANSWER_COLUMN, ExampleCall
from mcp_rl.tools import ToolSpec

__all__ = ["STATE_REWARD", "episode_scope_advice", "reward_skeleton"]

STATE_REWARD = "state_check"


def episode_scope_advice(server: str, entry: Mapping[str, Any], tools: Sequence[ToolSpec]) -> str | None:
    """The advice for a server whose tools may write (no ``readOnlyHint``): a fresh instance per episode,
    started on a copy of the folder it was given, so one episode's writes are not the next one's start."""
    writing = [tool.name for tool in tools if tool.server == server and not tool.read_only]
    if not writing or entry.get("scope") == "episode":
        return None
    advice = (
        f"{server}: {', '.join(writing)} {'declares' if len(writing) == 1 else 'declare'} no readOnlyHint, "
        "so what one episode writes is the next one's start; give each episode its own instance: "
        "scope: episode"
    )
    folders = server_folders(entry)
    if folders:
        copy = Path(folders[0]).name
        advice += (
            f', args with "${{episode.dir}}/{copy}" in place of {folders[0]}, setup: [{{copy: {folders[0]}}}]'
        )
    return advice


def reward_skeleton(recipe_name: str, check: ExampleCall, folder: str | None = None) -> str:
    """A reward module that checks the state an episode left by calling a read-only tool on the episode's
    own instance, instead of trusting the words of the final answer. ``folder``: the server's folder in the
    check's arguments, which becomes the episode's own copy of it under ``scope: episode``."""
    arguments = json.dumps(check.arguments, ensure_ascii=False)
    return f'''"""Rewards of the {recipe_name} recipe that check what an episode did, not what the model says.

Written by `mcp-rl init` as a starting point: edit the check to what your tasks change. A reward runs while
the episode's own server instance (scope: episode) is still up, so its calls see the state that episode
left, in the episode's own copy of the server's folder (trajectory.tools.dir / the folder's name).
"""

import json
from pathlib import Path

CHECK_TOOL = {check.tool!r}
CHECK_ARGUMENTS = {arguments}
SERVER_FOLDER = {folder!r}


def check_arguments(trajectory):
    """CHECK_ARGUMENTS, with SERVER_FOLDER moved to the episode's copy of it when the episode has one."""
    if SERVER_FOLDER is None or trajectory.tools.dir is None:
        return CHECK_ARGUMENTS
    copy = str(Path(trajectory.tools.dir) / Path(SERVER_FOLDER).name)
    text = json.dumps(CHECK_ARGUMENTS).replace(json.dumps(SERVER_FOLDER)[1:-1], json.dumps(copy)[1:-1])
    return json.loads(text)


def {STATE_REWARD}(trajectories, {ANSWER_COLUMN}, **columns):
    """1.0 when CHECK_TOOL's output on the episode's own instance holds the row's answer; 0.0 when not, or
    when the tool answers with an error ("no such file"); None (the sample is left out) when the check
    could not be made at all (server down, timeout)."""
    scores = []
    for trajectory, expected in zip(trajectories, {ANSWER_COLUMN}, strict=True):
        result = trajectory.tools.call(CHECK_TOOL, check_arguments(trajectory))
        if result.ok:
            scores.append(float(str(expected) in result.text))
        else:
            scores.append(0.0 if result.failure == "tool error" else None)
    return scores
'''
