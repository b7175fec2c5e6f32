"""The warm start's ``train_on_demonstrations`` in every process of a multi-process (DDP) launch, on CPU.

    accelerate launch --multi_gpu --num_processes 2 --num_machines 1 --mixed_precision no \\
        --dynamo_backend no tests/scripts/sft_two_processes.py OUTDIR

(``--multi_gpu`` picks accelerate's torchrun launcher; the trainer asks for ``use_cpu`` on a machine
without a GPU, so the processes form a gloo group. ``--cpu --num_processes 2`` would start one process.)

Each process builds the same tiny model and the same handful of episodes (made here, no tools), trains on
them in fp32 (so that the result can be compared with one process's to float rounding), and writes
``OUTDIR/rank<N>.json``: its rank, the process group, hashes of the weights before and after, and the
stats. ``tests/test_sft_warm_start.py`` reads those files and ``OUTDIR/warm_start/final``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

from tiny import TEST_SYSTEM, set_offline_env  # noqa: E402

set_offline_env()

import torch  # noqa: E402

from mcp_rl.config.sections import WarmStartConfig  # noqa: E402
from mcp_rl.env.trajectory import Trajectory  # noqa: E402

# Five episodes in batches of 2 over 2 epochs: the last batch of each epoch has one episode, so one of
# the two processes has an empty share there.
CONFIG = WarmStartConfig(demonstrations=["unused"], epochs=2, batch_size=2, learning_rate=3e-3, seed=1)
EPISODES = 5


def demonstration(tokenizer: Any, index: int) -> Trajectory:
    """A search, an observation (not scored), an answer: the token layout of a played demonstration."""
    question = f"In which year was town {index} founded?"
    messages = [{"role": "system", "content": TEST_SYSTEM}, {"role": "user", "content": question}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)

    def ids(text: str) -> list[int]:
        return tokenizer(text, add_special_tokens=False)["input_ids"]

    search, answer = ids(f"<search> town {index} </search>"), ids(f"<answer> {1700 + index} </answer>")
    observation = ids(f"<information> Doc 1(Title: Town {index}) founded in {1700 + index} </information>")
    return Trajectory(
        prompt_index=index,
        prompt_messages=messages,
        prompt_ids=ids(prompt),
        completion_ids=search + observation + answer,
        completion_mask=[1] * len(search) + [0] * len(observation) + [1] * len(answer),
    )


def demonstrations(tokenizer: Any, count: int = EPISODES) -> list[Trajectory]:
    return [demonstration(tokenizer, index) for index in range(count)]


def weights_hash(model: Any) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().contiguous().numpy().tobytes())
    return digest.hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("outdir", type=Path)
    options = parser.parse_args(argv)
    torch.set_num_threads(1)  # two processes on two cores; tiny matmuls gain nothing from threads

    from accelerate import PartialState
    from tiny_models import tiny_model_and_tokenizer

    from mcp_rl.training.sft import train_on_demonstrations

    model, tokenizer = tiny_model_and_tokenizer(seed=0)
    initial = weights_hash(model)
    stats = train_on_demonstrations(
        model,
        tokenizer,
        demonstrations(tokenizer),
        CONFIG,
        output_dir=options.outdir / "warm_start",
        bf16=False,
    )
    state = PartialState()
    result = {
        "rank": state.process_index,
        "world_size": state.num_processes,
        "distributed_type": str(state.distributed_type),
        "backend": state.backend,
        "initial": initial,
        "final": weights_hash(model),
        "stats": stats,
    }
    (options.outdir / f"rank{state.process_index}.json").write_text(json.dumps(result, indent=1))
    state.wait_for_everyone()
    state.destroy_process_group()


if __name__ == "__main__":
    main()
