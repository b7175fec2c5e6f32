"""How a stdio server's command is run, so configs pasted from a server's README work unchanged.

* ``uvx``/``uv`` are found beside our interpreter (the ``uv`` dependency installs them there) even when
  that ``bin`` is not on PATH, and are pointed at the package index pip is configured with (pip.conf and
  ``PIP_*``), unless the user configured uv itself. uv's own cache is left alone: the second start of a
  server reuses the environment the first one built.
* ``npx`` needs Node.js; without it the config fails with one line naming the fix.
* Python servers written for mcp 1.x often require an unbounded ``mcp>=1.x``, so uv resolves mcp 2 and
  they crash on import. ``uvx`` runs through a small launcher (``python -m mcp_rl.uvx_launcher``) that
  finds that out and remembers it per package; a server already known to need ``mcp<2`` is started with
  ``--with 'mcp<2'`` directly, without the launcher.
"""

from __future__ import annotations

import configparser
import functools
import os
import shutil
import sys
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlparse

from mcp_rl.errors import ServerConfigError
from mcp_rl.uvx_launcher import needs_mcp1, with_mcp1

__all__ = [
    "LAUNCHER_MODULE",
    "find_executable",
    "pip_settings",
    "prepare_command",
    "uv_index_env",
]

LAUNCHER_MODULE = "mcp_rl.uvx_launcher"
# uv reads these itself; when any is set (by the user or the server's env) we translate nothing.
_UV_INDEX_VARS = (
    "UV_DEFAULT_INDEX",
    "UV_INDEX_URL",
    "UV_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
    "UV_CONFIG_FILE",
)
_PIP_KEYS = ("index-url", "extra-index-url", "find-links", "cert", "trusted-host", "no-index")


def find_executable(command: str) -> str | None:
    """``command`` beside our interpreter, then (for uv's binaries) where the ``uv`` package put them,
    then on PATH."""
    beside = Path(sys.executable).parent / command
    if beside.exists():
        return str(beside)
    if command in ("uv", "uvx"):
        try:
            from uv import find_uv_bin  # the PyPI package's own lookup (user and system installs)

            candidate = Path(find_uv_bin()).parent / command
            if candidate.exists():
                return str(candidate)
        except (ImportError, FileNotFoundError):
            pass
    return shutil.which(command)


def _pip_config_files() -> list[Path]:
    """pip's configuration files, lowest precedence first (global, user, site, then PIP_CONFIG_FILE)."""
    config_file = os.environ.get("PIP_CONFIG_FILE")
    if config_file == os.devnull:  # pip's documented way to load no files at all
        return []
    home = Path.home()
    xdg_dirs = os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep)
    files = [Path(d) / "pip" / "pip.conf" for d in xdg_dirs if d] + [Path("/etc/pip.conf")]
    if sys.platform == "darwin":
        files += [Path("/Library/Application Support/pip/pip.conf")]
    elif sys.platform == "win32":
        files += [Path(os.environ.get("PROGRAMDATA", "C:\\ProgramData")) / "pip" / "pip.ini"]
    xdg_home = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    files += [home / ".pip" / "pip.conf", xdg_home / "pip" / "pip.conf"]
    if sys.platform == "darwin":
        files += [home / "Library" / "Application Support" / "pip" / "pip.conf"]
    elif sys.platform == "win32":
        files += [Path(os.environ.get("APPDATA", home)) / "pip" / "pip.ini"]
    files += [Path(sys.prefix) / ("pip.ini" if sys.platform == "win32" else "pip.conf")]
    if config_file:
        files.append(Path(config_file))
    return files


@functools.lru_cache(maxsize=1)
def pip_settings() -> dict[str, str]:
    """The index settings ``pip install`` would use: ``[global]`` then ``[install]`` of each config file,
    then ``PIP_*`` variables, later ones winning (pip's order). Read once per process."""
    settings: dict[str, str] = {}
    for path in _pip_config_files():
        parser = configparser.RawConfigParser()
        try:
            parser.read(path, encoding="utf-8")
        except (OSError, configparser.Error):
            continue  # pip would complain about a broken file; a server start should not
        for section in ("global", "install"):
            if parser.has_section(section):
                for key in _PIP_KEYS:
                    if parser.has_option(section, key):
                        settings[key] = parser.get(section, key)
    for key in _PIP_KEYS:
        value = os.environ.get("PIP_" + key.upper().replace("-", "_"))
        if value is not None:
            settings[key] = value
    return settings


