"""Held-out success at each checkpoint of one or more runs, against their control, as a plot and a table.

    python bench/checkpoint_curve.py CONTROL.json RUN:STEP=REPORT.json ... [--metric em] [--pass-at K]
        [--title T] [--out curve.png] [--resamples 10000]

CONTROL is the evaluation of the lr-0 control (the warm start alone, or the untrained model); each
``RUN:STEP=REPORT`` is one `mcp-rl eval` report of a run's checkpoint, on the same tasks (``seed 0:20=...``).
Every checkpoint is paired with the control by task (``compare_evals.py``): the plot draws each run's success
by step with the 95% interval of its difference from the control, and the control with its own one-standard-
error band, the protocol's "no dip beyond one standard error" line. Last stdout line: one JSON object, per run
the steps with success, difference and interval.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Any

from _common import finish  # bench/ is sys.path[0]
from compare_evals import by_task, compare, difference_text, episodes, metric_label


def parse_point(text: str) -> tuple[str, int, Path]:
    """``RUN:STEP=REPORT`` → (run, step, report)."""
    label, equals, report = text.rpartition("=")
    run, colon, step = label.rpartition(":")
    if not (equals and colon and step.isdigit() and run and report):
        raise SystemExit(f"{text!r}: write each checkpoint as RUN:STEP=REPORT.json ('seed 0:20=s0-20.json')")
    return run, int(step), Path(report)


def curve(
    control: Path, points: list[tuple[str, int, Path]], metric: str, k: int, resamples: int, seed: int
) -> dict[str, Any]:
    """The control's success and standard error, and per run its checkpoints paired with the control."""
    base = by_task(episodes(control), metric, k)
    values = [value for _, _, value in base]
    mean = sum(values) / len(values)
    spread = math.sqrt(sum((v - mean) ** 2 for v in values) / max(1, len(values) - 1))
    result: dict[str, Any] = {"control": {"success": mean, "se": spread / math.sqrt(len(values))}, "runs": {}}
    for run, step, report in sorted(points, key=lambda point: (point[0], point[1])):
        tasks = by_task(episodes(report), metric, k)
        if [task for task, _, _ in tasks] != [task for task, _, _ in base]:
            raise SystemExit(f"{report} is not on the control's tasks in the control's order")
        paired = compare(values, [value for _, _, value in tasks], resamples, seed)
        point = {"step": step, "success": paired["after"], "difference": paired["difference"]}
        result["runs"].setdefault(run, []).append({**point, "ci95": paired["ci95"]})
    return result


def plot(result: dict[str, Any], title: str, ylabel: str, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    control, se = result["control"]["success"], result["control"]["se"]
    steps = sorted({point["step"] for run in result["runs"].values() for point in run})
    figure, axes = plt.subplots(figsize=(6.4, 4.0))
    axes.axhline(control, color="black", linewidth=1, label="control (lr 0)")
    axes.axhspan(control - se, control + se, color="black", alpha=0.12, label="control ± 1 SE")
    for index, (run, points) in enumerate(result["runs"].items()):
        shift = (index - (len(result["runs"]) - 1) / 2) * 0.6  # runs side by side at a shared step
        xs = [point["step"] + shift for point in points]
        ys = [point["success"] for point in points]
        # The interval of the difference, drawn around the checkpoint's success.
        below = [0.0, *(point["difference"] - point["ci95"][0] for point in points)]
        above = [0.0, *(point["ci95"][1] - point["difference"] for point in points)]
        axes.errorbar([0, *xs], [control, *ys], yerr=[below, above], marker="o", capsize=3, label=run)
    axes.set_xticks([0, *steps])
    axes.set_xlabel("GRPO steps (95% interval of the paired difference from the control)")
    axes.set_ylabel(ylabel)
    axes.set_title(title)
    axes.legend(fontsize="small")
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("control", type=Path, help="The lr-0 control's eval report.")
    parser.add_argument("points", nargs="+", help="RUN:STEP=REPORT.json, one per checkpoint.")
    parser.add_argument("--metric", default="em", help="em, or a reward's name (e.g. calculator_verified).")
    parser.add_argument("--pass-at", type=int, default=1, help="Plot pass@K of sampled reports (1: success).")
    parser.add_argument("--title", default="held-out success by checkpoint")
    parser.add_argument("--out", type=Path, default=Path("curve.png"))
    parser.add_argument("--resamples", type=int, default=10000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    points = [parse_point(text) for text in args.points]
    result = curve(args.control, points, args.metric, args.pass_at, args.resamples, args.seed)
    label = metric_label(args.metric, args.pass_at)
    plot(result, args.title, label, args.out)
    result.update(metric=label, control_report=str(args.control), plot=str(args.out))
    lines = [f"control {result['control']['success']:.3f} ± {result['control']['se']:.3f} (1 SE)"]
    for run, run_points in result["runs"].items():
        lines += [f"{run:>12} {p['step']:>4}  {p['success']:.3f}  {difference_text(p)}" for p in run_points]
    finish(result, "\n".join(["", *lines]))


if __name__ == "__main__":
    main()
