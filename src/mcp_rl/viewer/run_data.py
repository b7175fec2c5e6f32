"""One run folder and some eval reports: what the page shows, re-read as the files grow."""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from mcp_rl.config.sections import PromptConfig
from mcp_rl.env.prompts import template_fields
from mcp_rl.errors import ConfigError
from mcp_rl.tools.server_config import redacted_servers, server_secrets
from mcp_rl.viewer.episodes import TRUNCATION_MARKS, EpisodeSource
from mcp_rl.viewer.jsonl import GrowingJsonl
from mcp_rl.viewer.redaction import Redactor, environment_secrets

TRAJECTORIES_SUFFIX = ".trajectories.jsonl"  # what `mcp-rl eval --output X.json` writes beside X.json


def trace_paths(run_dir: Path) -> list[Path]:
    """``traces.jsonl``, or one file per process (``traces.rank0.jsonl``, ...) from a multi-process run."""
    single = run_dir / "traces.jsonl"
    return [single] if single.exists() else sorted(run_dir.glob("traces.rank*.jsonl"))


def trajectories_path(report: Path) -> Path:
    return report.with_suffix(TRAJECTORIES_SUFFIX)


def reward_weights(recipe: dict[str, Any] | None) -> dict[str, float]:
    """The recipe's reward weights by the name each reward is logged under (its ``label``, else its name)."""
    weights: dict[str, float] = {}
    for spec in (recipe or {}).get("rewards") or []:
        if isinstance(spec, dict) and spec.get("name"):
            options = spec.get("options") or {}
            name = str(options.get("label") or spec.get("label") or spec["name"]).rsplit(":", 1)[-1]
            weights.setdefault(name, float(spec.get("weight", 1.0)))
    return weights


def task_columns(recipe: dict[str, Any] | None) -> list[str]:
    """The dataset columns the recipe's user prompt template names (the default template's without one)."""
    template = ((recipe or {}).get("prompt") or {}).get("user_template")
    return template_fields(template if isinstance(template, str) else PromptConfig().user_template)


def _finite_numbers(row: dict[str, Any]) -> dict[str, float]:
    return {
        key: float(value)
        for key, value in row.items()
        if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    }


class MetricsLog:
    """``metrics.jsonl`` as rows of numbers (anything else in a line is left out), read as it grows."""

    def __init__(self, path: Path) -> None:
        self.file = GrowingJsonl(path)
        self.rows: list[dict[str, float]] = []
        self.generation = 0

    def refresh(self) -> None:
        if self.file.stale():
            self.file.rewind()
            self.rows = []
            self.generation += 1
        for lines in self.file.read_new():
            self.rows += [row for line in lines if "step" in (row := _finite_numbers(line.value))]


