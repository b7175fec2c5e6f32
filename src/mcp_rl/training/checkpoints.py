"""What a training checkpoint holds, and keeping the optimizer state only where ``--resume`` reads it.

transformers' ``Trainer`` writes into every ``checkpoint-N/`` the model's weights (under LoRA its adapters),
the optimizer state (AdamW keeps two moments per trainable weight, in fp32: twice the
fp32 size of what trains), the scheduler, the gradient scaler, the RNG state and ``trainer_state.json``.
``--resume`` picks the newest complete checkpoint, so only that one needs the optimizer state;
``OptimizerStateInNewestOnly`` deletes it from the older ones once a newer one is complete. An older
checkpoint stays loadable as a model (``mcp-rl eval --model``) and resumable (same step, scheduler and RNG;
fresh optimizer moments).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tqdm.auto import tqdm
from transformers import TrainerCallback

from mcp_rl.training.trainer import COMPLETE_MARKER, last_complete_checkpoint

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
    steps = {
        int(p.name.split("-")[-1]): p
        for p in Path(output_dir).glob("checkpoint-*")
        if p.name.split("-")[-1].isdigit() and (p / COMPLETE_MARKER).exists()
    }
    return {steps[step].name: checkpoint_contents(steps[step]) for step in sorted(steps)}


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
        newest = last_complete_checkpoint(args.output_dir)
        if newest is None:
            return
        if not self.described:
            self.described = True
            tqdm.write(
                f"{describe_checkpoint(newest)}; older checkpoints keep their weights but not the "
                "optimizer state, which only --resume reads (from the newest)"
            )
        for folder in Path(args.output_dir).glob("checkpoint-*"):
            if folder != Path(newest) and (folder / COMPLETE_MARKER).exists():
                for path in optimizer_files(folder):
                    path.unlink(missing_ok=True)
