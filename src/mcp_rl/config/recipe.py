"""Recipes: YAML files that fill the pydantic models of ``mcp_rl.config.sections``, checked field by field.

A recipe is found by name (``search``) in the package's ``recipes`` folder or the source checkout's, or
given as a path to a ``.yaml`` file. Loading goes: read (aliases bounded in count and in text) → relative
paths made absolute against the file's folder (``mcp_rl.config.paths``) → ``--set`` overrides on the raw
mapping (so a bad override is reported like a bad file; their paths against the working directory) →
pydantic validation of types and bounds → ``trainer`` keys against ``trl.GRPOConfig`` → checks across fields
→ built-in corpus names become paths → ``${section.field}`` interpolation (bounded in text) → the
``mcpServers`` entries are parsed. Every failure is a ``RecipeError`` whose one-line
message names the field and the fix; pydantic's errors are reworded into that form.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import functools
import operator
import os
import re
import string
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import BaseModel, Field

import mcp_rl
from mcp_rl.config.paths import anchored_paths
from mcp_rl.config.sections import (
    Recipe,
    RewardSpec,
    YamlFloat,
    describe_recipe_fields,
    did_you_mean,
    show_value,
    type_members,
    validate_config,
)
from mcp_rl.errors import RecipeError

__all__ = [
    "RecipeError",
    "apply_overrides",
    "describe_recipe_fields",
    "find_recipe",
    "list_recipes",
    "load_recipe",
    "recipe_dirs",
    "recipe_from_dict",
    "recipe_to_yaml",
]

# Dotted only: an undotted ${VAR} is an environment variable, expanded by server_config.py when servers start.
# ${episode.*} is not a recipe field: the tool pool fills it in for each per-episode server instance.
_REFERENCE = re.compile(r"\$\{(?!episode\.)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\}")
_YAML_SUFFIXES = (".yaml", ".yml")
_CHAT_ROLES = ("system", "user", "assistant", "tool")
_SIMPLE_TYPES = (int, float, bool, str, type(None))
# GRPOConfig accepts these silently or fails deep inside TRL; refuse them while the field is still known.
_TRAINER_BOUNDS: dict[str, dict[str, float]] = {
    "learning_rate": {"ge": 0},  # 0: the control run, episodes and probes without any update
    "num_generations": {"ge": 2},
    "per_device_train_batch_size": {"ge": 1},
    "gradient_accumulation_steps": {"ge": 1},
    "beta": {"ge": 0},
    "temperature": {"gt": 0},
    "save_steps": {"gt": 0},
    "logging_steps": {"gt": 0},
    "max_steps": {"ge": -1},
}


# -- finding and loading ------------------------------------------------------------------------------
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


def load_recipe(name_or_path: str, overrides: Sequence[str] = (), *, check_trainer: bool = True) -> Recipe:
    """Read, override, check and resolve a recipe. ``overrides`` are ``key.path=value`` strings.

    ``check_trainer=False`` skips checking ``trainer`` against ``trl.GRPOConfig``, whose import takes
    seconds, for callers that never train (``mcp-rl tools``).
    """
    path = find_recipe(name_or_path)
    return _recipe_from_anchored(_read_with_base(path), overrides, path.stem, check_trainer)


def _read_with_base(path: Path, seen: tuple[Path, ...] = ()) -> dict[str, Any]:
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
    return _merged(_read_with_base(base_path, (*seen, path.resolve())), raw)


def _merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(merged.get(key), Mapping):
            merged[key] = _merged(merged[key], value)
        else:
            merged[key] = value
    return merged


def recipe_from_dict(
    raw: Mapping[str, Any],
    overrides: Sequence[str] = (),
    *,
    name: str = "recipe",
    check_trainer: bool = True,
    base_dir: str | Path | None = None,
) -> Recipe:
    """``load_recipe`` for a mapping already in memory; ``name`` is used when the mapping has none.

    ``base_dir`` is the folder the mapping's relative paths (data files, ``file.py:function`` rewards, a
    server's ``cwd`` and ``setup`` files) are found in (default: the working directory); they are written
    back as absolute paths, so the recipe runs from anywhere.
    """
    written = anchored_paths(raw, Path.cwd() if base_dir is None else Path(base_dir).resolve())
    return _recipe_from_anchored(written, overrides, name, check_trainer)


def _recipe_from_anchored(
    written: dict[str, Any], overrides: Sequence[str], name: str, check_trainer: bool
) -> Recipe:
    """Overrides (their paths typed on the command line, so against the working directory), checks and
    resolution of a mapping whose own paths are already absolute."""
    overridden = anchored_paths(apply_overrides(written, overrides), Path.cwd(), unchanged_from=written)
    recipe: Recipe = validate_config(Recipe, overridden)
    recipe.name = recipe.name or name
    if check_trainer:
        recipe.trainer = _check_trainer(recipe.trainer)
    _check_recipe(recipe)
    _resolve_corpus(recipe)
    _interpolate(recipe, recipe, "")
    recipe.server_configs()  # a bad server entry fails here, not minutes later when servers start
    return recipe


# A recipe is a page of settings: these bounds are far past any real one and refuse, before anything is
# built from it, a file that would take the machine's memory (a billion-laughs alias bomb reached 4 GB in
# 73 s through the recipe printer and `${...}` interpolation, which expand aliases). The text a recipe holds
# once its aliases and `${...}` references are expanded is held to what a file may hold written out: one
# long string aliased thousands of times stays under the value count but not under this.
_MAX_RECIPE_BYTES = 1_000_000
_MAX_YAML_VALUES = 10_000


def _read_yaml(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > _MAX_RECIPE_BYTES:
            raise RecipeError(
                f"{path}: larger than {_MAX_RECIPE_BYTES:,} bytes; a recipe is a page of settings"
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
    ``_MAX_RECIPE_BYTES`` characters of text, recursive aliases and nesting too deep to build, each as a
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
            if chars[id(node)] > _MAX_RECIPE_BYTES:
                raise RecipeError(
                    f"{where}: {_field_of(root, node)}: its YAML aliases expand to more than "
                    f"{_MAX_RECIPE_BYTES:,} characters of text (an alias bomb?); alias long text less often, "
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


# -- trainer ------------------------------------------------------------------------------------------
def _trainer_type(hint: Any, bounds: Mapping[str, float]) -> Any:
    """A GRPOConfig field's type checked like ours when it is int/float/bool/str (or null); else ``Any``."""
    members = type_members(hint)
    if not all(member in _SIMPLE_TYPES for member in members):
        return Any  # enums, dicts, lists: left to GRPOConfig itself
    checked = functools.reduce(operator.or_, [YamlFloat if m is float else m for m in members])
    return Annotated[checked, Field(**bounds)]


