"""Checks of a call's arguments before they are sent: that they can go over the wire at all, and that they
fit the tool's JSON schema, so the model gets a precise message instead of a server's error or a dropped
connection.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

__all__ = ["argument_problem", "argument_validator", "unsendable"]


def argument_validator(schema: dict[str, Any]) -> Any:
    """A JSON-schema validator built once per tool (checking the schema itself on every call is the
    dominant cost of a call); ``None`` when the server's schema is unusable, so the server judges instead."""
    try:
        cls = jsonschema.validators.validator_for(schema)
        cls.check_schema(schema)
        return cls(schema)
    except Exception:
        return None


def argument_problem(validator: Any, arguments: dict[str, Any]) -> str | None:
    """What is wrong with ``arguments`` by the tool's schema (``validator`` from ``argument_validator``),
    in one line naming where; ``None`` when they fit or the schema cannot tell."""
    if validator is None:
        return None
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except Exception:  # e.g. a dangling $ref: leave the arguments to the server
        return None
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{error.message}" + (f" (at {where})" if where else "")


def unsendable(arguments: dict[str, Any]) -> str | None:
    """Why ``arguments`` cannot go over the wire at all, if they cannot.

    A transport that fails to encode one request drops the whole connection (every call in flight on it
    fails and the server restarts), so such a call must fail alone, here: a lone surrogate decoded from a
    model's ``"\\ud800"`` is not UTF-8, and nesting past the encoder's recursion limit cannot be dumped.
    """
    try:
        json.dumps(arguments, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return "the arguments hold a lone surrogate (e.g. \\ud800), which is not valid Unicode"
    except RecursionError:
        return "the arguments are nested too deeply to send"
    except (TypeError, ValueError) as error:
        return f"the arguments are not JSON: {error}"
    return None
