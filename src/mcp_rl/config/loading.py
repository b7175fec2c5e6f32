"""Recipe files: found by name or path, read with YAML's aliases bounded, stacked on a ``base:`` recipe,
and changed by ``--set`` overrides.

A recipe is found by name (``search``) in the package's ``recipes`` folder or the source checkout's, or
given as a path to a ``.yaml`` file. Each file's relative paths are made absolute against its own folder as
it is read (``mcp_rl.config.paths``).

Library or hand-written, part by part:

- ``base:`` merging is OmegaConf's ``merge`` (mappings key by key, lists and scalars replaced: our rule).
- ``--set KEY.PATH=VALUE`` stays hand-written. ``OmegaConf.update`` silently turns a number on the path
  into a mapping (``--set rollout.max_turns.x=3`` would pass) and says nothing that names the fix for a list
  index out of range, and ``OmegaConf.from_dotlist`` parses values with its own YAML loader, which would
  bypass the alias bound below. The walk that words those errors is the whole of the work.
- Reading stays on PyYAML's composer: the alias bound counts values and characters on the node graph,
  before anything is built, which no loader offers.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml
from omegaconf import OmegaConf
from omegaconf.errors import OmegaConfBaseException

import mcp_rl
from mcp_rl.config.errors import did_you_mean, show_value
from mcp_rl.config.paths import anchored_paths
from mcp_rl.errors import RecipeError

__all__ = [
    "MAX_RECIPE_BYTES",
    "apply_overrides",
    "find_recipe",
    "list_recipes",
    "read_with_base",
    "recipe_dirs",
    "safe_yaml",
]

_YAML_SUFFIXES = (".yaml", ".yml")
# A recipe is a page of settings: these bounds are far past any real one and refuse, before anything is
# built from it, a file that would take the machine's memory (a billion-laughs alias bomb, which the recipe
# printer and `${...}` interpolation would expand; docs/limits.md). The text a recipe holds
# once its aliases and `${...}` references are expanded is held to what a file may hold written out: one
# long string aliased thousands of times stays under the value count but not under this.
MAX_RECIPE_BYTES = 1_000_000
_MAX_YAML_VALUES = 10_000
# Values YAML can hold that OmegaConf's typed nodes do not (dates, sets) pass through for pydantic to judge.
_PLAIN = {"allow_objects": True}


# -- finding ------------------------------------------------------------------------------------------
def recipe_dirs() -> list[Path]:
    """Folders searched for recipes by name, in order: the installed package's, then the checkout's."""
    package = Path(mcp_rl.__file__).parent
    found: list[Path] = []
    for folder in (package / "recipes", package.parents[1] / "recipes"):
        if folder.is_dir() and folder.resolve() not in found:
            found.append(folder.resolve())
    return found


def _recipe_files() -> dict[str, Path]:
    files: dict[str, Path] = {}
    for folder in recipe_dirs():
        for path in sorted(p for p in folder.iterdir() if p.suffix in _YAML_SUFFIXES):
            files.setdefault(path.stem, path)  # the first folder wins, as for lookups by name
    return files


def list_recipes() -> list[tuple[str, str]]:
    """``(name, description)`` of every recipe found by name, sorted by name."""
    listed = []
    for name, path in sorted(_recipe_files().items()):
        try:
            description = str(_read_yaml(path).get("description") or "")
        except RecipeError as error:
            description = f"(unreadable: {error})"
        listed.append((name, description))
    return listed


def find_recipe(name_or_path: str) -> Path:
    """The file of a recipe given by name or by path."""
    path = Path(name_or_path).expanduser()
    if path.suffix in _YAML_SUFFIXES or "/" in name_or_path or os.sep in name_or_path:
        if not path.is_file():
            raise RecipeError(f"{name_or_path}: no such recipe file")
        return path
    files = _recipe_files()
    if name_or_path in files:
        return files[name_or_path]
    if path.is_file():
        return path
    raise RecipeError(
        f"unknown recipe {name_or_path!r}{did_you_mean(name_or_path, files)}; available: "
        f"{', '.join(sorted(files)) or '(none)'}; or give the path of a .yaml file"
    )


# -- reading ------------------------------------------------------------------------------------------
def read_with_base(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
    """A recipe file; with ``base: NAME`` (a recipe name, or a path relative to this file), that recipe's
    settings first and this file's over them: mappings merge key by key, anything else is replaced.
    Each file's relative paths resolve against its own folder (``mcp_rl.config.paths``)."""
    raw = anchored_paths(_read_yaml(path), path.parent.resolve())
    base = raw.pop("base", None)
    if base is None:
        return raw
    if not isinstance(base, str):
        raise RecipeError(f"{path}: base: expected a recipe name or path, got {show_value(base)}")
    relative = path.parent / base
    base_path = relative if relative.suffix in _YAML_SUFFIXES and relative.is_file() else find_recipe(base)
    if base_path.resolve() in seen or base_path.resolve() == path.resolve():
        raise RecipeError(f"{path}: base: {base!r} leads back to this recipe")
    under = read_with_base(base_path, (*seen, path.resolve()))
    try:
        merged = OmegaConf.merge(OmegaConf.create(under, flags=_PLAIN), OmegaConf.create(raw, flags=_PLAIN))
    except OmegaConfBaseException as error:  # keys YAML allows and a recipe never needs (null, a list)
        reason = str(error).splitlines()[0]
        raise RecipeError(f"{path}: cannot be laid over its base {base!r} ({reason})") from None
    return OmegaConf.to_container(merged, resolve=False)  # type: ignore[return-value]


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_RECIPE_BYTES:
            raise RecipeError(
                f"{path}: larger than {MAX_RECIPE_BYTES:,} bytes; a recipe is a page of settings"
            )
        text = path.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise RecipeError(f"{path}: no such recipe file") from None
    except UnicodeDecodeError as error:
        raise RecipeError(
            f"{path}: not UTF-8 text (byte {error.object[error.start]:#04x} at offset {error.start})"
        ) from None
    except OSError as error:
        raise RecipeError(f"{path}: cannot be read ({error.strerror or error})") from None
    data = safe_yaml(text, str(path))
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise RecipeError(f"{path}: expected a mapping of recipe sections, got {type(data).__name__}")
    return dict(data)