def _check_trainer(trainer: Mapping[str, Any]) -> dict[str, Any]:
    if not trainer:
        return {}
    from trl import GRPOConfig  # slow to import: only when a recipe sets trainer fields

    known = {f.name: f for f in dataclasses.fields(GRPOConfig)}
    checked = {}
    for key, value in trainer.items():
        where = f"trainer.{key}"
        if key not in known:
            raise RecipeError(f"{where}: not a GRPOConfig field{did_you_mean(key, known)}")
        checked[key] = validate_config(
            _trainer_type(known[key].type, _TRAINER_BOUNDS.get(key, {})), value, where
        )
    return checked


def _check_recipe(recipe: Recipe) -> None:
    """Checks that span fields or need more than a type: token budgets, messages, rewards, parser options."""
    rollout = recipe.rollout
    for name in ("max_new_tokens", "max_observation_tokens"):
        if getattr(rollout, name) > rollout.max_completion_tokens:
            raise RecipeError(
                f"rollout.{name}: {getattr(rollout, name)} exceeds rollout.max_completion_tokens "
                f"({rollout.max_completion_tokens}); raise max_completion_tokens or lower {name}"
            )
    if recipe.model.lora and recipe.model.train_top_layers is not None:
        raise RecipeError(
            "model.train_top_layers: LoRA already decides what trains; "
            "set model.lora=false or model.train_top_layers=null"
        )
    if recipe.probes.demonstrations and not recipe.warm_start.demonstrations:
        raise RecipeError(
            "probes.demonstrations: the probes are held-out warm-start demonstrations; "
            "set warm_start.demonstrations or probes.demonstrations=0"
        )
    warmup = recipe.trainer.get("warmup_steps") or recipe.trainer.get("warmup_ratio")
    if warmup and recipe.trainer.get("lr_scheduler_type", "linear") == "constant":
        raise RecipeError(
            "trainer.lr_scheduler_type: constant ignores the warm-up; use constant_with_warmup "
            "(or linear, cosine, ...) with trainer.warmup_steps / warmup_ratio"
        )
    if recipe.trainer.get("max_steps") == 0:
        raise RecipeError("trainer.max_steps: must be at least 1, or -1 to train num_train_epochs epochs")
    # The engine samples with these and TRL scores log-probs with the same values: one place to set them.
    for name in ("temperature", "top_p", "max_completion_length"):
        if name in recipe.trainer:
            where = "max_completion_tokens" if name == "max_completion_length" else name
            raise RecipeError(
                f"trainer.{name}: set rollout.{where} instead; "
                "the rollout engine and the trainer both read it there"
            )
    try:
        list(string.Formatter().parse(recipe.prompt.user_template))
    except ValueError as error:
        raise RecipeError(
            f"prompt.user_template: not a valid format string ({error}); write {{{{ for a brace"
        ) from None
    for i, message in enumerate(recipe.prompt.few_shot):
        if message.get("role") not in _CHAT_ROLES or not isinstance(message.get("content"), str):
            raise RecipeError(
                f"prompt.few_shot[{i}]: expected a chat message {{role: {'|'.join(_CHAT_ROLES)}, "
                f"content: text}}, got {show_value(message)}"
            )
    if not recipe.rewards:
        raise RecipeError("rewards: give at least one reward, e.g. [{name: exact_match}]")
    for i, reward in enumerate(recipe.rewards):
        _check_reward(reward, f"rewards[{i}].name")
    _check_warm_start(recipe)
    from mcp_rl.env.parsers import build_parser

    try:
        build_parser(recipe.parser.name, **recipe.parser.options)
    except ValueError as error:
        raise RecipeError(f"parser.options: {error}") from None


