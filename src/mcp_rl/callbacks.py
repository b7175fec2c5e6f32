"""Training callbacks: each log line to ``metrics.jsonl``; one progress bar with the numbers that matter."""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from transformers import TrainerCallback


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
    """One progress bar: step, reward, exact match, tool calls per second, ETA."""

    def __init__(self) -> None:
        self.bar: Any = None
        self.started = time.monotonic()

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if state.is_world_process_zero:
            self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc="train", unit="step")

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        if self.bar is None or not logs or "reward" not in logs:
            return
        self.bar.n = state.global_step
        elapsed = max(1e-9, time.monotonic() - self.started)
        calls = logs.get("tools/calls", 0.0)
        postfix = {
            "reward": f"{logs['reward']:.3f}",
            "em": f"{logs.get('rewards/exact_match/mean', float('nan')):.3f}",
            "calls_s": f"{calls / max(1e-9, logs.get('rollout/total_s', elapsed)):.1f}",
        }
        # Multi-hop questions in the batch: their EM and how many of them got a second call.
        if "hops/2/called_twice" in logs:
            postfix["em_2hop"] = f"{logs.get('hops/2/em', float('nan')):.2f}"
            postfix["2calls_2hop"] = f"{logs['hops/2/called_twice']:.2f}"
        self.bar.set_postfix(postfix)
        self.bar.refresh()

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.bar is not None:
            self.bar.n = state.global_step
            self.bar.close()
