"""``${section.field}`` in a recipe's strings: replaced by that field's validated value.

Only dotted references are ours: an undotted ``${VAR}`` (or ``${VAR:-default}``) is an environment
variable, expanded by ``mcp_rl.tools.server_config`` when servers start, and ``${episode.*}`` is filled in
by the tool pool for each per-episode server instance.

Hand-written rather than OmegaConf's interpolation, for three reasons: OmegaConf would parse every
``${...}`` (the environment's ``${VAR:-default}`` is a grammar error to it, ``${HOME}`` a missing key); a
reference here reads the validated recipe (defaults filled in, the built-in corpus name already a path,
``true`` written as YAML writes it), not the text of the file; and the text references add is counted
against the recipe's size bound before it is joined, where OmegaConf resolves nested references first.
"""

from __future__ import annotations

import dataclasses
import difflib
import re
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from mcp_rl.config.errors import show_value
from mcp_rl.config.loading import MAX_RECIPE_BYTES
from mcp_rl.errors import RecipeError

__all__ = ["interpolate"]

_REFERENCE = re.compile(r"\$\{(?!episode\.)([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\}")


def _lookup(recipe: BaseModel, reference: str, where: str) -> str:
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
    """Characters ``${...}`` references may still add to the recipe (see ``MAX_RECIPE_BYTES``)."""

    left: int = MAX_RECIPE_BYTES


def _substituted(recipe: BaseModel, text: str, where: str, budget: _TextBudget) -> str:
    """``text`` with its references replaced, refused before joining if that would outgrow ``budget``."""
    matches = list(_REFERENCE.finditer(text))
    if not matches:
        return text
    values = [_lookup(recipe, match.group(1), where) for match in matches]
    budget.left -= sum(len(value) - len(match.group(0)) for match, value in zip(matches, values, strict=True))
    if budget.left < 0:
        raise RecipeError(
            f"{where}: its ${{...}} references expand the recipe past {MAX_RECIPE_BYTES:,} characters of "
            "text; refer to long values less often, or keep long text in a file the recipe names"
        )
    replacements = iter(values)
    return _REFERENCE.sub(lambda _: next(replacements), text)


def _interpolated(recipe: BaseModel, value: Any, where: str, budget: _TextBudget) -> Any:
    if isinstance(value, str):
        return _substituted(recipe, value, where, budget)
    if isinstance(value, list):
        return [_interpolated(recipe, item, f"{where}[{i}]", budget) for i, item in enumerate(value)]
    if isinstance(value, dict):
        return {key: _interpolated(recipe, item, f"{where}.{key}", budget) for key, item in value.items()}
    if isinstance(value, BaseModel):
        for name in type(value).model_fields:
            old = getattr(value, name)
            new = _interpolated(recipe, old, f"{where}.{name}" if where else name, budget)
            if new is not old and new != old:
                setattr(value, name, new)  # validated again: a reference may not turn a number into text
    return value


def interpolate(recipe: BaseModel) -> None:
    """Replace ``${section.field}`` in every string of ``recipe``, in place, field by field in order (a
    reference to an earlier field sees its replaced text)."""
    _interpolated(recipe, recipe, "", _TextBudget())
