"""``mcp-rl eval``, ``mcp-rl rollout`` and ``mcp-rl prompt``: the same engine as training, without TRL."""

from __future__ import annotations

import json
import sys
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from mcp_rl.config.sections import Recipe
from mcp_rl.env.data import check_data, load_split
from mcp_rl.env.environment import Environment
from mcp_rl.env.metrics import grouped_means, pass_at_k, truncated_share
from mcp_rl.env.prompt_fit import check_prompt_fits, context_tokens
from mcp_rl.env.recorder import user_prompt
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.errors import ConfigError, DataError
from mcp_rl.generation.models import load_model, load_tokenizer, pick_dtype, resolve_model_path
from mcp_rl.rewards import exact_match_score, f1_score
from mcp_rl.rewards.rubric import ScoredBatch
from mcp_rl.tools.server_logs import TextSink, command_server_log


@contextmanager
def recipe_environment(
    recipe: Recipe, model_path: str | None = None, errlog: TextSink | None = None
) -> Iterator[Environment]:
    """The recipe's Environment on its model (a checkpoint folder with ``model_path``), greedy-ready; the
    servers' stderr goes to ``errlog``. Servers and rewards come first: their mistakes show before a load."""
    if model_path:
        recipe.model.name_or_path = model_path
    with Environment.from_recipe(recipe, errlog=errlog) as environment:
        model, tokenizer = load_model(recipe.model, dtype=pick_dtype(recipe.model.dtype))
        model = _merge_adapters(model, recipe.model.name_or_path)
        model.eval()
        environment.use_model(model, tokenizer)
        environment.generator.sync(model, step=0)  # a backend with its own weights generates with these
        yield environment


def _merge_adapters(model: Any, path: str) -> Any:
    """A LoRA checkpoint holds adapters only; merge them so evaluation runs a plain model."""
    if not (Path(path) / "adapter_config.json").exists():
        return model
    from peft import PeftModel

    return PeftModel.from_pretrained(model, path).merge_and_unload()


def score(trajectory: Trajectory, golds: Sequence[str]) -> dict[str, float]:
    return {"em": exact_match_score(trajectory.answer, golds), "f1": f1_score(trajectory.answer, golds)}


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def training_tasks_warning(recipe: Recipe) -> str | None:
    """Why an eval would score the training tasks: no ``data.eval``, and ``data.train`` one file, which is
    taken whole whatever the split (a folder or a dataset has its own test split)."""
    if recipe.data.eval is not None or not Path(recipe.data.train).is_file():
        return None
    return (
        f"warning: data.eval is not set and data.train ({recipe.data.train}) is one file, taken whole: "
        "these are the training tasks; set data.eval (or --qa) to held-out ones"
    )


