"""Per-tool call counters for logging: calls, failures by kind and latency percentiles, as flat metrics."""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from mcp_rl.tools.results import ToolResult

__all__ = ["CallStats", "percentile"]


@dataclass
class _ToolStats:
    calls: int = 0
    failures: Counter[str] = field(default_factory=Counter)
    latencies: deque[float] = field(default_factory=lambda: deque(maxlen=8192))


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values`` by the nearest-rank method (a value that occurred)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


class CallStats:
    """Every call's outcome, per tool, since the last ``reset``."""

    def __init__(self) -> None:
        self._by_tool: dict[str, _ToolStats] = {}

    def record(self, tool: str, result: ToolResult) -> None:
        stats = self._by_tool.setdefault(tool, _ToolStats())
        stats.calls += 1
        stats.latencies.append(result.latency_s)
        if result.failure is not None:
            stats.failures[result.failure.value] += 1

    def reset(self) -> None:
        self._by_tool = {}

    def metrics(self) -> dict[str, float]:
        """``tools/calls`` and ``tools/failures`` in all, and per tool its calls, failures by kind and
        latency p50/p95."""
        out: dict[str, float] = {"tools/calls": 0.0, "tools/failures": 0.0}
        for tool, stats in self._by_tool.items():
            out["tools/calls"] += stats.calls
            out["tools/failures"] += sum(stats.failures.values())
            out[f"tools/{tool}/calls"] = float(stats.calls)
            for kind, count in stats.failures.items():
                out[f"tools/{tool}/failures/{kind.replace(' ', '_')}"] = float(count)
            if stats.latencies:
                out[f"tools/{tool}/latency_p50_s"] = percentile(stats.latencies, 0.5)
                out[f"tools/{tool}/latency_p95_s"] = percentile(stats.latencies, 0.95)
        return out
