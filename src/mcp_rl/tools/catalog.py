"""The pool's tool catalog: which of each server's tools the model sees (``includeTools``/``excludeTools``),
the name each gets in the pool (its own, or a namespaced one where servers share a name), and the look-up
of a name the model wrote back to its tool.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable, Sequence

from mcp.types import Tool

from mcp_rl.tools.results import ToolPoolError, ToolSpec
from mcp_rl.tools.server_config import ServerConfig

__all__ = ["ToolCatalog"]


class ToolCatalog:
    """The tools of a set of servers under their pool names, built from each server's listing."""

    def __init__(self, listings: Iterable[tuple[ServerConfig, Sequence[Tool]]] = ()) -> None:
        exposed = [(config, tools, _exposed_tools(config, tools)) for config, tools in listings]
        # A tool includeTools/excludeTools keeps out → its server. By name: `tool not in shown` compared
        # pydantic models pairwise, quadratic in the tool count.
        self.withheld: dict[str, str] = {}
        for config, tools, shown in exposed:
            shown_names = {tool.name for tool in shown}
            for tool in tools:
                if tool.name not in shown_names:
                    self.withheld[tool.name] = config.name
        owners: Counter[str] = Counter(tool.name for _, _, shown in exposed for tool in shown)
        # Unique tool names keep their own name; namespaced ones must not take any of them.
        taken = {name for name, count in owners.items() if count == 1}
        self.by_name: dict[str, ToolSpec] = {}
        self._by_origin: dict[tuple[str, str], ToolSpec] = {}  # (server, its own tool name) → the tool
        for config, _, shown in exposed:
            for tool in shown:
                server = config.name
                name = tool.name if owners[tool.name] == 1 else _namespaced(server, tool.name, taken)
                spec = ToolSpec(
                    name=name,
                    server=server,
                    remote_name=tool.name,
                    description=tool.description or "",
                    input_schema=dict(tool.input_schema or {"type": "object"}),
                    output_schema=dict(tool.output_schema) if tool.output_schema else None,
                    idempotent=_declared_idempotent(tool),
                    read_only=tool.annotations is not None and bool(tool.annotations.read_only_hint),
                )
                self.by_name[name] = self._by_origin[(server, tool.name)] = spec

    def resolve(self, name: str) -> ToolSpec | None:
        """A tool by pool name, ``server/tool`` or ``server-tool``."""
        if name in self.by_name:
            return self.by_name[name]
        # Server and tool names may hold the separator themselves ("a-b" + "c" vs "a" + "b-c"): try every
        # split, so each tool stays reachable as "<server>/<tool>" whatever its pool name became.
        for sep in ("/", "-", "."):
            start = name.find(sep)
            while start > 0:
                spec = self._by_origin.get((name[:start], name[start + 1 :]))
                if spec is not None:
                    return spec
                start = name.find(sep, start + 1)
        return None

    def unknown_tool_detail(self, name: str) -> str:
        """Why ``name`` is no tool, for the model: left out of this task by an allow-list, or not there at
        all, followed by the tools it may call."""
        available = ", ".join(sorted(self.by_name)) or "none"
        withheld = self.withheld.get(name.rsplit("/", 1)[-1])
        why = f"{name!r} is not enabled for this task" if withheld else f"no tool named {name!r}"
        return f"{why}; available: {available}"


def _exposed_tools(config: ServerConfig, tools: Sequence[Tool]) -> list[Tool]:
    """The server's tools its ``includeTools``/``excludeTools`` let the model see and call; a name in
    either list that the server does not have is an error, since a typo would silently change the task."""
    listed = {tool.name for tool in tools}
    for key, names in (("includeTools", config.include_tools or []), ("excludeTools", config.exclude_tools)):
        missing = [n for n in names if n not in listed]
        if missing:
            raise ToolPoolError(
                f"mcpServers.{config.name}.{key}: the server has no tool(s) {', '.join(missing)}; "
                f"its tools: {', '.join(sorted(listed)) or 'none'}"
            )
    allowed = listed if config.include_tools is None else set(config.include_tools)
    return [t for t in tools if t.name in allowed and t.name not in config.exclude_tools]


def _declared_idempotent(tool: Tool) -> bool:
    annotations = tool.annotations
    return annotations is not None and bool(annotations.idempotent_hint or annotations.read_only_hint)


def _namespaced(server: str, tool: str, taken: set[str]) -> str:
    """A pool name for a tool whose name other servers share: "<server>-<tool>" as RL-Factory users know
    it, or, where that too is taken (server "a" + tool "b-c" vs server "a-b" + tool "c"), "<server>_<tool>"
    and then a numbered form, so no two tools ever share a name."""
    numbered = (f"{server}-{tool}-{n}" for n in itertools.count(2))
    candidates = itertools.chain([f"{server}-{tool}", f"{server}_{tool}"], numbered)
    name = next(c for c in candidates if c not in taken)
    taken.add(name)
    return name