def evaluate(
    recipe: Recipe,
    *,
    model_path: str | None = None,
    split: str | None = None,
    limit: int | None = None,
    batch_size: int = 64,
    output: str | Path | None = None,
    samples: int = 0,
) -> dict[str, Any]:
    """Greedy episodes on held-out tasks scored by the recipe's own rewards (and EM/F1 on QA data), tool use
    and failures; writes a JSON report and one line per episode to ``<output>.trajectories.jsonl``.
    ``samples`` > 0: that many episodes per task, sampled as in training (``rollout.temperature``, ``top_p``),
    instead of one greedy episode — what GRPO sees, where greedy success shows what the policy prefers."""
    check_data(recipe, "eval", split)  # a missing column fails before the model loads
    warning = training_tasks_warning(recipe)
    if warning:
        print(warning, file=sys.stderr)  # stdout is the report
    source = recipe.data.eval or recipe.data.train
    rows = [dict(row) for row in load_split(recipe, "eval", split, limit or recipe.data.eval_limit)]
    rows = [row for row in rows for _ in range(samples)] if samples > 0 else rows
    started = time.monotonic()
    with (
        command_server_log("eval", report=output) as errlog,
        recipe_environment(recipe, model_path, errlog) as environment,
    ):
        scored = ScoredBatch(
            [], {name: [] for name in environment.rubric.names}, environment.rubric.weight_of
        )
        for start in tqdm(range(0, len(rows), batch_size), desc="eval", unit="batch"):
            batch = rows[start : start + batch_size]
            # Scored while the servers still run (tool-verified rewards call them), then released.
            episodes = environment.rollout_rows(batch, greedy=samples == 0)
            scored.extend(environment.score(episodes, batch))
    trajectories = scored.trajectories
    report = report_for(trajectories, rows)
    report["reward"] = _mean(scored.totals)
    report["rewards"] = {name: _mean(scores) for name, scores in scored.scores.items()}
    report["rewards_skipped"] = scored.skipped()  # each mean above leaves these episodes out
    report["reward_errors"] = scored.errors
    if samples > 1:  # per binary rubric entry: {"calculator_verified": {"1": ..., "2": ..., "4": ...}}
        passes = {name: pass_at_k(values, samples) for name, values in scored.scores.items()}
        report["pass_at_k"] = {name: by_k for name, by_k in passes.items() if by_k}
    column = recipe.data.report_by
    grouped = grouped_means(rows, scored.scores, column)
    if grouped:  # every reward and metric by the column's values: {"2": {"exact_match": ..., ...}}
        report[f"by_{column}"] = grouped
    report.update(
        recipe=recipe.name,
        model=recipe.model.name_or_path,
        questions=source,
        corpus=recipe.data.corpus,
        split=split or recipe.data.eval_split,
        samples_per_task=max(1, samples),
        decoding="greedy" if samples == 0 else f"sampled at temperature {recipe.rollout.temperature:g}",
        wall_s=round(time.monotonic() - started, 1),
    )
    if output is not None:
        path = Path(output)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(report, indent=2))
        with path.with_suffix(".trajectories.jsonl").open("w") as out:
            for trajectory, row, scores, total in zip(
                trajectories, rows, scored.rewards, scored.totals, strict=True
            ):
                record = {**trajectory.to_dict(), "task": user_prompt(trajectory), "row": row}
                record.pop("prompt_messages")
                record["rewards"] = scores
                record["reward"] = total
                if row.get("golden_answers") is not None:
                    record.update(score(trajectory, row["golden_answers"]))
                out.write(json.dumps(record, default=str) + "\n")
    return report


