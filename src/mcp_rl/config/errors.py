"""Our one-line wording of a bad recipe value: ``path: what is wrong, got value (did you mean ...)``.

pydantic's own messages name the location as a tuple and the type in its terms (``int_parsing``); a recipe
author wants the dotted field, the YAML words for the type and the closest valid choice. ``validate_config``
validates and rewords the first error; the helpers are shared with the loaders' own messages.
"""

from __future__ import annotations

import difflib
import types
from collections.abc import Iterable
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from pydantic_core import ErrorDetails

from mcp_rl.errors import RecipeError

__all__ = ["BOUND_WORDS", "did_you_mean", "is_model", "show_value", "type_members", "validate_config"]

_TYPE_WORDS = {int: "an integer", float: "a number", bool: "true or false", str: "a string"}
_PLURAL_WORDS = {int: "integers", float: "numbers", bool: "booleans", str: "strings"}
# pydantic's bound error types → (the ctx key holding the limit, our words).
BOUND_WORDS = {
    "greater_than": ("gt", "be greater than"),
    "greater_than_equal": ("ge", "be at least"),
    "less_than": ("lt", "be less than"),
    "less_than_equal": ("le", "be at most"),
}
_STRICT = ConfigDict(strict=True)  # plain types (trainer values) are checked like the sections


def show_value(value: Any) -> str:
    """A value as a YAML user would write it, cut short."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """`` (did you mean X?)`` for the closest of ``choices``, or '' when none is close."""
    match = difflib.get_close_matches(str(word), list(choices), n=1, cutoff=0.6)
    return f" (did you mean {match[0]}?)" if match else ""


def type_members(hint: Any) -> tuple[Any, ...]:
    """The types a union allows (``None`` included), or ``(hint,)``; ``Annotated`` metadata dropped."""
    while get_origin(hint) is Annotated:
        hint = get_args(hint)[0]
    return get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)


def is_model(hint: Any) -> bool:
    """Whether ``hint`` is a pydantic model class (a recipe section)."""
    return isinstance(hint, type) and issubclass(hint, BaseModel)


def _expected(hint: Any) -> str:
    """``hint`` in words, for 'expected ..., got ...'."""
    members = type_members(hint)
    if len(members) > 1:
        words = " or ".join(_expected(member) for member in members if member is not type(None))
        return words + (" or null" if type(None) in members else "")
    hint = members[0]
    if get_origin(hint) is Literal:
        return "one of " + ", ".join(repr(choice) for choice in get_args(hint))
    if get_origin(hint) is list:
        return "a list of " + " or ".join(_plural(item) for item in type_members(get_args(hint)[0]))
    if is_model(hint):
        return f"a mapping with fields {', '.join(hint.model_fields)}"
    if get_origin(hint) is dict:
        return "a mapping"
    return _TYPE_WORDS.get(hint, getattr(hint, "__name__", str(hint)))


def _plural(hint: Any) -> str:
    """A list item's type in words: ``strings``, ``mappings {content, weight: 0 or 1}``."""
    if is_model(hint):
        fields = [
            f"{name}: {' or '.join(map(repr, get_args(field.annotation)))}"
            if get_origin(field.annotation) is Literal
            else name
            for name, field in hint.model_fields.items()
        ]
        return f"mappings {{{', '.join(fields)}}}"
    return _PLURAL_WORDS.get(hint, "mappings")


def _locate(root: Any, loc: tuple[int | str, ...], prefix: str) -> tuple[str, Any, Any]:
    """Follow pydantic's error location from ``root``: the dotted path, the type there, its model."""
    path, hint, owner = prefix, root, root
    for part in loc:
        inner = [member for member in type_members(hint) if member is not type(None)]
        if len(inner) != 1:
            break  # a union's branch tag: the value failed every branch, report the union as a whole
        inner_hint = inner[0]
        if isinstance(part, int) and get_origin(inner_hint) is list:
            path, hint = f"{path}[{part}]", get_args(inner_hint)[0]
            continue
        path = f"{path}.{part}" if path else str(part)
        if is_model(inner_hint):
            owner = inner_hint
            field = inner_hint.model_fields.get(str(part))
            hint = field.annotation if field is not None else Any
        else:
            hint = get_args(inner_hint)[1] if get_origin(inner_hint) is dict else Any
    return path, hint, owner


def _explain(root: Any, error: ErrorDetails, prefix: str = "") -> str:
    """One pydantic error in our wording."""
    path, hint, owner = _locate(root, error["loc"], prefix)
    kind, value, ctx = error["type"], error["input"], error.get("ctx", {})
    if kind == "extra_forbidden":
        key = str(error["loc"][-1])
        known = list(owner.model_fields) if is_model(owner) else []
        what = "unknown field" if len(error["loc"]) > 1 or prefix else "unknown section"
        listed = ", ".join(known)
        return f"{path}: {what}{did_you_mean(key, known) or f' (known: {listed})'}"
    if kind == "missing":
        return f"{path}: missing; it has no default, so give it a value"
    if kind in BOUND_WORDS:
        bound, words = BOUND_WORDS[kind]
        text = "be positive" if bound == "gt" and ctx[bound] == 0 else f"{words} {ctx[bound]}"
        return f"{path}: must {text}, got {show_value(value)}"
    if kind == "literal_error" or kind.endswith(("_type", "_parsing")):
        choices = [str(c) for m in type_members(hint) if get_origin(m) is Literal for c in get_args(m)]
        suggestion = did_you_mean(value, choices) if choices and isinstance(value, str) else ""
        return f"{path or 'recipe'}: expected {_expected(hint)}, got {show_value(value)}{suggestion}"
    return f"{path or 'recipe'}: {error['msg'][:1].lower()}{error['msg'][1:]}, got {show_value(value)}"


def validate_config(kind: Any, value: Any, prefix: str = "") -> Any:
    """``value`` validated as ``kind`` (a model or an annotated type); its first error as a RecipeError."""
    adapter = TypeAdapter(kind) if is_model(kind) else TypeAdapter(kind, config=_STRICT)
    try:
        return adapter.validate_python(value)
    except ValidationError as error:
        raise RecipeError(_explain(kind, error.errors()[0], prefix)) from None
