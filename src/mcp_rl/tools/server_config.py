"""The ``mcpServers`` configuration: which MCP servers a tool pool connects to, and how.

Accepts the JSON shape MCP desktop clients use, pasted unchanged::

    {"mcpServers": {
        "search": {"command": "python", "args": ["-m", "tool_servers.search", "--corpus", "c.jsonl"]},
        "remote": {"url": "https://tools.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}
    }}

plus a few optional per-server keys of our own (``timeout``, ``maxConcurrency``, ``retries``,
``retryLostCalls``, ``errorPattern``; ``scope``, ``setup`` and ``warm`` for a fresh instance per
episode), Gemini CLI's ``includeTools``/``excludeTools`` to expose only some tools, and in-process
``MCPServer`` objects given from Python. ``${VAR}`` in ``args``, ``env``, ``cwd``,
``url`` and ``headers`` is expanded from the environment, so secrets stay out of recipe files.
``uvx``/``uv``/``npx`` commands run as the server's README says (see ``server_env``).

An entry is validated by ``ServerConfig``, a pydantic dataclass whose fields carry the help text and whose
aliases are the entry's keys; ``parse_server`` then resolves it (environment variables, the command on
PATH, pip's index settings), which is runtime work: recipes leave it to the moment servers are checked or
started.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, Required

from pydantic import BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError
from pydantic.dataclasses import dataclass
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict

from mcp_rl.errors import ServerConfigError
from mcp_rl.tools.server_env import find_executable, prepare_command

__all__ = [
    "ENTRY_KEYS",
    "EPISODE_SCOPES",
    "ServerConfig",
    "ServerConfigError",
    "SetupStep",
    "entry_schema",
    "expand_env",
    "in_process",
    "load_mcp_servers_file",
    "parse_mcp_servers",
    "parse_server",
    "redact",
    "redacted_servers",
    "resolve_command",
    "server_secrets",
]

# A URL's password ("scheme://user:password@host") is hidden even when it was written out literally.
_URL_PASSWORD = re.compile(r"(\b[a-z][a-z0-9+.-]*://[^\s/:@]*:)[^\s/@]*@", re.IGNORECASE)
# So is a query parameter named like a credential (?api_key=..., &token=..., &X-Amz-Signature=...).
_QUERY_SECRET = re.compile(
    r"([?&][^=&#\s]*(?:token|key|secret|passw|pwd|auth|signature|sig|credential|session)[^=&#\s]*=)[^&#\s]+",
    re.IGNORECASE,
)
# Shorter expansions (a port, a flag) are not worth garbling every message that happens to contain them.
_MIN_SECRET_CHARS = 4
_ENV_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
# Keys desktop clients write that say nothing about how to connect; accepted so configs paste unchanged.
_IGNORED_KEYS = {"type", "transport", "disabled", "alwaysAllow", "autoApprove", "description", "timeout_ms"}
# Set from Python only (``in_process``, the parser): never a key of an ``mcpServers`` entry.
_PYTHON_ONLY = ("name", "server", "secrets")
EPISODE_SCOPES = ("shared", "episode")

# Written values may be numbers (a port in args, an env value): they are passed on as text, as written.
_Text = Annotated[str, BeforeValidator(str)]
_ToolName = Annotated[str, Field(strict=True, min_length=1)]


def _compiled(pattern: Any) -> Any:
    """``errorPattern`` compiled, or a one-line reason it cannot be (the field's path is put before it)."""
    if pattern is None or isinstance(pattern, re.Pattern):
        return pattern
    if not isinstance(pattern, str) or not pattern:
        raise ValueError("must be a non-empty regular expression string")
    try:
        return re.compile(pattern)
    except re.error as error:
        raise ValueError(f"is not a valid regular expression ({error}); e.g. '^Error: '") from None


class SetupStep(TypedDict, total=False):
    """One per-episode set-up step: copy ``copy`` (a file or folder) to ``to`` under ``${episode.dir}``."""

    __pydantic_config__ = ConfigDict(extra="forbid")  # type: ignore[misc]
    copy: Required[str]
    to: _Text


@dataclass(config=ConfigDict(validate_by_name=True, validate_by_alias=True, extra="forbid"))
class ServerConfig:
    """How to reach one MCP server and how hard to lean on it.

    Validated from an ``mcpServers`` entry by its keys as MCP clients write them (``timeout``,
    ``maxConcurrency``, ...: each field's alias), or built from Python by the field names."""

    name: str = Field(description="Name of the server; prefixes its tools when names collide.")
    command: Annotated[str, Field(strict=True, min_length=1)] | None = Field(
        default=None, description="Executable to spawn for a stdio server."
    )
    args: list[_Text] = Field(default_factory=list, description="Arguments for `command`.")
    env: dict[_Text, _Text] = Field(default_factory=dict, description="Extra environment for `command`.")
    cwd: _Text | None = Field(default=None, description="Working directory for `command`.")
    url: _Text | None = Field(default=None, description="Streamable-HTTP endpoint, e.g. .../mcp.")
    headers: dict[_Text, _Text] = Field(default_factory=dict, description="HTTP headers (e.g. auth).")
    server: Any = Field(default=None, description="An in-process `MCPServer` object (Python only).")
    timeout_s: float = Field(
        default=30.0,
        gt=0,
        validation_alias="timeout",
        description="Default timeout of one tool call, seconds.",
    )
    connect_timeout_s: float = Field(
        default=60.0, gt=0, validation_alias="connectTimeout", description="Timeout to start and handshake."
    )
    max_concurrency: int = Field(
        default=256,
        gt=0,
        validation_alias="maxConcurrency",
        description="Most calls in flight to this server.",
    )
    retries: int = Field(
        default=2, description="Retries of a call that could not be sent because the server was down."
    )
    retry_lost_calls: bool = Field(
        default=False,
        strict=True,
        validation_alias="retryLostCalls",
        description="Retry calls lost in flight to any of this server's tools (only safe for idempotent "
        "tools such as search); tools the server declares idempotent or read-only are retried anyway.",
    )
    error_pattern: Annotated[re.Pattern[str] | None, BeforeValidator(_compiled)] = Field(
        default=None,
        validation_alias="errorPattern",
        description="Regex (errorPattern): a result whose text matches it counts as a tool failure, for "
        "servers that report errors as plain text (e.g. '^Error: ') instead of isError.",
    )
    scope: Literal["shared", "episode"] = Field(
        default="shared",
        description="shared: one instance for the whole run; episode: a fresh instance per episode, started "
        "with ${episode.dir} (its own temporary folder) and ${episode.id} substituted, kept through the "
        "episode's rewards, then stopped and its folder removed.",
    )
    setup: list[SetupStep] = Field(
        default_factory=list,
        description="Per-episode set-up before the instance starts: [{copy: SRC, to: DEST}], DEST under "
        "${episode.dir} (default: ${episode.dir}/<name of SRC>); SRC a file or a folder. {column} in "
        "SRC or DEST is that column of the episode's dataset row (e.g. copy: seeds/{task_id}), so each "
        "task starts from its own seed; such instances start when their episode opens (no warm "
        "spares), and the first one, started only to list the tools, skips those steps.",
    )
    warm: int = Field(
        default=2,
        strict=True,
        ge=0,
        description="Per-episode instances started ahead, so episodes do not wait for one.",
    )
    include_tools: list[_ToolName] | None = Field(
        default=None,
        validation_alias="includeTools",
        description="includeTools: only these of the server's tools reach the prompt and can be called (a "
        "call to another comes back as an unknown-tool observation). The name and meaning are Gemini "
        "CLI's, the one MCP client whose mcpServers entries have an allow-list, so its configs paste "
        "unchanged; Claude Desktop and Cursor entries have none.",
    )
    exclude_tools: list[_ToolName] = Field(
        default_factory=list,
        validation_alias="excludeTools",
        description="excludeTools: these tools are withheld (Gemini CLI's name too); wins over includeTools.",
    )

    @property
    def transport(self) -> str:
        if self.server is not None:
            return "in-process"
        return "http" if self.url else "stdio"

    # Every value a `${VAR}` expanded to, wherever it landed (url, args, headers, env): `redact` hides them.
    secrets: tuple[str, ...] = Field(default=(), repr=False, description="(internal)")

    def __repr__(self) -> str:
        # Headers and env often carry secrets: show their names, never their values.
        target = self.url or self.command or type(self.server).__name__
        return (
            f"ServerConfig(name={self.name!r}, transport={self.transport!r}, target={self.redact(target)!r}, "
            f"headers={sorted(self.headers)}, env={sorted(self.env)})"
        )

    def describe(self) -> str:
        """Where the server is, for messages and logs: its URL or its command line, secrets hidden."""
        if self.server is not None:
            return "in-process server"
        return self.redact(self.url or " ".join([self.command or "", *self.args]).strip())

    def redact(self, text: str) -> str:
        """``text`` with every `${VAR}` expansion and any URL password replaced by ``***``."""
        return redact(text, self.secrets)


# The keys an mcpServers entry may hold, in the order a message lists them: each field by its alias.
ENTRY_KEYS = tuple(
    field.validation_alias if isinstance(field.validation_alias, str) else name
    for name, field in ServerConfig.__pydantic_fields__.items()
    if name not in _PYTHON_ONLY
)
_ENTRY = TypeAdapter(ServerConfig)


def entry_schema() -> dict[str, Any]:
    """The JSON schema of one ``mcpServers`` entry, made from ``ServerConfig``'s fields: the keys as an
    MCP client writes them, each with its help text (for editors, docs and ``mcp-rl init``)."""
    schema = _ENTRY.json_schema(by_alias=True)
    schema["properties"] = {key: schema["properties"][key] for key in ENTRY_KEYS}
    schema["required"] = []  # `name` is the entry's key in mcpServers, not a field of it
    schema["title"] = "mcpServers entry"
    return schema


# What a bad value should have been, in the words a config author reads (pydantic's say "float_parsing").
_EXPECTED = {
    "command": "a non-empty string",
    "args": "a list of strings",
    "env": "an object of strings",
    "headers": "an object of strings",
    "timeout": "a float",
    "connectTimeout": "a float",
    "maxConcurrency": "an int",
    "retries": "an int",
    "retryLostCalls": "true or false",
    "scope": f"one of {', '.join(EPISODE_SCOPES)}",
    "setup": "a list of {copy: SRC, to: DEST} steps",
    "warm": "a whole number of spare instances (0 or more)",
    "includeTools": "a list of tool names, e.g. [read_file]",
    "excludeTools": "a list of tool names, e.g. [read_file]",
}
_SHOWN_BY_TYPE = ("env", "headers")  # their values are often secrets: a message names the type only


def _reworded(error: ErrorDetails, where: str) -> str:
    """pydantic's first error on an entry as one line: ``mcpServers.NAME.key must be ..., got ...``."""
    key = str(error["loc"][0]) if error["loc"] else ""
    at, value = f"{where}.{key}", error["input"]
    if error["type"] == "value_error":  # our own validators' reasons
        return f"{at} {error['ctx']['error']}"
    if key == "setup" and error["type"] == "extra_forbidden":
        return f"{at}: unknown key(s) {[error['loc'][-1]]}; a step is {{copy, to}}"
    if error["type"] == "greater_than":
        return f"{at} must be positive, got {value!r}"
    got = type(value).__name__ if key in _SHOWN_BY_TYPE else repr(value)
    return f"{at} must be {_EXPECTED.get(key, 'valid')}, got {got}"


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with each of ``secrets`` (longest first), any URL password and any credential-named query
    value replaced by ``***``."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "***")
    if "://" not in text:  # the common case (a server's log line) skips both patterns
        return text
    return _QUERY_SECRET.sub(r"\1***", _URL_PASSWORD.sub(r"\1***@", text))


def server_secrets(servers: Mapping[str, Any]) -> list[str]:
    """Every value an ``mcpServers`` block could leak, without starting anything or failing on unset
    variables: its ``env`` and ``headers`` values as written, and what each ``${VAR}`` it names holds in
    this environment (e.g. for pages and reports made from a run's saved recipe)."""
    found: list[str] = []
    for entry in servers.values():
        if not isinstance(entry, Mapping):
            continue
        for key in ("env", "headers"):
            values = entry.get(key)
            if isinstance(values, Mapping):
                found += [str(v) for v in values.values()]
    for name in _ENV_VAR.findall(json.dumps(servers, default=str)):
        found.append(os.environ.get(name[0], ""))
    return sorted({s for s in found if len(s) >= _MIN_SECRET_CHARS})


def redacted_servers(servers: Mapping[str, Any]) -> dict[str, Any]:
    """An ``mcpServers`` block fit to show: ``env`` and ``headers`` values are ``***`` (their names stay),
    URL passwords are hidden."""
    shown: dict[str, Any] = {}
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            shown[name] = entry
            continue
        entry = dict(entry)
        for key in ("env", "headers"):
            if isinstance(entry.get(key), Mapping):
                entry[key] = dict.fromkeys(entry[key], "***")
        if isinstance(entry.get("url"), str):
            entry["url"] = redact(entry["url"], ())
        shown[name] = entry
    return shown


def expand_env(value: str, where: str, secrets: list[str] | None = None) -> str:
    """Replace ``${VAR}`` (or ``${VAR:-default}``) with the environment's value; fail clearly if unset.
    Each value put in is appended to ``secrets``, if given, to be redacted wherever it shows."""

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = os.environ.get(name, default)
        if found is not None:
            if secrets is not None and len(found) >= _MIN_SECRET_CHARS:
                secrets.append(found)
            return found
        raise ServerConfigError(
            f"{where}: environment variable {name} is not set; export it or remove ${{{name}}}"
        )

    return _ENV_VAR.sub(substitute, value)


def resolve_command(command: str) -> str:
    """Find ``command`` the way a user expects inside a virtualenv that is not activated.

    ``python``/``python3`` mean the interpreter running mcp-rl, so servers see the same packages;
    other bare names are looked up beside that interpreter first (console scripts of installed
    packages such as ``mcp-server-time``), then on PATH.
    """
    if command in ("python", "python3"):
        return sys.executable
    if os.sep in command:
        return command
    return find_executable(command) or command


def parse_server(name: str, entry: Any) -> ServerConfig:
    """One ``mcpServers`` entry → ``ServerConfig``, with one clear error per bad field; then resolved:
    ``${VAR}`` expanded from the environment and the command found (``server_env``)."""
    where = f"mcpServers.{name}"
    if not isinstance(entry, Mapping):
        raise ServerConfigError(
            f"{where} must be an object with 'command' or 'url', got {type(entry).__name__}"
        )
    unknown = set(entry) - set(ENTRY_KEYS) - _IGNORED_KEYS
    if unknown:
        raise ServerConfigError(
            f"{where}: unknown field(s) {sorted(unknown)}; known fields: {', '.join(ENTRY_KEYS)}"
        )
    if "command" not in entry and "url" not in entry:
        raise ServerConfigError(
            f"{where}: give 'command' (stdio), 'url' (streamable HTTP), or both (an HTTP server the pool "
            "starts, then reaches at url)"
        )
    written = {key: value for key, value in entry.items() if key not in _IGNORED_KEYS}
    try:
        config = _ENTRY.validate_python({**written, "name": name})
    except ValidationError as error:
        raise ServerConfigError(_reworded(error.errors()[0], where)) from None
    if (config.setup or "warm" in entry) and config.scope != "episode":
        raise ServerConfigError(f"{where}: setup and warm apply to per-episode servers; add scope: episode")
    return _resolved(config, where)


def _resolved(config: ServerConfig, where: str) -> ServerConfig:
    """``config`` with its ``${VAR}`` references expanded (each value put in kept as a secret to redact)
    and its command prepared to run as its README says."""
    secrets: list[str] = []

    def expanded(value: str, field: str) -> str:
        return expand_env(value, f"{where}.{field}", secrets)

    command, args, env, cwd = None, [], {}, None  # args, env and cwd belong to a command
    if config.command is not None:
        command, args, env = prepare_command(
            where,
            expanded(config.command, "command"),
            [expanded(arg, "args") for arg in config.args],
            {key: expanded(value, f"env.{key}") for key, value in config.env.items()},
        )
        cwd = expanded(config.cwd, "cwd") if config.cwd is not None else None
    url, headers = None, {}
    if config.url is not None:
        url = expanded(config.url, "url")
        if not url.startswith(("http://", "https://")):
            shown = redact(url, secrets)
            raise ServerConfigError(f"{where}.url must start with http:// or https://, got {shown!r}")
        headers = {key: expanded(value, f"headers.{key}") for key, value in config.headers.items()}
    setup = [
        {key: expand_env(value, f"{where}.setup") for key, value in step.items()} for step in config.setup
    ]
    return dataclasses.replace(
        config,
        command=command,
        args=args,
        env=env,
        cwd=cwd,
        url=url,
        headers=headers,
        setup=setup,
        secrets=tuple(secrets),
    )


def parse_mcp_servers(config: Mapping[str, Any]) -> list[ServerConfig]:
    """``{"mcpServers": {...}}`` (or just the inner mapping) → server configs, disabled ones skipped."""
    servers = config.get("mcpServers", config) if isinstance(config, Mapping) else config
    if not isinstance(servers, Mapping) or not servers:
        raise ServerConfigError(
            "mcpServers must be a non-empty object mapping server names to their settings"
        )
    return [
        parse_server(str(name), entry)
        for name, entry in servers.items()
        if not (isinstance(entry, Mapping) and entry.get("disabled") is True)
    ]


def load_mcp_servers_file(path: str | Path) -> list[ServerConfig]:
    """Read an ``mcpServers`` JSON file as written for MCP desktop clients."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ServerConfigError(f"{path}: no such file") from None
    except json.JSONDecodeError as error:
        raise ServerConfigError(f"{path}: not valid JSON ({error})") from None
    return parse_mcp_servers(data)


def in_process(name: str, server: Any, **settings: Any) -> ServerConfig:
    """A config for an ``MCPServer`` object served inside this process (no subprocess, no JSON-RPC)."""
    return ServerConfig(name=name, server=server, **settings)
