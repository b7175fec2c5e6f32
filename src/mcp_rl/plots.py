"""A run's ``metrics.jsonl`` → ``training.png``: rewards and tool behaviour over steps."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def read_metrics(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def trailing_mean(values: Sequence[float], window: int) -> list[float]:
    """Mean of the last ``window`` values at each point (fewer at the start); NaNs are skipped."""
    means = []
    for i in range(len(values)):
        recent = [v for v in values[max(0, i - window + 1) : i + 1] if not math.isnan(v)]
        means.append(sum(recent) / len(recent) if recent else math.nan)
    return means


def plot_metrics(metrics: list[dict[str, Any]], path: Path, window: int = 5) -> Path | None:
    """Reward per function and tool behaviour over steps, as a PNG: each step faint, a trailing mean solid.

    A step scores only a few questions, so single steps swing widely; the trailing mean is the trend.
    """
    rows = [m for m in metrics if "reward" in m]
    if not rows:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [m["step"] for m in rows]
    reward_keys = sorted({k for m in rows for k in m if k.startswith("rewards/") and k.endswith("/mean")})
    panels = {
        "reward": [("reward", "total reward")] + [(k, k.split("/")[1]) for k in reward_keys],
        "behaviour": [
            ("rollout/calls_per_trajectory", "tool calls / episode"),
            ("rollout/answered", "answered"),
            # Ours, not TRL's completions/clipped_ratio: that counts every episode not ending in EOS.
            ("rollout/truncated", "cut by a token limit"),
            ("rollout/parse_errors_per_trajectory", "parse errors / episode"),
        ],
    }
    hop_keys = sorted({k for m in rows for k in m if k.startswith("hops/")})
    if hop_keys:
        panels["by hop count"] = [(k, k.removeprefix("hops/").replace("/", "-hop ")) for k in hop_keys]
    figure, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.5))
    for axis, (title, series) in zip(axes, panels.items(), strict=True):
        for key, label in series:
            values = [float(m.get(key, math.nan)) for m in rows]
            if all(math.isnan(v) for v in values):
                continue
            (line,) = axis.plot(steps, values, alpha=0.25, linewidth=1)
            axis.plot(steps, trailing_mean(values, window), color=line.get_color(), linewidth=2, label=label)
        axis.set_xlabel("step")
        axis.set_title(f"{title} (solid: mean of the last {window} steps)")
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
