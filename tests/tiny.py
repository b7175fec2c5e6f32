"""A tiny model that searches, a small real corpus and the GRPO run around them: shared by tests, the DDP
script and the GPU check.

Plain functions without pytest, so that scripts launched on their own (``accelerate launch
tests/scripts/ddp_train.py``, ``bench/gpu_check.py``) build exactly what the test fixtures build. Nothing
here imports more than the standard library until called.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]

TEST_SYSTEM = "Answer with the search tool."
TEST_QUESTIONS = ["Where does the fox live?", "Who founded the guild?", "In which year was the town founded?"]
SEARCH_EPISODE = [
    {"role": "user", "content": "Where does the fox live?"},
    {"role": "assistant", "content": "<search> fox </search>"},
    {"role": "user", "content": "<information>Doc 1(Title: Fox) The fox lives in Draskel.</information>"},
    {"role": "assistant", "content": "<answer> Draskel </answer>"},
]
# What scripts set (unless already set) before importing Hugging Face libraries: no network, no prompts.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "WANDB_MODE": "disabled",
}
PASSAGES = {
    "Fox": "The fox lives in Draskel, a town on the river Ober.",
    "Guild": "The Kessin Guild was founded by Velora Quint in 1842.",
    "Draskel": "Draskel is a town founded in 1701 by cartographers.",
    "Ober": "The Ober is a river that flows through Draskel and Morvane.",
}


def warm_up(model: Any, tokenizer: Any, conversations: list[Any], steps: int = 120, lr: float = 3e-3) -> None:
    """A short supervised warm-up so a random tiny model writes real actions (tests need tool calls).

    Runs on one CPU thread: a 100k-parameter model's matmuls are too small to split, and on a loaded
    machine OpenMP threads spin-waiting for each other made this 15x slower (40 s instead of 3 s).
    """
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        _warm_up(model, tokenizer, conversations, steps, lr)
    finally:
        torch.set_num_threads(threads)


def _warm_up(model: Any, tokenizer: Any, conversations: list[Any], steps: int, lr: float) -> None:
    import torch

    texts = [tokenizer.apply_chat_template(c, tokenize=False) for c in conversations]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    labels = batch["input_ids"].masked_fill(batch["attention_mask"] == 0, -100)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        loss = model(**batch, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.eval()


def searching_model(seed: int = 0, hidden_size: int = 64) -> tuple[Any, Any]:
    """A ~100k-parameter Llama that answers any question with a ``<search>`` and then an ``<answer>``.

    Built on the CPU (deterministic for a seed); callers move it to their device afterwards.
    """
    from tiny_models import tiny_model_and_tokenizer

    model, tokenizer = tiny_model_and_tokenizer(seed=seed, hidden_size=hidden_size)
    system = {"role": "system", "content": TEST_SYSTEM}
    conversations = [[system, {"role": "user", "content": q}, *SEARCH_EPISODE[1:]] for q in TEST_QUESTIONS]
    warm_up(model, tokenizer, conversations)
    return model, tokenizer


def tiny_prompt_config() -> Any:
    """Short prompts for tiny models: tool schemas go to the template (which ignores them), no few-shot."""
    from mcp_rl.config.sections import PromptConfig

    return PromptConfig(system=TEST_SYSTEM, tools_in="template")


def write_corpus(path: Path) -> Path:
    """A Search-R1 format corpus (JSON lines of ``id`` and ``contents``) of a few invented passages."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        for i, (title, text) in enumerate(PASSAGES.items()):
            out.write(json.dumps({"id": str(i), "contents": f'"{title}"\n{text}'}) + "\n")
    return path


def search_server_args(corpus: Path, cache_dir: Path) -> list[str]:
    """Arguments after ``python`` that start the real search tool server (BM25) on ``corpus``."""
    return ["-m", "tool_servers.search", "--corpus", str(corpus), "--cache-dir", str(cache_dir)]


def search_stdio_entry(corpus: Path, cache_dir: Path) -> dict[str, Any]:
    """An ``mcpServers`` entry for the search server as a stdio subprocess of this interpreter."""
    # sys.executable rather than "python": the pool resolves "python" the same way, but scripts run
    # from a bare PYTHONPATH (the GPU check) have no venv to resolve against.
    return {"command": sys.executable, "args": search_server_args(corpus, cache_dir), "cwd": str(ROOT)}


def set_offline_env(**extra: str) -> None:
    """``OFFLINE_ENV`` and ``extra`` into ``os.environ``, keeping what is already set there."""
    for name, value in {**OFFLINE_ENV, **extra}.items():
        os.environ.setdefault(name, value)


def child_pids() -> set[int]:
    """Live processes whose parent is this one (the pool spawns its stdio servers from a thread of ours)."""
    children = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == os.getpid() and fields[0] != "Z":
                children.add(int(entry))
    return children


def tiny_dataset(repeats: int) -> Any:
    """Each of ``TEST_QUESTIONS`` ``repeats`` times in a row, with the golden answer "Draskel"."""
    from datasets import Dataset

    return Dataset.from_list(
        [{"question": q, "golden_answers": ["Draskel"]} for q in TEST_QUESTIONS for _ in range(repeats)]
    )


