"""``mcp-rl eval`` and ``mcp-rl rollout``: the same engine as training, greedy, without TRL."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mcp_rl.assembly import recipe_parser, tool_pool
from mcp_rl.configs import Recipe
from mcp_rl.data import load_qa
from mcp_rl.engine import RolloutEngine
from mcp_rl.generation import Generator, TransformersGenerator
from mcp_rl.models import load_model, pick_dtype
from mcp_rl.pool import BlockingToolPool
from mcp_rl.prompts import PromptBuilder
from mcp_rl.rewards import exact_match_score, f1_score
from mcp_rl.trajectory import Trajectory


@dataclass
class Session:
    """Everything a rollout needs, built from a recipe; the pool is closed when the session ends."""

    engine: RolloutEngine
    prompts: PromptBuilder
    pool: BlockingToolPool


@contextmanager
def rollout_session(recipe: Recipe, model_path: str | None = None, errlog: Any = None) -> Iterator[Session]:
    """Load the model (a checkpoint folder with ``model_path``), start the tools, build the engine."""
    if model_path:
        recipe.model.name_or_path = model_path
    model, tokenizer = load_model(recipe.model, dtype=pick_dtype(recipe.model.dtype))
    model = _merge_adapters(model, recipe.model.name_or_path)
    model.eval()
    pool = tool_pool(recipe, errlog).start()
    try:
        parser = recipe_parser(recipe)
        parser.bind_tools([tool.as_dict() for tool in pool.tools])
        prompts = PromptBuilder(recipe.prompt, parser, pool.tools, tokenizer)
        generator: Generator = TransformersGenerator(model, tokenizer, recipe.rollout.batch_size)
        if recipe.rollout.backend == "vllm":
            from mcp_rl.models import resolve_model_path
            from mcp_rl.vllm_backend import VLLMGenerator

            generator = VLLMGenerator(resolve_model_path(recipe.model.name_or_path), tokenizer=tokenizer)
        engine = RolloutEngine(generator, tokenizer, parser, prompts, pool, recipe.rollout)
        yield Session(engine, prompts, pool)
    finally:
        pool.close()


def _merge_adapters(model: Any, path: str) -> Any:
    """A LoRA checkpoint holds adapters only; merge them so evaluation runs a plain model."""
    if not (Path(path) / "adapter_config.json").exists():
        return model
    from peft import PeftModel

    return PeftModel.from_pretrained(model, path).merge_and_unload()


def score(trajectory: Trajectory, golds: Sequence[str]) -> dict[str, float]:
    return {"em": exact_match_score(trajectory.answer, golds), "f1": f1_score(trajectory.answer, golds)}


def evaluate(
    recipe: Recipe,
    *,
    model_path: str | None = None,
    split: str | None = None,
    limit: int | None = None,
    batch_size: int = 64,
    output: str | Path | None = None,
) -> dict[str, Any]:
    """Greedy episodes on held-out questions: EM, F1, tool use and failures; writes a JSON report."""
    source = recipe.data.eval or recipe.data.train
    dataset = load_qa(source, split or recipe.data.eval_split, limit or recipe.data.eval_limit)
    rows = [dict(row) for row in dataset]
    started = time.monotonic()
    trajectories: list[Trajectory] = []
    with rollout_session(recipe, model_path) as session:
        for start in tqdm(range(0, len(rows), batch_size), desc="eval", unit="batch"):
            batch = rows[start : start + batch_size]
            messages = [session.prompts.messages(row) for row in batch]
            trajectories += session.engine.rollout(messages, greedy=True)
    report = report_for(trajectories, rows)
    report.update(
        recipe=recipe.name,
        model=recipe.model.name_or_path,
        questions=source,
        corpus=recipe.data.corpus,
        split=split or recipe.data.eval_split,
        wall_s=round(time.monotonic() - started, 1),
    )
    if output is not None:
        path = Path(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2))
        with path.with_suffix(".trajectories.jsonl").open("w") as out:
            for trajectory, row in zip(trajectories, rows, strict=True):
                record = {
                    **trajectory.to_dict(),
                    "question": row["question"],
                    "golden_answers": row["golden_answers"],
                }
                record.pop("prompt_messages")
                out.write(
                    json.dumps({**record, **score(trajectory, row["golden_answers"])}, default=str) + "\n"
                )
    return report


def report_for(trajectories: Sequence[Trajectory], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    n = max(1, len(trajectories))
    scores = [score(t, row["golden_answers"]) for t, row in zip(trajectories, rows, strict=True)]
    calls = [c for t in trajectories for c in t.calls]
    failures = Counter(c.failure for c in calls if c.failure)
    report: dict[str, Any] = {
        "n": len(trajectories),
        "em": sum(s["em"] for s in scores) / n,
        "f1": sum(s["f1"] for s in scores) / n,
        "tool_calls_per_question": len(calls) / n,
        "searched": sum(bool(t.calls) for t in trajectories) / n,
        "answered": sum(t.answer is not None for t in trajectories) / n,
        "call_failure_rate": sum(failures.values()) / len(calls) if calls else 0.0,
        "failures_by_kind": dict(failures),
        "parse_error_rate": sum(bool(turn.parse_errors) for t in trajectories for turn in t.turns)
        / max(1, sum(len(t.turns) for t in trajectories)),
        "finish_reasons": dict(Counter(t.finish_reason for t in trajectories)),
    }
    hops = Counter(row.get("hops") for row in rows if row.get("hops") is not None)
    if hops:
        report["em_by_hops"] = {
            str(h): sum(s["em"] for s, row in zip(scores, rows, strict=True) if row.get("hops") == h) / count
            for h, count in sorted(hops.items())
        }
    return report


def show_rollouts(
    recipe: Recipe, *, n: int = 4, model_path: str | None = None, greedy: bool = False
) -> list[Trajectory]:
    """Print a few episodes turn by turn — what the model wrote, the call, the observation, the score."""
    rows = [dict(row) for row in load_qa(recipe.data.train, recipe.data.train_split, n)]
    with rollout_session(recipe, model_path) as session:
        trajectories = session.engine.rollout([session.prompts.messages(r) for r in rows], greedy=greedy)
    for index, (trajectory, row) in enumerate(zip(trajectories, rows, strict=True), start=1):
        print(f"\n━━ episode {index}: {row['question']}")
        for number, turn in enumerate(trajectory.turns, start=1):
            print(f"  [model {number}] {turn.text.strip()}")
            for call in turn.calls:
                status = "ok" if call.ok else f"FAILED: {call.failure}"
                arguments = json.dumps(call.arguments, ensure_ascii=False)
                print(f"  [call] {call.name}({arguments}) → {status}, {call.latency_s * 1000:.0f} ms")
            for error in turn.parse_errors:
                print(f"  [parse error] {error}")
            if turn.observation:
                print("  [observation] " + turn.observation.strip().replace("\n", "\n                ")[:600])
        result = score(trajectory, row["golden_answers"])
        print(
            f"  → answer {trajectory.answer!r}, gold {row['golden_answers']}, EM {result['em']:.0f}, "
            f"F1 {result['f1']:.2f}, finished by {trajectory.finish_reason}"
        )
    return trajectories