def report_for(trajectories: Sequence[Trajectory], rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Tool use, failures and finish reasons; EM and F1 when every row has golden answers."""
    n = max(1, len(trajectories))
    calls = [c for t in trajectories for c in t.calls]
    failures = Counter(c.failure for c in calls if c.failure)
    called = Counter(name for t in trajectories for name in {c.name for c in t.calls})
    report: dict[str, Any] = {"n": len(trajectories)}
    qa = bool(rows) and all(row.get("golden_answers") is not None for row in rows)
    scores = (
        [score(t, row["golden_answers"]) for t, row in zip(trajectories, rows, strict=True)] if qa else []
    )
    if qa:
        report["em"] = sum(s["em"] for s in scores) / n
        report["f1"] = sum(s["f1"] for s in scores) / n
    report.update(
        {
            "tool_calls_per_question": len(calls) / n,
            # By the tools the episodes called (a recipe's own: calculate, search, read_query, ...).
            "called_a_tool": sum(bool(t.calls) for t in trajectories) / n,
            "called_by_tool": {name: count / n for name, count in sorted(called.items())},
            "answered": sum(t.answer is not None for t in trajectories) / n,
            "call_failure_rate": sum(failures.values()) / len(calls) if calls else 0.0,
            "failures_by_kind": dict(failures),
            "parse_error_rate": sum(bool(turn.parse_errors) for t in trajectories for turn in t.turns)
            / max(1, sum(len(t.turns) for t in trajectories)),
            "finish_reasons": dict(Counter(t.finish_reason for t in trajectories)),
            "truncated": truncated_share(trajectories),
        }
    )
    return report


def show_rollouts(
    recipe: Recipe, *, n: int = 4, model_path: str | None = None, greedy: bool = False
) -> list[Trajectory]:
    """Print a few episodes turn by turn — what the model wrote, the call, the observation, the scores."""
    check_data(recipe)
    rows = [dict(row) for row in load_split(recipe, "train", limit=n)]
    with (
        command_server_log("rollout") as errlog,
        recipe_environment(recipe, model_path, errlog) as environment,
    ):
        trajectories = environment.rollout_rows(rows, greedy=greedy)
        scored = environment.score(trajectories, rows)
    for index, (trajectory, row, scores) in enumerate(
        zip(trajectories, rows, scored.rewards, strict=True), start=1
    ):
        print(f"\n━━ episode {index}: {user_prompt(trajectory)}")
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
        shown = ", ".join(f"{k} {'-' if v is None else f'{v:.2f}'}" for k, v in scores.items())
        golds = f", gold {row['golden_answers']}" if row.get("golden_answers") is not None else ""
        ending = f"finished by {trajectory.finish_reason}"
        print(f"  → answer {trajectory.answer!r}{golds}; rewards: {shown}; {ending}")
    for name, error in scored.errors.items():
        print(f"reward {name} failed: {error['first_error']}")
    return trajectories


def _section(title: str, body: str = "") -> str:
    return f"━━ {title}\n{body}" if body else f"━━ {title}"


def show_prompt(recipe: Recipe, *, row: int = 0, model_path: str | None = None) -> str:
    """The exact first messages of an episode on training row ``row``, part by part, as the model sees them.

    Starts the recipe's servers (for the tool schemas) and loads the tokenizer only, never the weights.
    Returns the text: system prompt, tool schemas where they are rendered, few-shot turns, the user turn, the
    chat-templated prompt with its token count, and the frame the engine writes around each observation.
    """
    check_data(recipe)
    rows = [dict(r) for r in load_split(recipe, "train", limit=row + 1)]
    if row >= len(rows):
        raise DataError(f"--row {row}: data.train has only {len(rows)} row(s); give --row 0..{len(rows) - 1}")
    tokenizer = load_tokenizer(resolve_model_path(model_path or recipe.model.name_or_path))
    with (
        command_server_log("prompt") as errlog,
        Environment.from_recipe(recipe, errlog=errlog, rewards=False) as environment,
    ):
        builder = environment.prompt_builder(tokenizer)  # the tool schemas are read; the servers can stop
    tools = builder.tools
    messages = builder.messages(rows[row])
    schemas = [tool.as_openai() for tool in tools] if builder.use_template_tools else None
    text = tokenizer.apply_chat_template(messages, tools=schemas, add_generation_prompt=True, tokenize=False)
    n_tokens = len(builder.encode(messages))

    def count(piece: str) -> int:
        return len(tokenizer(piece, add_special_tokens=False)["input_ids"])

    few_shot, model_name = len(recipe.prompt.few_shot), recipe.model.name_or_path
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else None
    if not tools:
        where = "no tools (tools.mcpServers is empty)"
    elif builder.use_template_tools:
        where = f"{len(tools)} tool schema(s), rendered by the chat template (tools=)"
    elif recipe.prompt.tools_in == "none":
        where = f"{len(tools)} tool(s), not described (prompt.tools_in: none)"
    else:
        where = f"{len(tools)} tool(s), described in the system prompt by the {recipe.parser.name} parser"
    parts = [
        _section(f"recipe {recipe.name}, row {row} of {recipe.data.train}, model {model_path or model_name}"),
        _section(f"system ({count(system)} tokens)", system) if system else _section("system: none"),
        _section(f"tools: {where}", json.dumps(schemas, indent=2, ensure_ascii=False) if schemas else ""),
    ]
    first = 1 if system else 0
    for i, message in enumerate(messages[first : first + few_shot], start=1):
        parts.append(_section(f"few-shot {i}/{few_shot}: {message['role']}", str(message["content"])))
    parts.append(_section("user (prompt.user_template)", str(messages[-1]["content"])))
    parts.append(_section(f"chat-templated prompt: {n_tokens} tokens", text))
    role = recipe.rollout.observation_role
    before, after = builder.observation_frame(role)
    parts.append(
        _section(
            f"observation frame (rollout.observation_role: {role}; "
            f"{count(before + after)} tokens around each observation)",
            f"{before}<observation>{after}",
        )
    )
    parts.append(f"prompt tokens: {n_tokens}")
    try:  # the tokenizer's own limit: `prompt` loads no weights
        check_prompt_fits(builder, recipe.rollout, context_tokens(tokenizer))
    except ConfigError as error:
        parts.append(f"does not fit: {error}")
    return "\n".join(parts) + "\n"