def _check_reward(reward: RewardSpec, where: str) -> None:
    """A built-in name, or a function that imports now: ``path/to/file.py:function`` (already absolute,
    see ``mcp_rl.config.paths``) or ``package.module:function``; and options that it takes as keyword
    arguments."""
    from mcp_rl.rewards import BUILTIN_REWARDS  # the registry itself, so the names are never listed twice
    from mcp_rl.rewards.registry import unknown_options

    if reward.name in BUILTIN_REWARDS:
        return
    module, sep, function = reward.name.rpartition(":")
    if not (sep and module and all(part.isidentifier() for part in function.split("."))):
        raise RecipeError(
            f"{where}: unknown reward {reward.name!r}{did_you_mean(reward.name, BUILTIN_REWARDS)}; "
            f"built-in: {', '.join(BUILTIN_REWARDS)}, or 'path/to/file.py:function' (next to the recipe) or "
            "'package.module:function' for your own"
        )
    target = _imported_function(reward.name, where)
    unknown = unknown_options(target, reward.options)
    if unknown:
        options = where.removesuffix(".name") + ".options"
        raise RecipeError(
            f"{options}: {', '.join(unknown)} not parameter(s) of {function}; remove them from the options "
            "or add them to the function"
        )


def _imported_function(spec: str, where: str) -> Any:
    from mcp_rl.rewards.registry import import_object

    try:
        target = import_object(spec)
    except ValueError as error:
        raise RecipeError(f"{where}: {error}") from None
    if not callable(target):
        raise RecipeError(f"{where}: {spec!r} is {type(target).__name__}, not a function")
    return target


def _check_warm_start(recipe: Recipe) -> None:
    """Demonstration templates that parse, or a demonstration function that imports now."""
    spec = recipe.warm_start.demonstrations
    where = "warm_start.demonstrations"
    if isinstance(spec, str):
        if ":" not in spec:
            raise RecipeError(
                f"{where}: {spec!r} is neither a list of turn templates nor 'file.py:function' / "
                "'package.module:function'"
            )
        _imported_function(spec, where)
        return
    for i, template in enumerate(spec or []):
        try:
            list(string.Formatter().parse(template))
        except ValueError as error:
            raise RecipeError(
                f"{where}[{i}]: not a valid format string ({error}); write {{{{ for a brace"
            ) from None


