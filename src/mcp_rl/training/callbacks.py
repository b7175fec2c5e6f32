"""Training callbacks: each log line to ``metrics.jsonl``; one progress bar with the numbers that matter; the
optimizer step of a batch without signal skipped."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tqdm.auto import tqdm
from transformers import TrainerCallback

if TYPE_CHECKING:
    from mcp_rl.training.trainer import MCPGRPOTrainer


def reward_means(logs: Mapping[str, Any]) -> list[tuple[str, float]]:
    """Each reward entry's mean in a log line, ``rewards/<name>/mean`` → ``(name, mean)``, in the line's
    order (TRL's: the recipe's)."""
    return [
        # TRL logs None for an entry that scored no episode of the step.
        (key.split("/")[1], float("nan") if value is None else float(value))
        for key, value in logs.items()
        if key.startswith("rewards/") and key.endswith("/mean") and key.count("/") == 2
    ]


class MetricsFile(TrainerCallback):
    """Every log line as JSON, so a run can be plotted or compared without a tracking service."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        if state.is_world_process_zero and logs:
            with self.path.open("a") as out:
                out.write(json.dumps({"step": state.global_step, "time": time.time(), **logs}) + "\n")


class RunProgress(TrainerCallback):
    """One progress bar: step, reward, the means of the recipe's first ``shown_rewards`` reward entries,
    tool calls per second, ETA; and once, after the first ``pace_steps`` steps, one line with the time the
    rest will take at their pace.

    The entries are read from the log line (TRL logs ``rewards/<name>/mean`` in the recipe's order), so the
    bar names no task's metrics; the rest, split by ``data.report_by`` too, is in ``metrics.jsonl``."""

    def __init__(self, pace_steps: int = 3, shown_rewards: int = 2) -> None:
        self.bar: Any = None
        self.started = time.monotonic()
        self.pace_steps = pace_steps
        self.shown_rewards = shown_rewards
        self.first_step: int | None = None  # the step this run (or resume) started from, and when
        self.began = self.started

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        self.first_step, self.began = state.global_step, time.monotonic()
        if state.is_world_process_zero:
            self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc="train", unit="step")

    def on_step_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.bar is None or self.first_step is None:
            return
        done, left = state.global_step - self.first_step, state.max_steps - state.global_step
        if done == self.pace_steps and left > 0:
            pace_s = (time.monotonic() - self.began) / done
            per_step = f"{pace_s:.1f}" if pace_s >= 1 else f"{pace_s:.2g}"  # a tiny model's steps: 0.043 s
            self.bar.write(
                f"~{pace_s * left / 60:.0f} min for the {left} steps left at the pace of the first {done} "
                f"({per_step} s a step)"
            )

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        if self.bar is None or not logs or "reward" not in logs:
            return
        self.bar.n = state.global_step
        elapsed = max(1e-9, time.monotonic() - self.started)
        calls = logs.get("tools/calls", 0.0)
        postfix = {"reward": f"{logs['reward']:.3f}"}
        for name, mean in reward_means(logs)[: self.shown_rewards]:
            postfix[name] = f"{mean:.3f}"
        postfix["calls_s"] = f"{calls / max(1e-9, logs.get('rollout/total_s', elapsed)):.1f}"
        self.bar.set_postfix(postfix)
        self.bar.refresh()

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.bar is not None:
            self.bar.n = state.global_step
            self.bar.close()


class SkipStepWithoutSignal(TrainerCallback):
    """Drops every gradient before the optimizer step of a batch the trainer marked as without signal.

    ``torch.optim`` Adam and AdamW pass over parameters whose ``grad`` is None: no moment decays, no step
    count advances, no weight (nor weight decay) moves. A zero gradient instead would still step along the
    momentum of earlier batches.
    """

    def __init__(self, trainer: MCPGRPOTrainer) -> None:
        self.trainer = trainer

    def on_pre_optimizer_step(self, args: Any, state: Any, control: Any, model: Any = None, **_: Any) -> None:
        if self.trainer.skip_update and model is not None:
            for parameter in model.parameters():
                parameter.grad = None
