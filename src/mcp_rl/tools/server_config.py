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
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_rl.errors import ServerConfigError
from mcp_rl.tools.server_env import find_executable, prepare_command

__all__ = [
    "ServerConfig",
    "ServerConfigError",
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
_OUR_KEYS = {
    "timeout": ("timeout_s", float),
    "connectTimeout": ("connect_timeout_s", float),
    "maxConcurrency": ("max_concurrency", int),
    "retries": ("retries", int),
    "retryLostCalls": ("retry_lost_calls", bool),
}
_EPISODE_KEYS = ("scope", "setup", "warm")
_TOOL_LIST_KEYS = {"includeTools": "include_tools", "excludeTools": "exclude_tools"}


@dataclass
class ServerConfig:
    """How to reach one MCP server and how hard to lean on it."""

    name: str = field(metadata={"help": "Name of the server; prefixes its tools when names collide."})
    command: str | None = field(default=None, metadata={"help": "Executable to spawn for a stdio server."})
    args: list[str] = field(default_factory=list, metadata={"help": "Arguments for `command`."})
    env: dict[str, str] = field(default_factory=dict, metadata={"help": "Extra environment for `command`."})
    cwd: str | None = field(default=None, metadata={"help": "Working directory for `command`."})
    url: str | None = field(default=None, metadata={"help": "Streamable-HTTP endpoint, e.g. .../mcp."})
    headers: dict[str, str] = field(default_factory=dict, metadata={"help": "HTTP headers (e.g. auth)."})
    server: Any = field(default=None, metadata={"help": "An in-process `MCPServer` object (Python only)."})
    timeout_s: float = field(default=30.0, metadata={"help": "Default timeout of one tool call, seconds."})
    connect_timeout_s: float = field(default=60.0, metadata={"help": "Timeout to start and handshake."})
    max_concurrency: int = field(default=256, metadata={"help": "Most calls in flight to this server."})
    retries: int = field(
        default=2, metadata={"help": "Retries of a call that could not be sent because the server was down."}
    )
    retry_lost_calls: bool = field(
        default=False,
        metadata={
            "help": "Retry calls lost in flight to any of this server's tools (only safe for idempotent "
            "tools such as search); tools the server declares idempotent or read-only are retried anyway."
        },
    )
    error_pattern: re.Pattern[str] | None = field(
        default=None,
        metadata={
            "help": "Regex (errorPattern): a result whose text matches it counts as a tool failure, for "
            "servers that report errors as plain text (e.g. '^Error: ') instead of isError."
        },
    )
    scope: str = field(
        default="shared",
        metadata={
            "help": "shared: one instance for the whole run; episode: a fresh instance per episode, started "
            "with ${episode.dir} (its own temporary folder) and ${episode.id} substituted, kept through the "
            "episode's rewards, then stopped and its folder removed."
        },
    )
    setup: list[dict[str, str]] = field(
        default_factory=list,
        metadata={
            "help": "Per-episode set-up before the instance starts: [{copy: SRC, to: DEST}], DEST under "
            "${episode.dir} (default: ${episode.dir}/<name of SRC>); SRC a file or a folder. {column} in "
            "SRC or DEST is that column of the episode's dataset row (e.g. copy: seeds/{task_id}), so each "
            "task starts from its own seed; such instances start when their episode opens (no warm "
            "spares), and the first one, started only to list the tools, skips those steps."
        },
    )
    warm: int = field(
        default=2, metadata={"help": "Per-episode instances started ahead, so episodes do not wait for one."}
    )
    include_tools: list[str] | None = field(
        default=None,
        metadata={
            "help": "includeTools: only these of the server's tools reach the prompt and can be called (a "
            "call to another comes back as an unknown-tool observation). The name and meaning are Gemini "
            "CLI's, the one MCP client whose mcpServers entries have an allow-list, so its configs paste "
            "unchanged; Claude Desktop and Cursor entries have none."
        },
    )
    exclude_tools: list[str] = field(
        default_factory=list,
        metadata={
            "help": "excludeTools: these tools are withheld (Gemini CLI's name too); wins over includeTools."
        },
    )

    @property
    def transport(self) -> str:
        if self.server is not None:
            return "in-process"
        return "http" if self.url else "stdio"

    # Every value a `${VAR}` expanded to, wherever it landed (url, args, headers, env): `redact` hides them.
    secrets: tuple[str, ...] = field(default=(), repr=False, metadata={"help": "(internal)"})

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


def _string_map(value: Any, where: str, secrets: list[str]) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ServerConfigError(f"{where} must be an object of strings, got {type(value).__name__}")
    return {str(k): expand_env(str(v), f"{where}.{k}", secrets) for k, v in value.items()}


EPISODE_SCOPES = ("shared", "episode")


def _parse_episode_keys(config: ServerConfig, entry: Mapping[str, Any], where: str) -> None:
    """``scope``, ``setup`` and ``warm``: whether the server is started once or once per episode, and how."""
    scope = entry.get("scope", "shared")
    if scope not in EPISODE_SCOPES:
        raise ServerConfigError(f"{where}.scope must be one of {', '.join(EPISODE_SCOPES)}, got {scope!r}")
    config.scope = scope
    setup = entry.get("setup", [])
    steps = setup if isinstance(setup, list) else None
    if steps is None or not all(isinstance(s, Mapping) and isinstance(s.get("copy"), str) for s in steps):
        raise ServerConfigError(f"{where}.setup must be a list of {{copy: SRC, to: DEST}} steps")
    for step in steps:
        extra = set(step) - {"copy", "to"}
        if extra:
            raise ServerConfigError(f"{where}.setup: unknown key(s) {sorted(extra)}; a step is {{copy, to}}")
    config.setup = [
        {key: expand_env(str(value), f"{where}.setup") for key, value in step.items()} for step in steps
    ]
    warm = entry.get("warm", config.warm)
    if not isinstance(warm, int) or isinstance(warm, bool) or warm < 0:
        raise ServerConfigError(f"{where}.warm must be a whole number of spare instances (0 or more)")
    config.warm = warm
    if (config.setup or "warm" in entry) and scope != "episode":
        raise ServerConfigError(f"{where}: setup and warm apply to per-episode servers; add scope: episode")
    if scope == "episode" and config.server is not None:
        raise ServerConfigError(f"{where}: an in-process server object cannot be started once per episode")


def parse_server(name: str, entry: Any) -> ServerConfig:
    """One ``mcpServers`` entry → ``ServerConfig``, with one clear error per bad field."""
    where = f"mcpServers.{name}"
    if not isinstance(entry, Mapping):
        raise ServerConfigError(
            f"{where} must be an object with 'command' or 'url', got {type(entry).__name__}"
        )
    standard = ("command", "args", "env", "cwd", "url", "headers", "errorPattern")
    ours = [*_OUR_KEYS, *_EPISODE_KEYS, *_TOOL_LIST_KEYS]
    unknown = set(entry) - set(standard) - set(ours) - _IGNORED_KEYS
    if unknown:
        known = ", ".join([*standard, *ours])
        raise ServerConfigError(f"{where}: unknown field(s) {sorted(unknown)}; known fields: {known}")
    has_command, has_url = "command" in entry, "url" in entry
    if not (has_command or has_url):
        raise ServerConfigError(
            f"{where}: give 'command' (stdio), 'url' (streamable HTTP), or both (an HTTP server the pool "
            "starts, then reaches at url)"
        )
    config = ServerConfig(name=name)
    secrets: list[str] = []
    if has_command:
        if not isinstance(entry["command"], str) or not entry["command"]:
            raise ServerConfigError(f"{where}.command must be a non-empty string")
        command = expand_env(entry["command"], f"{where}.command", secrets)
        args = entry.get("args", [])
        if not isinstance(args, list):
            raise ServerConfigError(f"{where}.args must be a list of strings")
        args = [expand_env(str(a), f"{where}.args", secrets) for a in args]
        env = _string_map(entry.get("env", {}), f"{where}.env", secrets)
        config.command, config.args, config.env = prepare_command(where, command, args, env)
        if entry.get("cwd") is not None:
            config.cwd = expand_env(str(entry["cwd"]), f"{where}.cwd", secrets)
    if has_url:
        url = expand_env(str(entry["url"]), f"{where}.url", secrets)
        if not url.startswith(("http://", "https://")):
            shown = ServerConfig(name=name, secrets=tuple(secrets)).redact(url)
            raise ServerConfigError(f"{where}.url must start with http:// or https://, got {shown!r}")
        config.url = url
        config.headers = _string_map(entry.get("headers", {}), f"{where}.headers", secrets)
    config.secrets = tuple(secrets)
    for key, (attr, kind) in _OUR_KEYS.items():
        if key in entry:
            value = entry[key]
            if kind is bool and not isinstance(value, bool):
                raise ServerConfigError(f"{where}.{key} must be true or false")
            try:
                value = kind(value)
            except (TypeError, ValueError):
                raise ServerConfigError(f"{where}.{key} must be a {kind.__name__}, got {value!r}") from None
            if kind is not bool and value <= 0 and key != "retries":
                raise ServerConfigError(f"{where}.{key} must be positive, got {value}")
            setattr(config, attr, value)
    if "errorPattern" in entry:
        pattern = entry["errorPattern"]
        if not isinstance(pattern, str) or not pattern:
            raise ServerConfigError(f"{where}.errorPattern must be a non-empty regular expression string")
        try:
            config.error_pattern = re.compile(pattern)
        except re.error as error:
            raise ServerConfigError(
                f"{where}.errorPattern is not a valid regular expression ({error}); e.g. '^Error: '"
            ) from None
    for key, attr in _TOOL_LIST_KEYS.items():
        if key in entry:
            names = entry[key]
            if not isinstance(names, list) or not all(isinstance(n, str) and n for n in names):
                raise ServerConfigError(f"{where}.{key} must be a list of tool names, e.g. [read_file]")
            setattr(config, attr, list(names))
    _parse_episode_keys(config, entry, where)
    return config


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
