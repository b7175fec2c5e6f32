"""The one kind of error a user fixes by editing a recipe, a file or a command line: :class:`ConfigError`.

The command line prints a ``ConfigError`` as its one-line message and exits 2; every other exception keeps
its traceback, because it is a bug or a failure the message alone cannot explain.
"""

from __future__ import annotations

__all__ = ["ConfigError", "DataError", "RecipeError", "ServerConfigError"]


class ConfigError(ValueError):
    """A configuration that cannot be used. The message is one line: what is wrong, where, and the fix."""

    def __init__(self, message: str) -> None:
        # YAML and server errors can span lines; a CLI prints this as the whole diagnosis.
        super().__init__(" ".join(line.strip() for line in message.splitlines() if line.strip()))


class RecipeError(ConfigError):
    """A recipe that cannot be used; the message starts with the field's dotted path."""


class ServerConfigError(ConfigError):
    """An ``mcpServers`` entry that cannot be used; the message names the server, the field and the fix."""


class DataError(ConfigError):
    """A dataset named in a recipe that cannot be found or read as questions and answers."""
