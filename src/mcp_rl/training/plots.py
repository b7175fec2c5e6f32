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
    # Warnings before a collapse: how much of a batch carries signal, and how far the policy has drifted.
    optional = {
        "signal": [
            ("frac_reward_zero_std", "share of episodes in groups without spread"),
            ("dynamic_sampling/zero_std_share", "groups without spread, as sampled"),
            ("grpo/informative_groups", "informative groups"),
            ("grpo/skipped_step", "step skipped"),
        ],
        "drift from the warm start": [
            ("probe/kl", "KL on probe demonstrations"),
            ("probe/delta_logp", "Δ log-prob of probe demonstrations"),
            ("kl", "KL to the reference (beta > 0)"),
        ],
        "update size": [("probe/update_norm_over_lr", "||Δθ|| / lr")],
        "search margin after the first passage": [
            (k, k.split("/")[2] + " call(s): log p(search) − log p(answer)")
            for k in sorted({k for m in rows for k in m if k.endswith("/search_margin")})
        ],
    }
    for title, series in optional.items():
        present = [(key, label) for key, label in series if any(key in m for m in rows)]
        if any(key != "frac_reward_zero_std" and key != "kl" for key, _ in present):
            panels[title] = present
    columns = min(3, len(panels))
    lines = math.ceil(len(panels) / columns)
    figure, grid = plt.subplots(lines, columns, figsize=(6 * columns, 4.5 * lines), squeeze=False)
    axes = list(grid.flat)
    for unused in axes[len(panels) :]:
        unused.set_visible(False)
    for axis, (title, series) in zip(axes, panels.items(), strict=False):
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
