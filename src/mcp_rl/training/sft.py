"""The warm start's optimisation on TRL's ``SFTTrainer``: gradients synced across the processes of an
``accelerate launch``, autocast where the machine has bf16, checkpointed and resumable, logged through the
run's callbacks.

TRL/transformers do AdamW, clipping, the constant schedule, DDP, autocast, checkpoints and resuming. Ours:
the dataset is the episodes' ``prompt_ids + completion_ids`` as the rollout wrote them, labelled on the
model's own tokens only; the batches are those the hand-written loop drew (a shuffle seeded by
``warm_start.seed`` each epoch, the last batch short), so a seed trains as before; the loss is
``supervised_loss`` (shared prompt prefix run once, only scored positions projected onto the vocabulary),
where SFTTrainer's own would project every position of right-padded rows.

A finished warm start leaves ``<output_dir>/final/`` (the model, or under LoRA its adapters, loadable with
``from_pretrained``) and ``stats.json``; a stopped one its newest ``checkpoint-N/`` to resume from.
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import shutil
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from accelerate.utils import broadcast_object_list
from datasets import Dataset
from torch.utils.data import DataLoader
from tqdm.auto import tqdm
from transformers import TrainerCallback
from transformers.trainer_callback import PrinterCallback
from trl import SFTConfig, SFTTrainer

from mcp_rl.config.sections import WarmStartConfig
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.generation.models import cpu_supports_bf16
from mcp_rl.training.checkpoints import (
    CheckpointMarker,
    last_complete_checkpoint,
    remove_incomplete_checkpoints,
)
from mcp_rl.training.lean_forward import supervised_loss

FINAL = "final"  # the finished warm start's model folder
STATS = "stats.json"  # written last: its presence means the warm start finished
SAVE_STEPS = 20  # as GRPO's default: a killed warm start loses at most this many batches


def episode_rows(episodes: Sequence[Trajectory]) -> dict[str, list[Any]]:
    """The dataset's columns, a row per episode: ``input_ids`` (prompt, completion), ``labels`` (-100 but on
    the tokens the model wrote) and ``prompt_length``."""
    rows: dict[str, list[Any]] = {"input_ids": [], "labels": [], "prompt_length": []}
    for episode in episodes:
        own = [t if m else -100 for t, m in zip(episode.completion_ids, episode.completion_mask, strict=True)]
        rows["input_ids"].append(episode.prompt_ids + episode.completion_ids)
        rows["labels"].append([-100] * len(episode.prompt_ids) + own)
        rows["prompt_length"].append(len(episode.prompt_ids))
    return rows


def episode_from_row(index: int, row: Mapping[str, Any]) -> Trajectory:
    """The token layout ``supervised_loss`` reads, back from a dataset row."""
    split = row["prompt_length"]
    return Trajectory(
        prompt_index=index,
        prompt_messages=[],
        prompt_ids=list(row["input_ids"][:split]),
        completion_ids=list(row["input_ids"][split:]),
        completion_mask=[int(label != -100) for label in row["labels"][split:]],
    )


def seeded_batches(episodes: int, config: WarmStartConfig) -> list[list[int]]:
    """The batches of episode indices the hand-written loop drew, in order: each epoch a shuffle with
    ``random.Random(config.seed)`` (one generator across epochs), cut into ``batch_size``, the last short."""
    order = random.Random(config.seed)
    batches = []
    for _ in range(config.epochs):
        shuffled = list(range(episodes))
        order.shuffle(shuffled)
        batches += [shuffled[s : s + config.batch_size] for s in range(0, episodes, config.batch_size)]
    return batches


class ShareOfBatch:
    """The collator: this process's share of a batch (every ``world_size``-th episode), and the weight
    that makes the processes' averaged gradient that of the whole batch's mean token loss.

    Each process's loss is the mean over its share's scored tokens, times its share of the batch's scored
    tokens and the number of processes: DDP's average over processes is then the mean over all the
    batch's tokens, as one process computes it. A process whose share is empty (a batch smaller than the
    number of processes) runs one episode at weight 0, so that it still takes part in the gradient sync.
    """

    def __init__(self, process_index: int, world_size: int) -> None:
        self.process_index = process_index
        self.world_size = world_size

    def __call__(self, rows: list[Mapping[str, Any]]) -> dict[str, Any]:
        episodes = [episode_from_row(i, row) for i, row in enumerate(rows)]
        share = episodes[self.process_index :: self.world_size]
        if not share:
            return {"episodes": episodes[:1], "weight": 0.0}
        if self.world_size == 1:
            return {"episodes": share, "weight": 1.0}
        scored = sum(sum(e.completion_mask) for e in share) / sum(sum(e.completion_mask) for e in episodes)
        return {"episodes": share, "weight": scored * self.world_size}


@contextmanager
def forward_replaced(module: torch.nn.Module, forward: Callable[[], torch.Tensor]) -> Iterator[None]:
    """Within: calling ``module`` (or the DDP wrapper around it) runs ``forward``. DDP prepares its
    gradient sync in its own forward, so the loss must be computed inside a call through the wrapper."""
    saved = vars(module).get("forward")  # accelerate's autocast wrapper, TRL's or our lean forward, or none
    module.forward = forward
    try:
        yield
    finally:
        if saved is None:
            del module.forward
        else:
            module.forward = saved


class DemonstrationTrainer(SFTTrainer):
    """``SFTTrainer`` on pre-tokenized episodes: the seeded batches, the shared-prefix loss, and log lines
    as ``warm_start/*`` keys at step 0 of the run (the warm start comes before GRPO's step 1)."""

    def __init__(self, *args: Any, batches: list[list[int]], pad_id: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.batches = batches
        self.pad_id = pad_id

    def get_train_dataloader(self) -> DataLoader:
        # Every process reads every batch (the collator takes its share): not sharded by accelerate, so
        # that a step is one of the seeded batches whatever the number of processes.
        return DataLoader(self.train_dataset, batch_sampler=self.batches, collate_fn=self.data_collator)

    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> torch.Tensor:
        inner = self.accelerator.unwrap_model(model)
        episodes, weight = inputs["episodes"], inputs["weight"]

        def loss() -> torch.Tensor:
            with torch.device(self.args.device):  # the batch tensors ``supervised_loss`` builds
                return supervised_loss(inner, episodes, self.pad_id) * weight

        with forward_replaced(inner, loss), self.accelerator.autocast():
            return model()

    def floating_point_ops(self, inputs: dict[str, Any]) -> float:
        return 0.0  # the batch holds episodes, not the ``input_ids`` transformers would count

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" not in logs:  # the end-of-training summary: the returned stats say it
            return
        line = {"warm_start/loss": logs["loss"], "warm_start/batch": float(self.state.global_step)}
        if logs.get("grad_norm") is not None:
            line["warm_start/grad_norm"] = float(logs["grad_norm"])
        self.state.log_history.append({**line, "step": self.state.global_step})  # checkpointed with it
        at_step_zero = copy.copy(self.state)
        at_step_zero.global_step = 0
        self.control = self.callback_handler.on_log(self.args, at_step_zero, self.control, line)


class WarmStartProgress(TrainerCallback):
    """The warm start's bar: batches done and the latest loss."""

    def __init__(self) -> None:
        self.bar: Any = None

    def on_train_begin(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if state.is_world_process_zero:
            self.bar = tqdm(total=state.max_steps, initial=state.global_step, desc="warm start", unit="batch")

    def on_log(
        self, args: Any, state: Any, control: Any, logs: Mapping[str, Any] | None = None, **_: Any
    ) -> None:
        if self.bar is not None and logs and "warm_start/loss" in logs:
            self.bar.n = int(logs["warm_start/batch"])
            self.bar.set_postfix(loss=f"{logs['warm_start/loss']:.3f}")

    def on_train_end(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        if self.bar is not None:
            self.bar.close()


class NewestCheckpointOnly(TrainerCallback):
    """After a checkpoint is marked complete, the older ones are removed: a warm start resumes only from
    its newest. Add after ``CheckpointMarker``."""

    def on_save(self, args: Any, state: Any, control: Any, **_: Any) -> None:
        newest = last_complete_checkpoint(args.output_dir)
        if args.should_save and newest is not None:
            for folder in Path(args.output_dir).glob("checkpoint-*"):
                if folder != Path(newest):
                    shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def random_state_kept() -> Iterator[None]:
    """The global random generators as they were, after: transformers seeds them when a trainer is built
    and a checkpoint restores them, and the GRPO run after the warm start must not sample differently."""
    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if cuda is not None:
            torch.cuda.set_rng_state_all(cuda)


def sft_config(
    config: WarmStartConfig, output_dir: Path, *, bf16: bool | None, save_steps: int, max_steps: int = -1
) -> SFTConfig:
    """The hand-written loop's optimisation as ``SFTConfig``: AdamW at ``learning_rate`` without weight
    decay, gradient norm clipped to 1, a constant rate without warm-up, one pass over the seeded batches
    (their epochs are already laid out), checkpoints every ``save_steps`` batches and at the end."""
    on_gpu = torch.cuda.is_available()
    return SFTConfig(
        output_dir=str(output_dir),
        optim="adamw_torch",  # torch's AdamW, as before (TRL's default is the fused one)
        learning_rate=config.learning_rate,
        weight_decay=0.0,
        max_grad_norm=1.0,
        lr_scheduler_type="constant",
        warmup_steps=0,
        num_train_epochs=1,
        max_steps=max_steps,
        per_device_train_batch_size=config.batch_size,
        seed=config.seed,
        use_cpu=not on_gpu,
        bf16=(on_gpu or cpu_supports_bf16()) if bf16 is None else bf16,
        activation_checkpointing=False,  # the shared prefix needs the key/value cache it would drop
        max_length=None,  # the episodes are taken whole, as the rollout wrote them
        dataset_kwargs={"skip_prepare_dataset": True},  # already tokenized, labels already masked
        remove_unused_columns=False,
        ddp_find_unused_parameters=False,  # every trainable weight takes part in the loss
        logging_steps=1,
        save_strategy="steps",
        save_steps=save_steps,
        report_to="none",
        disable_tqdm=True,  # WarmStartProgress instead of raw log dicts
    )


def finished_stats(output_dir: Path) -> dict[str, float] | None:
    """A finished warm start's stats, or None when ``output_dir`` holds none."""
    path = Path(output_dir) / STATS
    return json.loads(path.read_text()) if path.exists() and (path.parent / FINAL).is_dir() else None


def load_warm_start(model: Any, output_dir: Path) -> dict[str, float] | None:
    """The finished warm start's weights into ``model``, in place (under LoRA: its adapters); returns its
    stats, or None (and ``model`` untouched) when ``output_dir`` holds no finished warm start.

    What a resumed run needs when its warm start is done: the policy before its first GRPO checkpoint, and
    the KL reference (``beta > 0``) after a GRPO checkpoint replaced the policy's weights.
    """
    stats = finished_stats(output_dir)
    if stats is None:
        return None
    final = Path(output_dir) / FINAL
    if hasattr(model, "peft_config"):
        from peft import set_peft_model_state_dict
        from peft.utils import load_peft_weights

        set_peft_model_state_dict(model, load_peft_weights(str(final)))
    else:
        from safetensors.torch import load_model

        load_model(model, str(final / "model.safetensors"))  # one file up to transformers' 50 GB shards
    return stats


def loss_stats(trainer: DemonstrationTrainer, batches_per_epoch: int) -> dict[str, float]:
    """The numbers the hand-written loop returned, from every logged batch (a resumed run's included)."""
    losses = [entry["warm_start/loss"] for entry in trainer.state.log_history if "warm_start/loss" in entry]
    tail = max(1, batches_per_epoch // 2)  # the last half-epoch
    return {
        "warm_start/first_loss": losses[0],
        "warm_start/last_loss": sum(losses[-tail:]) / len(losses[-tail:]),
        "warm_start/batches": float(len(losses)),
    }


def train_on_demonstrations(
    model: Any,
    tokenizer: Any,
    episodes: Sequence[Trajectory],
    config: WarmStartConfig,
    *,
    output_dir: Path,
    callbacks: Sequence[TrainerCallback] = (),
    resume: bool = False,
    bf16: bool | None = None,
    stats: Mapping[str, float] | None = None,
    started: float | None = None,
    save_steps: int = SAVE_STEPS,
    max_steps: int = -1,
) -> dict[str, float]:
    """``config.epochs`` epochs of next-token loss on the episodes' own tokens, on ``model`` in place (its
    trainable weights); returns ``stats`` with ``warm_start/first_loss``, ``last_loss`` (the mean over the
    last half-epoch's batches), ``batches`` and ``wall_s`` added, as ``stats.json`` keeps them.

    Args:
        output_dir: the warm start's own folder (a run's ``warm_start/``): checkpoints, then ``final/``
            and ``stats.json``. Cleared first unless ``resume``.
        callbacks: get each batch's ``warm_start/loss``, ``warm_start/batch`` and ``warm_start/grad_norm``
            as a log line at step 0 (the run's ``MetricsFile`` writes them to ``metrics.jsonl``).
        resume: continue from the newest complete checkpoint; a finished warm start is not run again, its
            weights are loaded into ``model`` and its saved stats returned.
        bf16: mixed precision; None: where the machine has it (CUDA, or a CPU with AVX512-BF16/AMX).
            A run passes its GRPO trainer's setting: both trainers share one accelerate state.
        stats, started: the caller's numbers (demonstrations played, kept) to keep with the loss numbers,
            and the ``time.monotonic()`` that ``wall_s`` counts from (default: this call).
        save_steps: a checkpoint every this many batches (and one at the end).
        max_steps: stop after this many batches (-1: all), as a killed run would; nothing is marked
            finished then.

    Under ``accelerate launch`` every process trains on the main process's episodes (broadcast: a tool
    that answered one process differently cannot make their batches disagree).
    """
    started = time.monotonic() if started is None else started
    output_dir = Path(output_dir)
    if resume and (done := load_warm_start(model, output_dir)) is not None:
        return done
    args = sft_config(config, output_dir, bf16=bf16, save_steps=save_steps, max_steps=max_steps)
    rows = episode_rows(episodes)
    if args.world_size > 1:
        rows = broadcast_object_list([rows], from_process=0)[0]
    batches = seeded_batches(len(rows["input_ids"]), config)
    was_training = model.training
    with random_state_kept(), forward_kept(model):
        trainer = DemonstrationTrainer(
            model=model,
            args=args,
            data_collator=ShareOfBatch(args.process_index, args.world_size),
            train_dataset=Dataset.from_dict(rows),
            processing_class=tokenizer,
            callbacks=[CheckpointMarker(), NewestCheckpointOnly(), WarmStartProgress(), *callbacks],
            batches=batches,
            pad_id=tokenizer.pad_token_id,
        )
        trainer.remove_callback(PrinterCallback)
        checkpoint = prepare_folder(trainer, output_dir, resume=resume)
        try:
            trainer.train(resume_from_checkpoint=checkpoint)
            result = {
                **(stats or {}),
                **loss_stats(trainer, math.ceil(len(rows["input_ids"]) / config.batch_size)),
                "warm_start/wall_s": time.monotonic() - started,
            }
            if trainer.state.global_step == len(batches):
                finish(trainer, output_dir, result)
        finally:
            trainer.accelerator.free_memory()  # lets go of the DDP wrapper and the optimizer state
            model.train(was_training)
    return result


def completed_batches(output_dir: Path) -> int:
    """How many batches of the warm start in ``output_dir`` a resume will not run again: all of a
    finished one, those up to its newest complete checkpoint, or 0. (A run's ``metrics.jsonl`` keeps the
    warm start's lines up to there when it resumes.)"""
    if (stats := finished_stats(output_dir)) is not None:
        return int(stats["warm_start/batches"])
    checkpoint = last_complete_checkpoint(output_dir)
    return int(Path(checkpoint).name.split("-")[-1]) if checkpoint else 0


@contextmanager
def forward_kept(model: Any) -> Iterator[None]:
    """``model.forward`` as it was, after: accelerate wraps it in its autocast when the trainer prepares
    the model, and the GRPO trainer prepares the same model again."""
    saved = {name: vars(model)[name] for name in ("forward", "_original_forward") if name in vars(model)}
    try:
        yield
    finally:
        for name in ("forward", "_original_forward"):
            vars(model).pop(name, None)
        vars(model).update(saved)


def prepare_folder(trainer: DemonstrationTrainer, output_dir: Path, *, resume: bool) -> str | None:
    """The checkpoint to resume from (None: start over). Starting over clears the folder; a resume
    removes checkpoints whose save was cut short (it would be written into again, keeping stale files)."""
    if trainer.args.should_save:
        if not resume:
            shutil.rmtree(output_dir, ignore_errors=True)
        remove_incomplete_checkpoints(output_dir)
    trainer.accelerator.wait_for_everyone()
    return last_complete_checkpoint(output_dir) if resume else None


def finish(trainer: DemonstrationTrainer, output_dir: Path, stats: dict[str, float]) -> None:
    """``final/`` (written aside, then renamed into place), then ``stats.json`` (the mark of a finished
    warm start), then the checkpoints go: a finished warm start is never resumed."""
    partial = output_dir / f"{FINAL}.partial"
    trainer.save_model(str(partial))  # every process calls it; the main one writes
    if trainer.args.should_save:
        shutil.rmtree(output_dir / FINAL, ignore_errors=True)
        os.replace(partial, output_dir / FINAL)
        (output_dir / f"{STATS}.partial").write_text(json.dumps(stats, indent=1))
        os.replace(output_dir / f"{STATS}.partial", output_dir / STATS)
        for folder in output_dir.glob("checkpoint-*"):
            shutil.rmtree(folder, ignore_errors=True)
    trainer.accelerator.wait_for_everyone()
