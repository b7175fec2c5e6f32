"""The launcher a ``uvx`` server runs through: ``python -m mcp_rl.uvx_launcher UVX ARGS...``.

Python servers written for mcp 1.x often require an unbounded ``mcp>=1.x``, so uv resolves mcp 2 and they
crash on import. The launcher runs the server; when it dies of an import or attribute error before
answering and its environment holds mcp 2, it starts it once more with ``--with 'mcp<2'`` and remembers
that, per package (``MCP_RL_CACHE_DIR`` or ``~/.cache/mcp-rl``). A server known to need it is started that
way at once: ``server_env.prepare_command`` writes the ``--with`` itself, and the launcher, if still asked,
replaces itself with uv.

Standard library only, outside ``mcp_rl.tools``: it starts once per server instance (per episode for
``scope: episode``), and importing the tool layer cost each start about a second of CPU.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["launch", "needs_mcp1", "uvx_memo_key", "with_mcp1"]

_API_ERROR = re.compile(r"^(ImportError|ModuleNotFoundError|AttributeError)\b", re.MULTILINE)
_SITE_PACKAGES = re.compile(r'File "(.+?[/\\]site-packages)[/\\]')
_MCP1 = "mcp<2"

# uv options that take a value as the next argument (``--opt=value`` needs no entry).
_UV_VALUE_OPTIONS = {
    "--from", "--with", "--with-editable", "--with-requirements", "--python", "-p", "--index",
    "--default-index", "--index-url", "-i", "--extra-index-url", "--find-links", "-f", "--constraints",
    "-c", "--overrides", "--build-constraints", "-b", "--cache-dir", "--directory", "--project",
    "--config-file", "--env-file", "--index-strategy", "--resolution", "--prerelease", "--refresh-package",
    "--reinstall-package", "--upgrade-package", "-P", "--exclude-newer", "--keyring-provider",
}  # fmt: skip


def _memo_path(environ: Mapping[str, str]) -> Path:
    cache = Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mcp-rl"
    return Path(environ.get("MCP_RL_CACHE_DIR") or cache) / "servers-needing-mcp1.json"


def uvx_memo_key(argv: list[str]) -> str:
    """The key a uvx command's "needs the MCP 1.x SDK" memo is kept under: what uv resolves (its options
    and the package), without uvx's own path (it differs between venvs) and without the server's arguments
    (a per-episode server gets another database path every start)."""
    at = 3 if argv[1:3] == ["tool", "run"] else 1
    while at < len(argv) and argv[at].startswith("-"):
        at += 2 if argv[at] in _UV_VALUE_OPTIONS else 1
    return json.dumps(argv[1 : at + 1])


def needs_mcp1(argv: list[str], environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the memo (where ``environ`` keeps it) says this uvx command's server needs mcp<2."""
    try:
        return uvx_memo_key(argv) in json.loads(_memo_path(environ).read_text())
    except (OSError, ValueError, TypeError):
        return False


def _remember_mcp1(argv: list[str]) -> None:
    path = _memo_path(os.environ)
    try:
        known = json.loads(path.read_text()) if path.exists() else []
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(sorted({*known, uvx_memo_key(argv)})))
    except (OSError, ValueError):
        pass  # only costs the next start one more failed attempt


def with_mcp1(argv: list[str]) -> list[str]:
    """``argv`` with ``--with 'mcp<2'`` where uv takes its options: before the package."""
    at = 3 if argv[1:3] == ["tool", "run"] else 1
    return [*argv[:at], "--with", _MCP1, *argv[at:]]


def _crashed_on_mcp2(stderr: str) -> bool:
    """A traceback ending in an import or attribute error, from an environment that holds mcp 2."""
    if "Traceback (most recent call last)" not in stderr or not _API_ERROR.search(stderr):
        return False
    sites = set(_SITE_PACKAGES.findall(stderr))
    return any(any(Path(site).glob("mcp-2.*.dist-info")) for site in sites)


def _run(argv: list[str], on_answer: Callable[[], None] | None = None) -> tuple[int, bool, str]:
    """Run the server with our stdin; copy its stdout and stderr through. Returns (exit code, whether it
    wrote anything to stdout, the tail of its stderr); ``on_answer`` runs at its first stdout bytes."""
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    answered = threading.Event()
    tail: deque[bytes] = deque(maxlen=200)

    def pump(source: int, target: int, lines: deque[bytes] | None) -> None:
        while chunk := os.read(source, 65536):
            if lines is not None:
                lines.append(chunk)
            elif not answered.is_set():
                answered.set()
                if on_answer is not None:
                    on_answer()
            os.write(target, chunk)

    assert process.stdout is not None and process.stderr is not None
    threads = [
        threading.Thread(target=pump, args=(process.stdout.fileno(), 1, None), daemon=True),
        threading.Thread(target=pump, args=(process.stderr.fileno(), 2, tail), daemon=True),
    ]
    for thread in threads:
        thread.start()
    code = process.wait()
    for thread in threads:
        thread.join()
    return code, answered.is_set(), b"".join(tail).decode(errors="replace")


def launch(argv: list[str]) -> int:
    """Run the uvx command `argv` as the server, with `mcp<2` where it needs it; its exit code."""
    if needs_mcp1(argv):
        # Nothing to watch for: uv takes this process's place (no copying of every message through us).
        command = with_mcp1(argv)
        os.execv(command[0], command)
    code, answered, stderr = _run(argv)
    if code == 0 or answered or not _crashed_on_mcp2(stderr):
        return code
    # Nothing was said on stdout, so our stdin (the client's initialize request) is still unread.
    sys.stderr.write(
        f"mcp-rl: this server was written for mcp 1.x but uv installed mcp 2; starting it again with "
        f"--with '{_MCP1}'\n"
    )
    # Remembered as soon as the second try answers: the session may end with a kill, not an exit code.
    return _run(with_mcp1(argv), on_answer=lambda: _remember_mcp1(argv))[0]


if __name__ == "__main__":
    sys.exit(launch(sys.argv[1:]))