def safe_yaml(text: str, where: str) -> Any:
    """``yaml.safe_load`` that refuses aliases expanding past ``_MAX_YAML_VALUES`` values or
    ``MAX_RECIPE_BYTES`` characters of text, recursive aliases and nesting too deep to build, each as a
    one-line ``RecipeError`` naming ``where``."""
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        _check_expansion(node, where)
        return loader.construct_document(node)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark is not None else ""
        raise RecipeError(f"{where} is not valid YAML ({getattr(error, 'problem', error)}{at})") from None
    except RecursionError:
        raise RecipeError(f"{where}: nested too deeply to be a recipe") from None
    finally:
        loader.dispose()


def _check_expansion(root: yaml.Node, where: str) -> None:
    """Count the values and the characters of text the document holds once its aliases are expanded,
    without expanding them: each node's counts are computed once (aliases share nodes), iteratively (no
    recursion limit to hit)."""
    sizes: dict[int, int] = {}
    chars: dict[int, int] = {}
    open_nodes: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        if isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        elif isinstance(node, yaml.MappingNode):
            children = [part for pair in node.value for part in pair]
        else:
            children = []
        if children_done:
            open_nodes.discard(id(node))
            sizes[id(node)] = 1 + sum(sizes[id(child)] for child in children)
            if sizes[id(node)] > _MAX_YAML_VALUES:
                raise RecipeError(
                    f"{where}: {_field_of(root, node)}: its YAML aliases expand to more than "
                    f"{_MAX_YAML_VALUES:,} values (an alias bomb?); write the values out instead"
                )
            own = len(node.value) if isinstance(node, yaml.ScalarNode) else 0
            chars[id(node)] = own + sum(chars[id(child)] for child in children)
            if chars[id(node)] > MAX_RECIPE_BYTES:
                raise RecipeError(
                    f"{where}: {_field_of(root, node)}: its YAML aliases expand to more than "
                    f"{MAX_RECIPE_BYTES:,} characters of text (an alias bomb?); alias long text less often, "
                    "or keep it in a file the recipe names"
                )
            continue
        if id(node) in sizes:
            continue
        if id(node) in open_nodes:
            raise RecipeError(f"{where}: a YAML alias refers to a value that contains it")
        open_nodes.add(id(node))
        stack.append((node, True))
        for child in children:
            if id(child) in open_nodes:
                raise RecipeError(f"{where}: a YAML alias refers to a value that contains it")
            if id(child) not in sizes:
                stack.append((child, False))


def _field_of(root: yaml.Node, target: yaml.Node) -> str:
    """The dotted path of the first place ``target`` sits in the document, breadth first."""
    queue: list[tuple[yaml.Node, str]] = [(root, "")]
    seen: set[int] = set()
    for node, path in queue:  # the queue grows while it is walked: each node once
        if node is target:
            return path or "the document"
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            queue += [(child, f"{path}[{i}]") for i, child in enumerate(node.value)]
        elif isinstance(node, yaml.MappingNode):
            for key, value in node.value:
                name = key.value if isinstance(key, yaml.ScalarNode) else "?"
                queue += [(key, path), (value, f"{path}.{name}" if path else str(name))]
    return "the document"


# -- overrides ----------------------------------------------------------------------------------------
def apply_overrides(raw: Mapping[str, Any], overrides: Iterable[str]) -> dict[str, Any]:
    """A copy of ``raw`` with each ``key.path=value`` applied; values are parsed as YAML (3, 1e-5, [a, b])."""
    result = copy.deepcopy(dict(raw))
    for item in overrides:
        key, sep, text = item.partition("=")
        key = key.strip()
        parts = key.split(".")
        if not sep or not all(parts):
            raise RecipeError(f"--set {item}: expected KEY.PATH=VALUE, e.g. --set rollout.max_turns=3")
        value = safe_yaml(text, f"--set {key}: value {text!r}")
        node: Any = result
        for depth, part in enumerate(parts[:-1]):
            child = _get_child(node, part, parts[:depth])
            if child is None:  # a section absent from the file (or null) is created
                child = {}
                _set_child(node, part, child, parts[:depth])
            elif not isinstance(child, dict | list):
                where = ".".join(parts[: depth + 1])
                raise RecipeError(
                    f"--set {key}: {where} is {show_value(child)}, which has no field {parts[depth + 1]!r}"
                )
            node = child
        _set_child(node, parts[-1], value, parts[:-1])
    return result


def _index(node: list[Any], part: str, parent: list[str]) -> int:
    if not part.isdigit() or int(part) >= len(node):
        where = ".".join(parent)
        raise RecipeError(f"--set: {where} is a list of {len(node)} item(s); use an index 0..{len(node) - 1}")
    return int(part)


def _get_child(node: dict[str, Any] | list[Any], part: str, parent: list[str]) -> Any:
    return node[_index(node, part, parent)] if isinstance(node, list) else node.get(part)


def _set_child(node: dict[str, Any] | list[Any], part: str, value: Any, parent: list[str]) -> None:
    if isinstance(node, list):
        node[_index(node, part, parent)] = value
    else:
        node[part] = value