def tiny_grpo_config(output_dir: Path | str, **overrides: Any) -> Any:
    """``GRPOConfig`` for a short CPU run of the tiny model: 2 steps of 4 completions (groups of 4), no
    checkpoints; ``overrides`` replace or add settings."""
    from trl import GRPOConfig

    from mcp_rl.config.sections import RolloutConfig

    settings = {
        "output_dir": str(output_dir),
        "max_steps": 2,
        "per_device_train_batch_size": 4,
        "num_generations": 4,
        "learning_rate": 1e-3,
        "logging_steps": 1,
        "report_to": "none",
        "use_cpu": True,
        "bf16": False,
        "gradient_checkpointing": False,
        "save_strategy": "no",
        "seed": 0,
        # As the Environment samples and budgets (RolloutConfig's defaults): the trainer checks they agree.
        "max_completion_length": RolloutConfig().max_completion_tokens,
        **overrides,
    }
    return GRPOConfig(**settings)


def searching_environment(
    model: Any,
    tokenizer: Any,
    pool: Any,
    *,
    generator: Any = None,
    max_new_tokens: int = 16,
    temperature: float = 1.0,
) -> Any:
    """The ``Environment`` of the tiny searching setup: Search-R1 tags, short prompts, 3 turns, no rubric."""
    from mcp_rl.config.sections import RolloutConfig
    from mcp_rl.env.environment import Environment
    from mcp_rl.generation.base import TransformersGenerator

    return Environment(
        tokenizer,
        generator or TransformersGenerator(model, tokenizer),
        pool=pool,
        parser="search_r1",
        prompt=tiny_prompt_config(),
        rollout=RolloutConfig(max_turns=3, max_new_tokens=max_new_tokens, temperature=temperature),
    )


def searching_trainer_kwargs(model: Any, tokenizer: Any, pool: Any, **environment: Any) -> dict[str, Any]:
    """``MCPGRPOTrainer`` arguments of the tiny searching setup: model, tokenizer, rewards, Environment."""
    from mcp_rl.rewards import exact_match, format_reward

    return {
        "model": model,
        "processing_class": tokenizer,
        "reward_funcs": [exact_match, format_reward],
        "environment": searching_environment(model, tokenizer, pool, **environment),
    }


@contextmanager
def searching_trainer(
    model: Any, tokenizer: Any, search_entry: dict[str, Any], output_dir: Path | str
) -> Iterator[Any]:
    """An ``MCPGRPOTrainer`` of the tiny searching setup on two questions, its real search server running
    until the block ends."""
    from mcp_rl.tools import BlockingToolPool
    from mcp_rl.tools.server_config import parse_mcp_servers
    from mcp_rl.training.trainer import MCPGRPOTrainer

    pool = BlockingToolPool(parse_mcp_servers({"search": search_entry})).start()
    try:
        yield MCPGRPOTrainer(
            args=tiny_grpo_config(output_dir),
            train_dataset=tiny_dataset(2),
            **searching_trainer_kwargs(model, tokenizer, pool),
        )
    finally:
        pool.close()


def tiny_search_settings(model_dir: Path, corpus: Path, qa: Path, **extra: object) -> list[str]:
    """``KEY=VALUE`` overrides (``--set``) that run the ``search`` recipe with the tiny model in seconds:
    short prompts, 16-token turns, 2 steps of 2 completions, a checkpoint per step."""
    settings: dict[str, object] = {
        "model.name_or_path": str(model_dir),
        "model.train_top_layers": 1,
        "data.train": str(qa),
        "data.eval": str(qa),
        "data.eval_split": "train",
        "data.corpus": str(corpus),
        "prompt.system": TEST_SYSTEM,
        "prompt.user_template": "'{question}'",
        "prompt.few_shot": "[]",
        "prompt.tools_in": "template",
        "rollout.max_new_tokens": 16,
        "trainer.max_steps": 2,
        "trainer.num_generations": 2,
        "trainer.per_device_train_batch_size": 2,
        "trainer.gradient_accumulation_steps": 1,
        "trainer.save_steps": 1,
        "trainer.learning_rate": 1e-3,
        "trainer.bf16": False,
        **extra,
    }
    return [f"{key}={value}" for key, value in settings.items()]


def tiny_search_overrides(model_dir: Path, corpus: Path, qa: Path, **extra: object) -> list[str]:
    """``tiny_search_settings`` as ``mcp-rl`` command-line arguments (``--set KEY=VALUE`` each)."""
    return [
        arg for setting in tiny_search_settings(model_dir, corpus, qa, **extra) for arg in ("--set", setting)
    ]


def mask_runs(mask: list[int], ids: list[int]) -> list[tuple[int, list[int]]]:
    """Consecutive (mask value, token ids) runs of a trajectory: model turns (1) and observations (0)."""
    out: list[tuple[int, list[int]]] = []
    for value, token in zip(mask, ids, strict=True):
        if out and out[-1][0] == value:
            out[-1][1].append(token)
        else:
            out.append((value, [token]))
    return out
