"""Checkpoints: when one is complete, what it holds, and keeping the optimizer state only where
``--resume`` reads it.

``CheckpointMarker`` writes ``checkpoint-complete`` into a ``checkpoint-N/`` once transformers has saved all
of it; a run killed mid-save leaves a folder without it, which a resume removes
(``remove_incomplete_checkpoints``) and never resumes from (``last_complete_checkpoint``).

transformers' ``Trainer`` writes into every ``checkpoint-N/`` the model's weights (under LoRA its adapters),
the optimizer state (AdamW keeps two moments per trainable weight, in fp32: twice the
fp32 size of what trains), the scheduler, the gradient scaler, the RNG state and ``trainer_state.json``.
``--resume`` picks the newest complete checkpoint, so only that one needs the optimizer state;
``OptimizerStateInNewestOnly`` deletes it from the older ones once a newer one is complete. An older
checkpoint stays loadable as a model (``mcp-rl eval --model``) and resumable (same step, scheduler and RNG;
fresh optimizer moments).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from transformers import TrainerCallback

COMPLETE_MARKER = "checkpoint-complete"


def complete_checkpoints(output_dir: str | Path) -> dict[int, Path]:
    """Every ``checkpoint-N`` folder of ``output_dir`` whose save finished, by step."""
    return {
        int(path.name.split("-")[-1]): path
        for path in Path(output_dir).glob("checkpoint-*")
        if path.name.split("-")[-1].isdigit() and (path / COMPLETE_MARKER).exists()
    }


def last_complete_checkpoint(output_dir: str | Path) -> str | None:
    """The newest ``checkpoint-N`` folder whose save finished, or None."""
    complete = complete_checkpoints(output_dir)
    return str(complete[max(complete)]) if complete else None


def remove_incomplete_checkpoints(output_dir: Path) -> None:
    """Delete the checkpoint folders a killed save left unmarked: written into again, they would keep their
    half-written files (a 538 MB temporary one, once), and then be marked complete."""
    for folder in output_dir.glob("checkpoint-*"):
        if folder.is_dir() and not (folder / COMPLETE_MARKER).exists():
            shutil.rmtree(folder, ignore_errors=True)


class CheckpointMarker(TrainerCallback):
    """Marks ``checkpoint-N`` complete after transformers wrote all of it (weights, optimizer, RNG state).

    ``on_save`` fires once the whole save has finished; a run killed mid-save leaves a folder without the
    marker, and resuming skips it (``last_complete_checkpoint``), so a crash never resumes from
    half-written weights.
    """

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if args.should_save:
            folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
            if folder.is_dir():
                (folder / COMPLETE_MARKER).write_text(str(state.global_step))


OPTIMIZER_PATTERNS = ("optimizer.pt", "optimizer.bin", "rank*-of-*-optimizer.pt")
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth")
WEIGHT_PREFIXES = ("model", "adapter_model", "pytorch_model")


def optimizer_files(folder: Path) -> list[Path]:
    """The optimizer-state files transformers wrote into a checkpoint folder."""
    return sorted({path for pattern in OPTIMIZER_PATTERNS for path in folder.glob(pattern) if path.is_file()})


def checkpoint_contents(folder: str | Path) -> dict[str, int]:
    """Bytes of a checkpoint by part: ``weights`` (model or adapters), ``optimizer``, ``other`` (scheduler,
    RNG, trainer state, tokenizer and config files) and ``total``."""
    folder = Path(folder)
    optimizer = set(optimizer_files(folder))
    parts = {"weights": 0, "optimizer": 0, "other": 0}
    for path in folder.rglob("*"):
        if not path.is_file():
            continue
        size = path.stat().st_size
        if path in optimizer:
            parts["optimizer"] += size
        elif path.suffix in WEIGHT_SUFFIXES and path.name.startswith(WEIGHT_PREFIXES):
            parts["weights"] += size
        else:
            parts["other"] += size
    return {**parts, "total": sum(parts.values())}


def megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.1f} MB" if n_bytes < 1e9 else f"{n_bytes / 1e9:.2f} GB"


def describe_checkpoint(folder: str | Path) -> str:
    """One line: the checkpoint's size and what makes it up."""
    parts = checkpoint_contents(folder)
    optimizer = megabytes(parts["optimizer"]) if parts["optimizer"] else "none (a newer checkpoint has it)"
    return (
        f"{Path(folder).name}: {megabytes(parts['total'])} = weights {megabytes(parts['weights'])} "
        f"+ optimizer state {optimizer} + scheduler, RNG, trainer state and configs "
        f"{megabytes(parts['other'])}"
    )


def run_checkpoints(output_dir: str | Path) -> dict[str, dict[str, int]]:
    """Every complete checkpoint of a run folder → its bytes by part (for ``summary.json``)."""
    complete = complete_checkpoints(output_dir)
    return {complete[step].name: checkpoint_contents(complete[step]) for step in sorted(complete)}


class OptimizerStateInNewestOnly(TrainerCallback):
    """After each save, the optimizer state of every complete checkpoint but the newest is deleted.

    Only once the new checkpoint is marked complete (add this callback after ``CheckpointMarker``): a run
    killed at any moment still has a complete checkpoint with its optimizer state to resume from. The
    first save prints what a checkpoint holds.
    """

    def __init__(self) -> None:
        self.described = False

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if not args.should_save:
            return
        complete = complete_checkpoints(args.output_dir)
        if not complete:
            return
        newest = complete.pop(max(complete))
        if not self.described:
            self.described = True
            tqdm.write(
                f"{describe_checkpoint(newest)}; older checkpoints keep their weights but not the "
                "optimizer state, which only --resume reads (from the newest)"
            )
        for folder in complete.values():
            for path in optimizer_files(folder):
                path.unlink(missing_ok=True)
