"""One rule for the relative paths of a recipe: each resolves against the folder of the file that wrote it.

A recipe's path fields are ``data.train``, ``data.eval`` and ``data.corpus``, ``model.name_or_path`` (a
local folder), reward and demonstration ``file.py:function`` specs, and each server's ``cwd`` and
``setup[].copy``. A relative one is made absolute against the recipe's folder (a ``base:`` recipe's
against its own folder) as the file is read, so a run finds them from any working directory; a value typed
on the command line (``--set``, ``--qa``, ``--corpus``) resolves against the working directory, as a shell
user expects. Built-in names, hub ids and absolute paths are kept. A value holding ``${...}`` is left to
interpolation: ``${data.corpus}`` is absolute by then, a ``${VAR}`` expansion is the environment's business.
Server ``args`` are strings passed to the server as written, never rewritten: the server resolves them
against its ``cwd`` (``cwd: .`` runs it in the recipe's folder).
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from mcp_rl.datasets import available_datasets

__all__ = ["DATA_SUFFIXES", "anchored_paths", "looks_like_local_path"]

DATA_SUFFIXES = (".jsonl", ".parquet", ".json", ".csv")  # a folder's <split>.<suffix> is looked for in order

Location = tuple[str | int, ...]
Anchor = Callable[[str, Path], str]


def looks_like_local_path(source: str) -> bool:
    """True when a data source can only mean a local path: hub ids are ``name`` or ``owner/name``, so a data
    file suffix, a leading ``.``/``~``/``/``, more than one ``/`` or a backslash rules a hub id out."""
    suffix = Path(source).suffix.lower()
    return (
        suffix in DATA_SUFFIXES
        or source.startswith((".", "~", "/"))
        or source.count("/") > 1
        or "\\" in source
    )


def _absolute(value: str, base: Path) -> str:
    path = Path(value).expanduser()
    return str(path if path.is_absolute() else (base / path).resolve())


def _dataset(value: str, base: Path) -> str:
    """A built-in name as it is; a path that exists under ``base`` or can only be a path, absolute; anything
    else (a hub id) as it is."""
    if value in available_datasets() or not (looks_like_local_path(value) or (base / value).exists()):
        return value
    return _absolute(value, base)


def _corpus(value: str, base: Path) -> str:
    """A corpus file may have any suffix (``seed.db``); a bare name that is not a file is a built-in name."""
    if value in available_datasets():
        return value
    if (base / value).exists() or Path(value).suffix or "/" in value or os.sep in value:
        return _absolute(value, base)
    return value


def _model(value: str, base: Path) -> str:
    """A local model folder; aliases and hub ids (``owner/name``) are kept."""
    if value.startswith((".", "~")) or (base / value).is_dir():
        return _absolute(value, base)
    return value


def _function(value: str, base: Path) -> str:
    """``file.py:function`` with the file made absolute; ``package.module:function`` as it is."""
    module, sep, function = value.rpartition(":")
    if sep and module.endswith(".py"):
        return f"{_absolute(module, base)}:{function}"
    return value


def _at(raw: Any, location: Location) -> Any:
    """The value at ``location`` in a mapping of any shape, or None where the shape does not fit."""
    node = raw
    for part in location:
        if isinstance(part, int):
            node = node[part] if isinstance(node, list) and part < len(node) else None
        else:
            node = node.get(part) if isinstance(node, Mapping) else None
    return node


def _path_fields(raw: Mapping[str, Any]) -> Iterator[tuple[Location, Anchor]]:
    yield ("data", "train"), _dataset
    yield ("data", "eval"), _dataset
    yield ("data", "corpus"), _corpus
    yield ("model", "name_or_path"), _model
    yield ("warm_start", "demonstrations"), _function
    rewards = raw.get("rewards")
    for i in range(len(rewards) if isinstance(rewards, list) else 0):
        yield ("rewards", i, "name"), _function
    servers = _at(raw, ("tools", "mcpServers"))
    for name in servers if isinstance(servers, Mapping) else ():
        yield ("tools", "mcpServers", name, "cwd"), _absolute
        setup = _at(servers, (name, "setup"))
        for j in range(len(setup) if isinstance(setup, list) else 0):
            yield ("tools", "mcpServers", name, "setup", j, "copy"), _absolute


def anchored_paths(
    raw: Mapping[str, Any], base: Path, unchanged_from: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """A copy of the raw recipe mapping with its relative path fields made absolute against ``base``.

    With ``unchanged_from`` (the mapping before ``--set`` overrides), only the fields whose value differs
    from it are resolved: the overrides, against the working directory given as ``base``.
    """
    result = copy.deepcopy(dict(raw))
    for location, anchor in _path_fields(result):
        value = _at(result, location)
        if not isinstance(value, str) or not value or "${" in value:
            continue
        if unchanged_from is not None and _at(unchanged_from, location) == value:
            continue
        _at(result, location[:-1])[location[-1]] = anchor(value, base)
    return result
