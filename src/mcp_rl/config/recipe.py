"""Recipes: YAML files that fill the pydantic models of ``mcp_rl.config.sections``, checked field by field.

Loading parses and validates, and does nothing else: read (aliases bounded in count and in text) →
relative paths made absolute against the file's folder (``mcp_rl.config.paths``) → a ``base:`` recipe
under it (``mcp_rl.config.loading``) → ``--set`` overrides on the raw mapping (so a bad override is
reported like a bad file; their paths against the working directory) → pydantic validation of types and
bounds → ``trainer`` keys against ``trl.GRPOConfig`` → checks across fields → a built-in corpus name becomes
its path → ``${section.field}`` interpolation (``mcp_rl.config.references``). Every failure is a
``RecipeError`` whose one-line message names the field and the fix (``mcp_rl.config.errors``).

What only building can check (reward functions that import, the parser's options, the ``mcpServers``
entries with their commands and environment variables) is ``mcp_rl.env.recipe_checks.check_recipe``'s,
run when an environment is built from the recipe, before the model loads and before anything is written.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import string
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import Field

from mcp_rl.config.describe import describe_recipe_fields
from mcp_rl.config.errors import did_you_mean, show_value, type_members, validate_config
from mcp_rl.config.loading import apply_overrides, find_recipe, list_recipes, read_with_base, recipe_dirs
from mcp_rl.config.paths import anchored_paths
from mcp_rl.config.references import interpolate
from mcp_rl.config.reward_options import BUILTIN_REWARD_OPTIONS
from mcp_rl.config.sections import Recipe, YamlFloat
from mcp_rl.datasets import available_datasets, builtin_corpus
from mcp_rl.errors import RecipeError

__all__ = [
    "RecipeError",
    "apply_overrides",
    "check_fields",
    "describe_recipe_fields",
    "find_recipe",
    "list_recipes",
    "load_recipe",
    "recipe_dirs",
    "recipe_from_dict",
    "recipe_to_yaml",
]

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


def load_recipe(name_or_path: str, overrides: Sequence[str] = (), *, check_trainer: bool = True) -> Recipe:
    """Read, override, validate and resolve a recipe. ``overrides`` are ``key.path=value`` strings.

    ``check_trainer=False`` skips checking ``trainer`` against ``trl.GRPOConfig``, whose import takes
    seconds, for callers that never train (``mcp-rl tools``).
    """
    path = find_recipe(name_or_path)
    return _recipe_from_anchored(read_with_base(path), overrides, path.stem, check_trainer)


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
    check_fields(recipe)
    _resolve_corpus(recipe)
    interpolate(recipe)
    return recipe


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


# -- checks across fields -----------------------------------------------------------------------------
def _check_format_string(template: str, where: str) -> None:
    try:
        list(string.Formatter().parse(template))
    except ValueError as error:
        raise RecipeError(f"{where}: not a valid format string ({error}); write {{{{ for a brace") from None


def check_fields(recipe: Recipe) -> None:
    """Checks that span fields or need more than a type, and need nothing imported or run: token budgets,
    settings that exclude each other, messages and templates, a built-in reward's options."""
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
    if recipe.grpo.sft_coef and not recipe.warm_start.demonstrations:
        raise RecipeError(
            "grpo.sft_coef: the supervised loss mixed in is the warm start's; "
            "set warm_start.demonstrations or grpo.sft_coef=0"
        )
    _check_trainer_fields(recipe.trainer)
    _check_format_string(recipe.prompt.user_template, "prompt.user_template")
    for i, message in enumerate(recipe.prompt.few_shot):
        if message.get("role") not in _CHAT_ROLES or not isinstance(message.get("content"), str):
            raise RecipeError(
                f"prompt.few_shot[{i}]: expected a chat message {{role: {'|'.join(_CHAT_ROLES)}, "
                f"content: text}}, got {show_value(message)}"
            )
    if not recipe.rewards:
        raise RecipeError("rewards: give at least one reward, e.g. [{name: exact_match}]")
    for i, reward in enumerate(recipe.rewards):  # a function of the user's is checked when it is imported
        if reward.name in BUILTIN_REWARD_OPTIONS:
            validate_config(BUILTIN_REWARD_OPTIONS[reward.name], reward.options, f"rewards[{i}].options")
    spec, where = recipe.warm_start.demonstrations, "warm_start.demonstrations"
    if isinstance(spec, str) and ":" not in spec:
        raise RecipeError(
            f"{where}: {spec!r} is neither a list of turn templates nor 'file.py:function' / "
            "'package.module:function'"
        )
    for i, turn in enumerate(spec if isinstance(spec, list) else []):
        _check_format_string(turn if isinstance(turn, str) else turn.content, f"{where}[{i}]")


def _check_trainer_fields(trainer: Mapping[str, Any]) -> None:
    warmup = trainer.get("warmup_steps") or trainer.get("warmup_ratio")
    if warmup and trainer.get("lr_scheduler_type", "linear") == "constant":
        raise RecipeError(
            "trainer.lr_scheduler_type: constant ignores the warm-up; use constant_with_warmup "
            "(or linear, cosine, ...) with trainer.warmup_steps / warmup_ratio"
        )
    if trainer.get("max_steps") == 0:
        raise RecipeError("trainer.max_steps: must be at least 1, or -1 to train num_train_epochs epochs")
    # The engine samples with these and TRL scores log-probs with the same values: one place to set them.
    for name in ("temperature", "top_p", "max_completion_length"):
        if name in trainer:
            where = "max_completion_tokens" if name == "max_completion_length" else name
            raise RecipeError(
                f"trainer.{name}: set rollout.{where} instead; "
                "the rollout engine and the trainer both read it there"
            )


# -- resolution ---------------------------------------------------------------------------------------
def _resolve_corpus(recipe: Recipe) -> None:
    """A built-in dataset name in ``data.corpus`` becomes its corpus or seed database (a name looked up,
    nothing generated). A path is absolute by now (``mcp_rl.config.paths``); a missing file is kept: the
    recipe may be meant for another machine, and ``run.check_corpus`` says so before a run starts."""
    corpus = recipe.data.corpus
    if corpus is None or Path(corpus).is_absolute():
        return
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
