"""Device check and speed: a few GRPO steps of ``MCPGRPOTrainer`` with a real tool server, on CUDA and on CPU.

    python bench/gpu_check.py                      # CUDA, then CPU, each in its own process; one JSON line
    python bench/gpu_check.py --device cpu --steps 2

Each device runs the tiny searching model of ``tests/tiny.py`` (built in code, no download) for ``--steps``
training steps against the real search server (stdio, BM25 over a generated corpus), then checks that the
model, the generator and the accelerator all sat on the device asked for, that the GPU really did the
work, and that the losses are finite. Any device-placement problem (an exception or a failed check) makes
the script print ``{"ok": false, ...}`` and exit 1.

The JSON line holds, per device, steady-state steps/s and generation tokens/s (the first step, which pays
for CUDA's start-up and kernel loading, is left out), and the CUDA/CPU ratio of each. A ~100k-parameter
model is launch-bound on a GPU, so a ratio near or under 1 is expected: this is a placement check with a
speed reading, not a GPU benchmark. ``bench/gpu_check.sh`` is the wrapper for a bare CUDA machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))  # tests/tiny.py: the same tiny model and corpus the tests use

from tiny import set_offline_env  # noqa: E402

set_offline_env()


class PlacementError(RuntimeError):
    """Something ran on another device than the one asked for."""


def run_device(device: str, steps: int, cpu_threads: int, batch: int) -> dict[str, Any]:
    """Train ``steps`` steps on ``device``; timings and placement facts back, or a ``PlacementError``."""
    import torch
    from tiny import (
        search_stdio_entry,
        searching_model,
        searching_trainer_kwargs,
        tiny_dataset,
        tiny_grpo_config,
        write_corpus,
    )
    from transformers import TrainerCallback

    from mcp_rl.tools import BlockingToolPool
    from mcp_rl.tools.server_config import parse_mcp_servers
    from mcp_rl.training.trainer import MCPGRPOTrainer

    if device == "cuda" and not torch.cuda.is_available():
        raise PlacementError(f"--device cuda, but torch {torch.__version__} sees no CUDA device")
    expected = torch.device(device).type
    if device == "cpu":
        torch.set_num_threads(cpu_threads)

    def synchronize() -> None:
        if expected == "cuda":
            torch.cuda.synchronize()

    class Timer(TrainerCallback):
        """Wall time of each optimizer step, rollout included (TRL generates inside the training step)."""

        def __init__(self) -> None:
            self.started = 0.0
            self.step_s: list[float] = []

        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            synchronize()
            self.started = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            synchronize()
            self.step_s.append(time.perf_counter() - self.started)

    class CheckedTrainer(MCPGRPOTrainer):
        """Notes, per rollout batch, generated tokens, generation time and where the generator's model is."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.rollouts: list[dict[str, Any]] = []

        def rollout(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
            output = super().rollout(prompts, trainer)
            batch = output["trajectories"]
            self.rollouts.append(
                {
                    "tokens": sum(t.completion_mask.count(1) for t in batch),
                    "generate_s": self.environment.engine.last_stats.get("rollout/generate_s", math.nan),
                    "calls": sum(len(t.calls) for t in batch),
                    "generator_device": next(self.environment.generator.model.parameters()).device.type,
                }
            )
            return output

    model, tokenizer = searching_model(seed=0)  # built and warmed up on the CPU; the trainer moves it
    dataset = tiny_dataset(steps * batch)
    timer = Timer()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        corpus = write_corpus(Path(tmp) / "corpus.jsonl")
        pool = BlockingToolPool(
            parse_mcp_servers({"search": search_stdio_entry(corpus, Path(tmp) / "cache")})
        )
        pool.start()
        args = tiny_grpo_config(
            Path(tmp) / "out",
            max_steps=steps,
            per_device_train_batch_size=batch,
            use_cpu=device == "cpu",
            disable_tqdm=True,
        )
        trainer = CheckedTrainer(
            args=args,
            train_dataset=dataset,
            callbacks=[timer],
            **searching_trainer_kwargs(model, tokenizer, pool, max_new_tokens=24),
        )
        trainer.train()  # closes the Environment and its pool

    # -- placement checks: each one names what ran where ------------------------------------------------
    problems = []
    if trainer.accelerator.device.type != expected:
        problems.append(f"accelerator device is {trainer.accelerator.device}, expected {expected}")
    param_devices = sorted({p.device.type for p in trainer.model.parameters()})
    if param_devices != [expected]:
        problems.append(f"model parameters on {param_devices}, expected [{expected!r}]")
    generator_devices = sorted({r["generator_device"] for r in trainer.rollouts})
    if generator_devices != [expected]:
        problems.append(f"generation ran on {generator_devices}, expected [{expected!r}]")
    peak_mib = 0.0
    if expected == "cuda":
        peak_mib = torch.cuda.max_memory_allocated() / 2**20
        if peak_mib <= 0:
            problems.append("no CUDA memory was ever allocated: the work did not run on the GPU")
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    losses = [entry["loss"] for entry in logs]
    if len(losses) != steps or not all(math.isfinite(v) for v in losses):
        problems.append(f"expected {steps} finite losses, got {losses}")
    if len(trainer.rollouts) != steps or len(timer.step_s) != steps:
        problems.append(
            f"expected {steps} rollouts and steps, got {len(trainer.rollouts)} and {len(timer.step_s)}"
        )
    if problems:
        raise PlacementError("; ".join(problems))

    # The first step pays for start-up (CUDA context, kernel loading, the first tool connection).
    steady = slice(1, None) if steps > 1 else slice(None)
    step_s = timer.step_s[steady]
    rollouts = trainer.rollouts[steady]
    generated = sum(r["tokens"] for r in rollouts)
    generate_s = sum(r["generate_s"] for r in rollouts)
    return {
        "device": device,
        "device_name": torch.cuda.get_device_name(0) if expected == "cuda" else f"cpu x{cpu_threads} threads",
        "torch": torch.__version__,
        "steps": steps,
        "completions_per_step": batch,
        "steps_per_s": len(step_s) / sum(step_s),
        "gen_tokens_per_s": generated / generate_s if generate_s > 0 else math.nan,
        "step_s": [round(s, 4) for s in timer.step_s],
        "generated_tokens": [r["tokens"] for r in trainer.rollouts],
        "tool_calls": sum(r["calls"] for r in trainer.rollouts),
        "losses": losses,
        "peak_cuda_mib": round(peak_mib, 1),
    }


@contextlib.contextmanager
def stdout_to_stderr() -> Any:
    """Send everything written to stdout, by Python or by native code (tokenizers' trainer), to stderr."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def run_child(device: str, options: argparse.Namespace) -> dict[str, Any]:
    """One device in a fresh process: accelerate's device state is a process-wide singleton."""
    with tempfile.NamedTemporaryFile(suffix=".json") as result:
        command = [
            sys.executable,
            __file__,
            "--device",
            device,
            "--steps",
            str(options.steps),
            "--cpu-threads",
            str(options.cpu_threads),
            "--batch",
            str(options.batch),
            "--result",
            result.name,
        ]
        try:
            finished = subprocess.run(command, timeout=options.timeout, check=False)
        except subprocess.TimeoutExpired:
            return {"ok": False, "device": device, "error": f"no result within {options.timeout} s"}
        text = Path(result.name).read_text()
        if not text:
            return {"ok": False, "device": device, "error": f"exited {finished.returncode} without a result"}
        return json.loads(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cuda", "cpu", "both"], default="both")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--batch", type=int, default=8, help="Completions per step (a multiple of 4).")
    parser.add_argument(
        "--cpu-threads",
        type=int,
        default=1,
        help="Torch threads on CPU (a tiny model gains nothing from more).",
    )
    parser.add_argument(
        "--timeout", type=float, default=200.0, help="Seconds per device (with --device both)."
    )
    parser.add_argument("--result", type=Path, help=argparse.SUPPRESS)  # where a child writes its result
    options = parser.parse_args(argv)

    if options.device == "both":
        results = {device: run_child(device, options) for device in ("cuda", "cpu")}
        ok = all(r.get("ok") for r in results.values())
        line: dict[str, Any] = {"ok": ok, **results}
        if ok:
            line["ratio_cuda_over_cpu"] = {
                key: results["cuda"][key] / results["cpu"][key] for key in ("steps_per_s", "gen_tokens_per_s")
            }
        print(json.dumps(line), flush=True)
        return 0 if ok else 1

    try:
        # Trainer and library prints go to stderr: stdout carries the one JSON line alone.
        with stdout_to_stderr():
            result = {
                "ok": True,
                **run_device(options.device, options.steps, options.cpu_threads, options.batch),
            }
    except Exception as error:
        traceback.print_exc()
        result = {"ok": False, "device": options.device, "error": f"{type(error).__name__}: {error}"}
    if options.result is not None:
        options.result.write_text(json.dumps(result))
    else:
        print(json.dumps({"ok": result["ok"], options.device: result}), flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
