"""Schema → arguments for ``mcp-rl init``'s example calls: values taken from a parameter's examples,
defaults, enums, constants or a described ``e.g. '...'``, and for a tool that declares ``readOnlyHint`` the
folder its server was started on. Nothing is invented: a call can have side effects.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from mcp_rl.tools import ToolSpec

__all__ = [
    "example_arguments",
    "example_value",
    "missing_parameters",
    "read_only_arguments",
    "schema_types",
    "server_folders",
]

_MISSING = object()
# "e.g. '(3 + 4) * 2'", "for example: \"Paris\"", "such as `x`": the first quoted example in a description.
_DESCRIBED_EXAMPLE = re.compile(
    r"(?:e\.g\.|for example|for instance|such as|example:)\s*:?\s*(['\"`])(.+?)\1", re.IGNORECASE
)
_TEXT_TYPES = ("string",)
# Words that mark a string parameter as a path, which a read-only tool may be given the server's folder for.
_PATH_WORDS = ("path", "dir", "folder")


def schema_types(schema: Mapping[str, Any]) -> list[str]:
    """A parameter schema's JSON types as a list (``type`` may be one name or several)."""
    kind = schema.get("type")
    return [kind] if isinstance(kind, str) else [k for k in kind or [] if isinstance(k, str)]


def _from_description(schema: Mapping[str, Any]) -> Any:
    match = _DESCRIBED_EXAMPLE.search(str(schema.get("description") or ""))
    if match is None:
        return _MISSING
    text, kinds = match.group(2).strip(), schema_types(schema)
    if not kinds or any(kind in _TEXT_TYPES for kind in kinds):
        return text
    try:
        value = json.loads(text)  # 3, 2.5, true, [1, 2], {"a": 1}
    except json.JSONDecodeError:
        return _MISSING
    return value


def example_value(schema: Mapping[str, Any]) -> Any:
    """A value for one parameter from its schema, or ``_MISSING``: the first of ``examples``, ``example``,
    ``default``, ``const``, ``enum``, an object's derivable properties, a described ``e.g. '...'``."""
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    for key in ("example", "default", "const"):
        if key in schema:
            return schema[key]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for variant in schema.get("anyOf") or schema.get("oneOf") or []:
        if isinstance(variant, Mapping) and schema_types(variant) != ["null"]:
            value = example_value({**variant, "description": schema.get("description")})
            if value is not _MISSING:
                return value
    if "object" in schema_types(schema) and isinstance(schema.get("properties"), Mapping):
        nested = example_arguments(schema)
        return _MISSING if nested is None else nested
    return _from_description(schema)


def example_arguments(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """Arguments for a tool from its input schema: every required parameter (and any optional one with an
    example) filled in; ``None`` when a required parameter has nothing to take a value from."""
    properties = schema.get("properties") or {}
    required = [name for name in schema.get("required") or [] if isinstance(name, str)]
    arguments: dict[str, Any] = {}
    for name, parameter in properties.items():
        value = example_value(parameter) if isinstance(parameter, Mapping) else _MISSING
        if value is _MISSING:
            if name in required:
                return None
            continue
        if name in required or "example" in parameter or "examples" in parameter:
            arguments[name] = value
    if any(name not in arguments for name in required):  # required but not described in properties
        return None
    return arguments


def missing_parameters(schema: Mapping[str, Any]) -> list[str]:
    """The required parameters no value can be derived for."""
    properties = schema.get("properties") or {}
    return [
        name
        for name in schema.get("required") or []
        if not isinstance(properties.get(name), Mapping) or example_value(properties[name]) is _MISSING
    ]


def server_folders(entry: Mapping[str, Any]) -> list[str]:
    """The arguments of a server's command that are folders here (a filesystem server's sandbox, say)."""
    args = entry.get("args") if isinstance(entry, Mapping) else None
    return [str(a) for a in args or [] if isinstance(a, str) and "${" not in a and Path(a).is_dir()]


def read_only_arguments(tool: ToolSpec, folders: Sequence[str]) -> dict[str, Any] | None:
    """Arguments for a tool that declares ``readOnlyHint``: its example arguments, with a required path-like
    string that has none given the first of the server's ``folders`` (calling it changes nothing)."""
    if not tool.read_only or not folders:
        return None
    properties = tool.input_schema.get("properties") or {}
    arguments: dict[str, Any] = {}
    for name in tool.input_schema.get("required") or []:
        parameter = properties.get(name)
        if not isinstance(parameter, Mapping):
            return None
        value = example_value(parameter)
        if value is _MISSING:
            path_like = any(word in name.lower() for word in _PATH_WORDS)
            if schema_types(parameter) != ["string"] or not path_like:
                return None
            value = folders[0]
        arguments[name] = value
    return arguments
