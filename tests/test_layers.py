"""The package's layers (tools, config, generation, env, rewards, training) checked on the imports
themselves, read with ``ast``: every ``import`` counts, at module level or inside a function, since a
function-level import runs too, only later.

* ``tools/`` is what a production agent may reuse alone: the standard library, the MCP SDK and its
  transport and schema libraries, and ``mcp_rl.tools.*`` and the two leaves ``mcp_rl.errors`` /
  ``mcp_rl.uvx_launcher`` — no torch, no other layer. The launcher itself imports the standard library
  only: it starts once per server instance.
* ``config/`` describes and loads recipes and runs nothing: no other layer, no MCP, no torch.
* ``generation/`` turns token ids into token ids: it never reaches up into env, rewards or training.
* No private name (``_x``) is imported from another module, in the package or in the tests.
* Tool servers never import ``mcp_rl``: they run unchanged under any MCP client.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "src" / "mcp_rl"
LAYERS = ("tools", "config", "env", "generation", "rewards", "training")
# What tools/ may import beyond the standard library: the MCP SDK (``mcp``, its ``mcp_types``), the async
# runtime and HTTP client it is built on, and the schema libraries of server entries, tool listings and
# arguments (pydantic with the packages it is made of)...
MCP_LIBRARIES = {"mcp", "mcp_types", "anyio", "httpx", "httpx2", "httpcore", "jsonschema"}
MCP_LIBRARIES |= {"pydantic", "pydantic_core", "typing_extensions"}
# Modules outside tools/ that tools/ may import: they import nothing of the package.
TOOLS_LEAVES = {"mcp_rl.errors", "mcp_rl.uvx_launcher"}
# ...and ``uv``, whose own lookup finds the ``uvx`` that starts Python servers (optional, imported late).
TOOLS_THIRD_PARTY = {*MCP_LIBRARIES, "uv"}
# Anything that loads a model or runs an MCP session: config/ must stay importable without them.
RUNTIME_PACKAGES = {"mcp", "mcp_types", "anyio", "torch", "transformers", "trl", "vllm", "accelerate"}


@dataclass(frozen=True)
class Import:
    path: Path
    line: int
    module: str  # absolute: relative imports resolved against the importing file's package
    names: tuple[str, ...]  # for ``from module import a, b``; empty for ``import module``

    def __str__(self) -> str:
        where = self.path.relative_to(ROOT)
        what = f"from {self.module} import {', '.join(self.names)}" if self.names else f"import {self.module}"
        return f"{where}:{self.line}: {what}"


def module_name(path: Path) -> str:
    """``src/mcp_rl/tools/pool.py`` → ``mcp_rl.tools.pool`` (a package's ``__init__`` is the package)."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path, package_root: Path = PACKAGE.parent) -> Iterator[Import]:
    """Every import in ``path``, at any depth of the file (functions, ``if TYPE_CHECKING:`` blocks)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield Import(path, node.lineno, alias.name, ())
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolved against the package the file is in
                package = path.relative_to(package_root).parent.parts
                base = package[: len(package) - (node.level - 1)]
                module = ".".join([*base, *([module] if module else [])])
            yield Import(path, node.lineno, module, tuple(alias.name for alias in node.names))


def layer_imports(layer: str) -> list[Import]:
    return [found for path in sorted((PACKAGE / layer).rglob("*.py")) for found in imports(path)]


def top(module: str) -> str:
    return module.split(".", 1)[0]


def is_layer(module: str, layer: str) -> bool:
    return module == f"mcp_rl.{layer}" or module.startswith(f"mcp_rl.{layer}.")


def third_party(found: Import) -> bool:
    return top(found.module) not in sys.stdlib_module_names and top(found.module) != "mcp_rl"


def report(offenders: list[Import]) -> str:
    return "\n".join(map(str, offenders))


def test_the_imports_are_read_from_real_files() -> None:
    # The checks below mean nothing if the reader finds nothing: the pool does import anyio and MCP.
    found = {i.module for i in layer_imports("tools")}
    assert {"anyio", "mcp", "mcp_rl.tools.results"} <= found, sorted(found)
    assert module_name(PACKAGE / "tools" / "__init__.py") == "mcp_rl.tools"


def test_tools_import_only_mcp_and_its_libraries() -> None:
    offenders = [
        found
        for found in layer_imports("tools")
        if (third_party(found) and top(found.module) not in TOOLS_THIRD_PARTY)
        or (
            top(found.module) == "mcp_rl"
            and not (is_layer(found.module, "tools") or found.module in TOOLS_LEAVES)
        )
    ]
    assert not offenders, "tools/ must not import these (a production agent uses it alone):\n" + report(
        offenders
    )


def test_the_uvx_launcher_imports_only_the_standard_library() -> None:
    found = list(imports(PACKAGE / "uvx_launcher.py"))
    assert {i.module for i in found} >= {"subprocess", "json"}, found  # the reader saw its imports
    assert not [i for i in found if top(i.module) not in sys.stdlib_module_names]


def test_importing_tools_loads_no_torch_and_no_other_layer() -> None:
    # What really loads, transitive imports included: a package's __init__ elsewhere could pull torch in.
    others = [layer for layer in LAYERS if layer != "tools"]
    code = (
        "import sys, mcp_rl.tools\n"
        "parts = [m.split('.') for m in sys.modules]\n"
        "print(' '.join('.'.join(p[:2]) for p in parts if p[0] in ('torch', 'transformers', 'trl', 'vllm')"
        f" or (p[0] == 'mcp_rl' and len(p) > 1 and p[1] in {others!r})))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == [], f"import mcp_rl.tools loaded: {done.stdout}"


# config/ may read two things beyond itself: the names of the shipped datasets (``mcp_rl.datasets``, a
# standard-library lookup of folders) and ``trl.GRPOConfig``'s fields, the schema of the ``trainer:``
# section, imported only when a recipe sets trainer fields.
CONFIG_MAY_READ = {"mcp_rl.datasets"}
CONFIG_SCHEMA_PACKAGES = {"trl"}


def test_config_imports_no_other_layer_and_nothing_that_runs() -> None:
    offenders = [
        found
        for found in layer_imports("config")
        if (top(found.module) in RUNTIME_PACKAGES and top(found.module) not in CONFIG_SCHEMA_PACKAGES)
        or (
            top(found.module) == "mcp_rl"
            and found.module not in ("mcp_rl", "mcp_rl.errors", *CONFIG_MAY_READ)
            and not is_layer(found.module, "config")
        )
    ]
    assert not offenders, "config/ must only describe and load recipes; it imports:\n" + report(offenders)


def test_generation_never_reaches_up_into_env_rewards_or_training() -> None:
    offenders = [
        found
        for found in layer_imports("generation")
        if any(is_layer(found.module, layer) for layer in ("env", "rewards", "training"))
    ]
    assert not offenders, "generation/ imports a layer above it:\n" + report(offenders)


def private_imports(paths: list[Path]) -> list[Import]:
    """``from mcp_rl.x import _name``: a private name of one package module used in another file."""
    return [
        Import(found.path, found.line, found.module, private)
        for path in paths
        for found in imports(path)
        if top(found.module) == "mcp_rl"
        and (private := tuple(n for n in found.names if n.startswith("_") and not n.startswith("__")))
    ]


def test_no_private_name_crosses_a_module_of_the_package() -> None:
    offenders = private_imports(sorted(PACKAGE.rglob("*.py")))
    assert not offenders, "make these public (with a docstring) or move the code:\n" + report(offenders)


# The tests hold to the same rule: a test that imports a private name pins an implementation detail, and
# breaks on a rename that changes no behaviour.
def test_no_test_imports_a_private_name_of_the_package() -> None:
    found = {
        f"{i.path.relative_to(ROOT)}: from {i.module} import {', '.join(i.names)}"
        for i in private_imports(sorted((ROOT / "tests").rglob("*.py")))
    }
    assert not found, "make these public or test through the public API:\n" + "\n".join(sorted(found))


def test_tool_servers_never_import_mcp_rl() -> None:
    servers = [*(ROOT / "tool_servers").rglob("*.py"), *(ROOT / "tests" / "servers").rglob("*.py")]
    assert len(servers) > 5, servers  # the shipped servers and the test servers are really read
    offenders = [found for path in servers for found in imports(path, ROOT) if top(found.module) == "mcp_rl"]
    assert not offenders, "a tool server must run under any MCP client:\n" + report(offenders)