def _exists_if_local(location: str) -> bool:
    """False for a local path or file:// URL that is not there: uv fails outright on a missing
    find-links directory, where pip shrugs."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(parsed.path).exists()
    if parsed.scheme in ("", "c", "d") or len(parsed.scheme) == 1:  # a path (a Windows drive is one letter)
        return Path(location).exists()
    return True


def _uv_configured() -> bool:
    # A uv.toml says the user set uv up themselves: do not override it with pip's settings.
    config_home = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    dirs = [config_home, *(Path(d) for d in os.environ.get("XDG_CONFIG_DIRS", "/etc/xdg").split(os.pathsep))]
    return any((d / "uv" / "uv.toml").exists() for d in [*dirs, Path("/etc")])


def uv_index_env(server_env: Mapping[str, str] | None = None) -> dict[str, str]:
    """uv environment variables equivalent to pip's index settings, for a server run through uv.

    Empty when the user configured uv (a ``UV_*`` index variable, here or in the server's ``env``, or a
    uv.toml). Missing local find-links and file:// indexes are dropped.
    """
    given = {**os.environ, **(server_env or {})}
    if any(name in given for name in _UV_INDEX_VARS) or _uv_configured():
        return {}
    pip = pip_settings()
    env: dict[str, str] = {}
    if pip.get("no-index", "").lower() in ("1", "true", "yes", "on"):
        env["UV_NO_INDEX"] = "1"
    if pip.get("index-url") and _exists_if_local(pip["index-url"]):
        env["UV_DEFAULT_INDEX"] = pip["index-url"]
    extra = [url for url in pip.get("extra-index-url", "").split() if _exists_if_local(url)]
    if extra:
        env["UV_INDEX"] = " ".join(extra)
        # pip takes the best version across all its indexes; uv's default takes the first index that has
        # the package at all, so a local mirror holding only mcp 2.3 would hide PyPI's mcp 1.x.
        if "UV_INDEX_STRATEGY" not in given:
            env["UV_INDEX_STRATEGY"] = "unsafe-best-match"
    links = [link for link in pip.get("find-links", "").split() if _exists_if_local(link)]
    if links:
        env["UV_FIND_LINKS"] = ",".join(links)  # uv splits this one on commas
    hosts = pip.get("trusted-host", "").split()
    if hosts and "UV_INSECURE_HOST" not in given:
        env["UV_INSECURE_HOST"] = " ".join(hosts)
    if pip.get("cert") and "SSL_CERT_FILE" not in given and Path(pip["cert"]).exists():
        env["SSL_CERT_FILE"] = pip["cert"]
    return env


def prepare_command(
    where: str, command: str, args: list[str], env: dict[str, str]
) -> tuple[str, list[str], dict[str, str]]:
    """The executable, arguments and extra environment that actually run ``command args``.

    ``where`` is the config path of the server (``mcpServers.NAME``), for the one-line errors.
    """
    name = Path(command).name if os.sep in command else command
    if name in ("uvx", "uv"):
        executable = command if os.sep in command else find_executable(command)
        if executable is None:
            raise ServerConfigError(
                f"{where}.command: {command} was not found; install uv (pip install uv; mcp-rl depends on "
                "it, so reinstalling mcp-rl also works) or give the server's full command"
            )
        env = {**uv_index_env(env), **env}
        if name == "uvx" or args[:2] == ["tool", "run"]:
            argv = [executable, *args]
            if needs_mcp1(argv, {**os.environ, **env}):  # learnt by the launcher at an earlier start
                return executable, with_mcp1(argv)[1:], env
            return sys.executable, ["-m", LAUNCHER_MODULE, *argv], env
        return executable, args, env
    if name == "npx":
        npx = command if os.sep in command else shutil.which("npx")
        if npx is None or shutil.which("node") is None:
            raise ServerConfigError(
                f"{where}.command: npx needs Node.js (not found on PATH); install it "
                "(apt-get install nodejs npm) or run the server another way"
            )
        return npx, args, env
    if command in ("python", "python3"):
        return sys.executable, args, env
    if os.sep in command:
        return command, args, env
    return find_executable(command) or command, args, env


if __name__ == "__main__":  # the launcher's path before mcp_rl.uvx_launcher: commands written then still run
    from mcp_rl.uvx_launcher import launch

    sys.exit(launch(sys.argv[1:]))
