"""Two GRPO steps of ``MCPGRPOTrainer`` in every process of a multi-process (DDP) launch, on CPU.

    accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no \\
        --dynamo_backend no tests/scripts/ddp_train.py OUTDIR

(``--multi_gpu`` picks accelerate's torchrun launcher; with ``use_cpu=True`` below the processes form a
gloo group on the CPU. ``--cpu --num_processes 2`` would start a single process: accelerate's CPU launcher
spreads processes only through mpirun.)

Each process builds the tiny searching model of ``tests/tiny.py``, starts its own ``BlockingToolPool``
against the real search server (stdio) on a small corpus, trains, and writes ``OUTDIR/rank<N>.json``: what
it generated and called, per step, its local losses, its server processes, and which checkpoints it wrote.
``tests/test_distributed.py`` reads those files.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from tiny import (  # noqa: E402
    child_pids,
    search_stdio_entry,
    searching_model,
    searching_trainer_kwargs,
    set_offline_env,
    tiny_dataset,
    tiny_grpo_config,
    write_corpus,
)

# No process of this script may reach a network: everything it needs is built here.
set_offline_env(TRL_EXPERIMENTAL_SILENCE="1")

import torch  # noqa: E402

from mcp_rl.env.trajectory import Trajectory  # noqa: E402
from mcp_rl.tools import BlockingToolPool  # noqa: E402
from mcp_rl.tools.server_config import parse_mcp_servers  # noqa: E402
from mcp_rl.training.trainer import MCPGRPOTrainer  # noqa: E402


class RecordingTrainer(MCPGRPOTrainer):
    """``MCPGRPOTrainer`` that notes, per rollout batch, what this process alone generated and called."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.record: dict[str, list[Any]] = {
            "trajectories": [],
            "calls": [],
            "pool_calls": [],
            "model_tokens": [],
            "local_losses": [],
            "saves": [],
            "weight_writes": [],
        }
        record_writes(self.model, self.record["weight_writes"])

    def rollout(self, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        output = super().rollout(prompts, trainer)
        batch: list[Trajectory] = output["trajectories"]
        # The pool's counters are reset once the batch's rewards are in: now they are this batch's calls.
        pool = self.environment.tool_metrics()
        self.record["pool_calls"].append({k: v for k, v in pool.items() if k.endswith("/calls")})
        self.record["trajectories"].append(len(batch))
        self.record["calls"].append(sum(len(t.calls) for t in batch))
        self.record["model_tokens"].append(sum(t.completion_mask.count(1) + len(t.prompt_ids) for t in batch))
        return output

    def training_step(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        loss = super().training_step(*args, **kwargs)
        self.record["local_losses"].append(float(loss))
        return loss

    def _save(self, output_dir: str | None = None, state_dict: Any = None) -> None:
        # transformers calls `_save` on every rank and returns early where `should_save` is false; the
        # weights are written by `save_pretrained`, whose calls `record_writes` counts.
        self.record["saves"].append({"dir": str(output_dir), "should_save": self.args.should_save})
        super()._save(output_dir, state_dict)


def record_writes(model: Any, writes: list[str]) -> None:
    """Note every ``save_pretrained`` of ``model`` that this process really performs."""
    original = model.save_pretrained

    def save_pretrained(directory: Any, *args: Any, **kwargs: Any) -> Any:
        if kwargs.get("is_main_process", True):
            writes.append(str(directory))
        return original(directory, *args, **kwargs)

    model.save_pretrained = save_pretrained


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--steps", type=int, default=2)
    options = parser.parse_args(argv)
    out: Path = options.outdir
    # Tiny matmuls gain nothing from threads, and two processes on two cores must not oversubscribe them.
    torch.set_num_threads(1)

    args = tiny_grpo_config(
        out / "trainer",
        max_steps=options.steps,
        save_strategy="steps",
        save_steps=options.steps,
        disable_tqdm=True,
        ddp_find_unused_parameters=False,  # every parameter takes part in the loss: skip DDP's graph walk
    )
    rank, world_size = args.process_index, args.world_size
    own = out / f"rank{rank}"
    corpus = write_corpus(own / "corpus.jsonl")
    model, tokenizer = searching_model(seed=0)
    dataset = tiny_dataset(4)
    before = child_pids()
    pool = BlockingToolPool(parse_mcp_servers({"search": search_stdio_entry(corpus, own / "cache")})).start()
    server_pids = sorted(child_pids() - before)
    trainer = RecordingTrainer(
        args=args, train_dataset=dataset, **searching_trainer_kwargs(model, tokenizer, pool)
    )
    trainer.train()  # closes the Environment, whose pool stops the search server
    trainer.save_model(str(out / "final"))  # every rank calls it (FSDP/ZeRO-3 need that); rank 0 writes
    state = trainer.accelerator.state
    result = {
        "rank": rank,
        "world_size": world_size,
        "distributed_type": str(state.distributed_type),
        "backend": state.backend,
        "device": str(trainer.accelerator.device),
        "pid": os.getpid(),
        "server_pids": server_pids,
        "steps": trainer.state.global_step,
        "losses_finite": all(math.isfinite(v) for v in trainer.record["local_losses"]),
        **trainer.record,
        "log_history": trainer.state.log_history,
    }
    (out / f"rank{rank}.json").write_text(json.dumps(result, indent=1, default=str))
    trainer.accelerator.wait_for_everyone()
    trainer.accelerator.end_training()  # destroys the process group: no gloo warning at exit


if __name__ == "__main__":
    main()
