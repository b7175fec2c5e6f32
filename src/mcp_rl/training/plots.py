"""A run's ``metrics.jsonl`` → ``training.png``: rewards and tool behaviour over steps.

The panels come from the keys the metrics hold, so a task's own numbers (the recipe's zero-weight rubric
entries, split by ``data.report_by``) are plotted without this module naming them."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mcp_rl.env.metrics import value_order


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


Panels = dict[str, list[tuple[str, str]]]  # title → (metric key, label) per series

# Namespaces whose three-part keys are not a rubric entry split by a column (tools/<server>/calls).
NOT_GROUPED = ("rewards", "tools", "rollout", "probe")


def grouped_panels(rows: Sequence[dict[str, Any]], reward_names: set[str]) -> Panels:
    """One panel per value of the recipe's ``data.report_by`` column (``hops = 2``), a series per rubric
    entry: the ``<column>/<value>/<name>`` keys whose name is a reward's (``rewards/<name>/mean``)."""
    by_group: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for key in sorted({k for m in rows for k in m}):
        parts = key.split("/")
        if len(parts) == 3 and parts[0] not in NOT_GROUPED and parts[2] in reward_names:
            by_group.setdefault((parts[0], parts[1]), []).append((key, parts[2]))
    ordered = sorted(by_group, key=lambda group: (group[0], value_order(group[1])))
    return {f"{column} = {value}": by_group[column, value] for column, value in ordered}


def metric_panels(rows: Sequence[dict[str, Any]]) -> Panels:
    """The panels a run's metrics have: reward per entry, tool behaviour, the rubric split by
    ``data.report_by``, and the warnings before a collapse where those were logged."""
    reward_keys = sorted({k for m in rows for k in m if k.startswith("rewards/") and k.endswith("/mean")})
    panels: Panels = {
        "reward": [("reward", "total reward")] + [(k, k.split("/")[1]) for k in reward_keys],
        "behaviour": [
            ("rollout/calls_per_trajectory", "tool calls / episode"),
            ("rollout/answered", "answered"),
            # Ours, not TRL's completions/clipped_ratio: that counts every episode not ending in EOS.
            ("rollout/truncated", "cut by a token limit"),
            ("rollout/parse_errors_per_trajectory", "parse errors / episode"),
        ],
        **grouped_panels(rows, {k.split("/")[1] for k in reward_keys}),
    }
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
            ("grpo/sft_loss", "token loss on the warm start's demonstrations (sft_coef)"),
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
    return panels


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
    panels = metric_panels(rows)
    columns = min(3, len(panels))
    lines = math.ceil(len(panels) / columns)
    figure, grid = plt.subplots(lines, columns, figsize=(6 * columns, 4.5 * lines), squeeze=False)
    axes = list(grid.flat)
    for unused in axes[len(panels) :]:
        unused.set_visible(False)
    colors: dict[str, Any] = {}  # a rubric entry keeps its reward panel's colour in the panels by value
    for axis, (title, series) in zip(axes, panels.items(), strict=False):
        for key, label in series:
            # TRL logs null for a reward that scored no episode of the step.
            values = [math.nan if m.get(key) is None else float(m[key]) for m in rows]
            if all(math.isnan(v) for v in values):
                continue
            (line,) = axis.plot(steps, values, alpha=0.25, linewidth=1, color=colors.get(label))
            colors.setdefault(label, line.get_color())
            axis.plot(steps, trailing_mean(values, window), color=line.get_color(), linewidth=2, label=label)
        axis.set_xlabel("step")
        axis.set_title(f"{title} (solid: mean of the last {window} steps)")
        axis.legend(fontsize=8)
        axis.grid(alpha=0.3)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path