class RunData:
    """A run folder (metrics, traces, recipe) and eval reports, redacted, for the page and its API.

    Args:
        run_dir: the folder ``mcp-rl train`` wrote; it may be empty yet (a run about to start).
        reports: eval report JSON files (``mcp-rl eval --output``); their episodes come from the
            ``.trajectories.jsonl`` beside each. Reports inside ``run_dir`` are found without being named.

    Raises ``ConfigError`` (one line) for a folder or report that does not exist or cannot be read.
    """

    def __init__(self, run_dir: str | Path, reports: Sequence[str | Path] = ()) -> None:
        self.run_dir = Path(run_dir)
        if not self.run_dir.is_dir():
            what = "is a file" if self.run_dir.exists() else "does not exist"
            raise ConfigError(f"{self.run_dir} {what}; give the folder a run writes (mcp-rl train -o DIR)")
        recipe = self._read_recipe()
        servers = ((recipe or {}).get("tools") or {}).get("mcpServers") or {}
        self.redactor = Redactor([*server_secrets(servers), *environment_secrets()])
        if recipe is not None and servers:
            recipe["tools"]["mcpServers"] = redacted_servers(servers)
        self.recipe = self.redactor.value(recipe) if recipe is not None else None
        self.metrics = MetricsLog(self.run_dir / "metrics.jsonl")
        self.weights = reward_weights(recipe)
        self.task_columns = task_columns(recipe)
        self.sources: dict[str, EpisodeSource] = {
            "train": EpisodeSource(
                "train",
                "training episodes",
                lambda: trace_paths(self.run_dir),
                self.redactor,
                None,
                self.weights,
                self.task_columns,
            )
        }
        self.notes: list[str] = []
        found = sorted(p for p in self.run_dir.glob("*.json") if trajectories_path(p).exists())
        given = [Path(r) for r in reports]
        seen: set[Path] = set()
        for path in [*given, *found]:
            if path.resolve() not in seen:
                seen.add(path.resolve())
                self._add_report(path)
        self._lock = threading.Lock()

    def _read_recipe(self) -> dict[str, Any] | None:
        path = self.run_dir / "recipe.yaml"
        if not path.exists():
            return None
        try:
            loaded = yaml.safe_load(path.read_text())
        except yaml.YAMLError as error:
            raise ConfigError(f"{path}: not valid YAML ({error})") from None
        return loaded if isinstance(loaded, dict) else None

    def _add_report(self, path: Path) -> None:
        try:
            report = json.loads(path.read_text())
        except FileNotFoundError:
            raise ConfigError(f"{path}: no such eval report (mcp-rl eval --output writes one)") from None
        except (OSError, ValueError) as error:
            raise ConfigError(f"{path}: not a JSON eval report ({error})") from None
        if not isinstance(report, dict):
            raise ConfigError(f"{path}: not an eval report (a JSON object of numbers)")
        episodes = trajectories_path(path)
        if not episodes.exists():
            self.notes.append(f"{path.name}: no {episodes.name} beside it, so its numbers only")
        name = f"eval{sum(s.report is not None for s in self.sources.values()) + 1}"
        model = report.get("model")
        label = f"eval {path.name}" + (f" (model {model})" if model else "")
        self.sources[name] = EpisodeSource(
            name,
            self.redactor.text(label),
            lambda: [episodes],
            self.redactor,
            self.redactor.value(report),
            task_columns=self.task_columns,
        )

    # -- reading --------------------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read what every file gained (one refresh at a time; requests never wait for one)."""
        with self._lock:
            self.metrics.refresh()
            for source in self.sources.values():
                source.refresh()

    def meta(self) -> dict[str, Any]:
        """The run at a glance: names, recipe (redacted), per-source counts and problems, notes."""
        train = self.sources["train"]
        notes = list(self.notes)
        if not self.metrics.file.path.exists() and not train.files:
            notes.append(
                f"{self.run_dir} has no metrics.jsonl and no traces.jsonl yet: not a run folder, or a run "
                "that has not finished its first step (this page fills in as they appear)"
            )
        sources = []
        for source in self.sources.values():
            errors = source.errors
            sources.append(
                {
                    "name": source.name,
                    "label": source.label,
                    "kind": "eval" if source.report is not None else "train",
                    "files": [path.name for path in source.files],
                    "count": len(source),
                    "generation": source.generation,
                    "indexing": source.indexing,
                    "errors": errors[:20],
                    "error_count": len(errors),
                    "report": source.report,
                }
            )
        recipe = self.recipe or {}
        return {
            "run": self.run_dir.resolve().name,
            "run_dir": str(self.run_dir),
            "recipe_name": recipe.get("name"),
            "model": (recipe.get("model") or {}).get("name_or_path"),
            "recipe_yaml": yaml.safe_dump(self.recipe, sort_keys=False, allow_unicode=True)
            if self.recipe
            else None,
            "markers": list(TRUNCATION_MARKS),
            "metrics": {
                "count": len(self.metrics.rows),
                "generation": self.metrics.generation,
                "errors": self.metrics.file.errors[:20],
            },
            "sources": sources,
            "notes": notes,
        }

    def metrics_since(self, since: int) -> dict[str, Any]:
        rows = self.metrics.rows
        return {"generation": self.metrics.generation, "total": len(rows), "items": rows[since:]}