# -- resolution ---------------------------------------------------------------------------------------
def _resolve_corpus(recipe: Recipe) -> None:
    """A built-in dataset name in ``data.corpus`` becomes its corpus or seed database. A path is absolute by
    now (``mcp_rl.config.paths``); a missing file is kept: the recipe may be meant for another machine, and
    ``run.check_corpus`` says so before a run starts."""
    corpus = recipe.data.corpus
    if corpus is None or Path(corpus).is_absolute():
        return
    from mcp_rl.datasets import available_datasets, builtin_corpus  # lookups only, no generation

    names = available_datasets()
    if corpus not in names:
        raise RecipeError(
            f"data.corpus: {corpus!r} is neither a file nor a built-in dataset"
            f"{did_you_mean(corpus, names)}; built-in: {', '.join(names) or '(none)'}"
        )
    try:  # corpus.jsonl for the search server, seed.db for a database server
        recipe.data.corpus = str(builtin_corpus(corpus))
    except ValueError as error:
        raise RecipeError(f"data.corpus: {error}") from None


def _lookup(recipe: Recipe, reference: str, where: str) -> str:
    node: Any = recipe
    for depth, part in enumerate(reference.split(".")):
        names = list(type(node).model_fields) if isinstance(node, BaseModel) else []
        names = list(node) if isinstance(node, Mapping) else names
        if part not in names:
            prefix = ".".join(reference.split(".")[:depth])
            match = difflib.get_close_matches(part, names, n=1, cutoff=0.6)
            hint = f" (did you mean {'.'.join(filter(None, [prefix, match[0]]))}?)" if match else ""
            raise RecipeError(f"{where}: ${{{reference}}} names no recipe field{hint}")
        node = getattr(node, part) if isinstance(node, BaseModel) else node[part]
    if node is None:
        raise RecipeError(f"{where}: ${{{reference}}} is null; set {reference} in the recipe")
    if isinstance(node, Mapping | list | BaseModel):
        raise RecipeError(f"{where}: ${{{reference}}} is not a single value; refer to one of its fields")
    return show_value(node) if isinstance(node, bool) else str(node)


@dataclasses.dataclass
class _TextBudget:
    """Characters ``${...}`` references may still add to the recipe (see ``_MAX_RECIPE_BYTES``)."""

    left: int = _MAX_RECIPE_BYTES


def _substituted(recipe: Recipe, text: str, where: str, budget: _TextBudget) -> str:
    """``text`` with its references replaced, refused before joining if that would outgrow ``budget``."""
    matches = list(_REFERENCE.finditer(text))
    if not matches:
        return text
    values = [_lookup(recipe, match.group(1), where) for match in matches]
    budget.left -= sum(len(value) - len(match.group(0)) for match, value in zip(matches, values, strict=True))
    if budget.left < 0:
        raise RecipeError(
            f"{where}: its ${{...}} references expand the recipe past {_MAX_RECIPE_BYTES:,} characters of "
            "text; refer to long values less often, or keep long text in a file the recipe names"
        )
    replacements = iter(values)
    return _REFERENCE.sub(lambda _: next(replacements), text)


def _interpolate(recipe: Recipe, value: Any, where: str, budget: _TextBudget | None = None) -> Any:
    """Replace ``${section.field}`` in every string of ``value`` (models are updated in place)."""
    budget = _TextBudget() if budget is None else budget
    if isinstance(value, str):
        return _substituted(recipe, value, where, budget)
    if isinstance(value, list):
        return [_interpolate(recipe, item, f"{where}[{i}]", budget) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _interpolate(recipe, item, f"{where}.{key}", budget) for key, item in value.items()}
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _interpolate(recipe, old, f"{where}.{name}" if where else name, budget)
            if new is not old and new != old:
                setattr(value, name, new)  # validated again: a reference may not turn a number into text
    return value


# -- writing ------------------------------------------------------------------------------------------
class _Dumper(yaml.SafeDumper):
    """Multi-line strings (prompts) as ``|`` blocks, readable and diffable."""


_Dumper.add_representer(
    str,
    lambda dumper, text: dumper.represent_scalar(
        "tag:yaml.org,2002:str", text, style="|" if "\n" in text else None
    ),
)


def recipe_to_yaml(recipe: Recipe) -> str:
    """The resolved recipe as YAML that ``load_recipe`` reads back to an equal ``Recipe``."""
    return yaml.dump(recipe.model_dump(), Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=110)
