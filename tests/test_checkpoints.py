"""Checkpoints: the optimizer state is kept only in the newest complete checkpoint (the one ``--resume``
reads), the run says what a checkpoint holds, and a resume still continues from the newest."""

from __future__ import annotations

import json

from conftest import run_cli
from tiny import tiny_search_overrides as overrides

from mcp_rl.training.checkpoints import checkpoint_contents, last_complete_checkpoint, optimizer_files


def test_only_the_newest_checkpoint_keeps_its_optimizer_state_and_a_resume_continues(
    tiny_model_dir, tiny_corpus, tiny_qa, tmp_path
):
    out = tmp_path / "run"
    args = ["train", "--recipe", "search", "-o", str(out), *overrides(tiny_model_dir, tiny_corpus, tiny_qa)]
    first = run_cli(*args, "--set", "trainer.max_steps=3", timeout_s=300)
    assert first.returncode == 0, first.stderr[-3000:]
    folders = [out / f"checkpoint-{step}" for step in (1, 2, 3)]
    assert last_complete_checkpoint(out) == str(folders[-1])
    assert [bool(optimizer_files(folder)) for folder in folders] == [False, False, True]
    for folder in folders:  # every checkpoint still loads as a model and knows its step, scheduler and RNG
        assert (folder / "model.safetensors").exists() and (folder / "scheduler.pt").exists()
        assert (folder / "rng_state.pth").exists() and (folder / "trainer_state.json").exists()
    summary = json.loads((out / "summary.json").read_text())
    assert summary["checkpoints"] == {folder.name: checkpoint_contents(folder) for folder in folders}
    newest = summary["checkpoints"]["checkpoint-3"]
    assert newest["optimizer"] > 0 and newest["weights"] > 0
    assert newest["total"] == sum((folders[-1] / name).stat().st_size for name in _files(folders[-1]))
    assert summary["checkpoints"]["checkpoint-1"]["optimizer"] == 0
    assert (
        "checkpoint-1: " in first.stdout
        and "= weights " in first.stdout
        and "optimizer state" in first.stdout
    )

    resumed = run_cli(*args, "--resume", "--set", "trainer.max_steps=4", timeout_s=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["resumed_from"] == str(folders[-1]) and summary["steps"] == 4
    assert [bool(optimizer_files(out / f"checkpoint-{step}")) for step in (1, 2, 3, 4)] == [
        False,
        False,
        False,
        True,
    ]


def _files(folder) -> list[str]:
    return [str(path.relative_to(folder)) for path in folder.rglob("*") if path.is_file()]
