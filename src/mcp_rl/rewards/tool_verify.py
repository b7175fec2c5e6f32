"""Rewards verified by calling an MCP tool: the tool (a calculator, a checker, a database) grades the answer.

Calls go through the trainer's own ``BlockingToolPool``, so they share its server connections; a batch's calls
go out together as one concurrent ``call_many``. Each call goes to the episode's own tools
(``Trajectory.tools``): a per-episode server is asked on the instance that episode used, after the episode,
so a reward can check the state the episode left. Declared in YAML, without Python::

    - name: tool_verify
      options:
        tool: sql                                   # run the row's reference query ...
        arguments: {query: "{reference_sql}"}
        expected: "{answer}"                        # ... and compare its rows with the model's answer
        compare: rows                               # equals | number | contains | json_path | rows

A check whose tool answered with an error (``isError``, or the server's ``errorPattern``) failed: reading
back a file the episode should have created and getting "no such file" is exactly what a state check is
for, so it scores ``error_score`` (0.0). Only a call that could not be made (server down, timeout,
connection lost) leaves its sample unscored (None) and is counted under ``skipped``.
"""

from __future__ import annotations

import inspect
import json
import re
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from mcp_rl.env.trajectory import Trajectory
from mcp_rl.errors import ConfigError
from mcp_rl.rewards.answers import exact_match_score, row_golds
from mcp_rl.rewards.compare import OPERATORS
from mcp_rl.rewards.samples import sample_question, sample_rows, sample_trajectories
from mcp_rl.tools import REWARD_RESULT_CHARS, FailureKind, ToolResult

ArgumentsSpec = Callable[[Trajectory, dict[str, Any]], Mapping[str, Any] | None] | Mapping[str, Any]
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TRUE_WORDS = frozenset({"true", "1", "1.0", "yes", "correct", "pass", "passed", "ok", "valid"})
_VERDICT_KEYS = ("correct", "result", "verdict", "passed", "valid", "ok")
# Failures that mean no call reached a working server: they say nothing about the episode.
CALL_NOT_MADE = frozenset({FailureKind.TIMEOUT, FailureKind.CONNECTION_LOST, FailureKind.UNAVAILABLE})


def fill_template(template: Any, values: Mapping[str, str]) -> Any:
    """Replace ``{name}`` in every string of a (nested) arguments template; unknown names stay as written."""
    if isinstance(template, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    if isinstance(template, Mapping):
        return {key: fill_template(value, values) for key, value in template.items()}
    if isinstance(template, list | tuple):
        return [fill_template(value, values) for value in template]
    return template


def _mentions(template: Any, placeholder: str) -> bool:
    if isinstance(template, str):
        return placeholder in template
    if isinstance(template, Mapping):
        return any(_mentions(value, placeholder) for value in template.values())
    return isinstance(template, list | tuple) and any(_mentions(value, placeholder) for value in template)


def tool_says_true(result: ToolResult, trajectory: Trajectory | None = None) -> float:
    """The default verdict: 1.0 if the tool answered true / 1 / yes / "correct", else 0.0."""
    value = result.structured
    if isinstance(value, Mapping):
        # MCP servers wrap a bare return value as {"result": value}; verifiers may name their verdict.
        key = next((k for k in _VERDICT_KEYS if k in value), None)
        value = value[key] if key else (next(iter(value.values())) if len(value) == 1 else None)
    if value is None or isinstance(value, Mapping | list):
        value = result.text
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value == 1)
    return float(str(value).strip().strip(".!\"'").lower() in _TRUE_WORDS)


def _same_number(left: str, right: str) -> bool:
    try:
        return Fraction(left.strip()) == Fraction(right.strip())
    except (ValueError, ZeroDivisionError):
        return False


def _same_value(tool_text: str, expected: str | None) -> bool:
    if expected is None:
        return False
    # A calculator may give both forms ("1/3 ≈ 0.3333333333"): either one matching is a match.
    candidates = [tool_text, *tool_text.split("≈")]
    return any(exact_match_score(c, [expected]) or _same_number(c, expected) for c in candidates)


def result_matches_answer(result: ToolResult, trajectory: Trajectory) -> float:
    """1.0 if the tool's result equals the model's answer (as text after normalisation, or as a number)."""
    return float(_same_value(result.text, trajectory.answer))


def result_matches_golden(result: ToolResult, trajectory: Trajectory, row: Mapping[str, Any]) -> float:
    """1.0 if the tool's result equals one of the sample's golden answers."""
    return float(any(_same_value(result.text, gold) for gold in row_golds(row)))


def _takes_row(function: Callable[..., Any]) -> bool:
    """Whether a score function accepts a third positional argument, the sample's dataset row."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


class ToolVerificationReward:
    """Score each sample by calling an MCP tool through the trainer's own ``BlockingToolPool``.

    ``arguments`` is either a function ``(trajectory, row) -> dict`` (return None to skip the call and score
    0.0) or a dict template whose strings may say ``{answer}`` (the model's answer), ``{question}``,
    ``{golden}`` (the first golden answer) or ``{<column>}``. A template that needs ``{answer}`` on a sample
    without one scores 0.0 without a call. All calls of a batch go out as one concurrent ``call_many``.

    ``score(result, trajectory[, row])`` maps a successful result to a reward (default: ``tool_says_true``);
    a result the tool answered with an error scores ``error_score`` instead.
    Or, without Python: ``compare`` names an operator of ``mcp_rl.rewards.compare`` (``compare_options``
    its settings: ``tolerance``, ``path``) that compares the result with ``expected`` (a template like
    ``"{answer}"``, ``"{golden}"`` or ``"1"``) or with the result of a ``reference`` call
    (``{"tool": ..., "arguments": {...}}``, e.g. the row's reference query): 1.0 when they agree.
    A call that could not be made gives None (TRL skips it) and is counted under ``skipped`` (by failure
    kind in ``skipped_by_kind``); an unknown tool is a configuration error.
    """

    def __init__(
        self,
        pool: Any,
        tool: str,
        arguments: ArgumentsSpec,
        score: Callable[..., float | None] | None = None,
        *,
        name: str = "tool_verify",
        timeout_s: float | None = None,
        compare: str | None = None,
        expected: str | None = None,
        reference: Mapping[str, Any] | None = None,
        compare_options: Mapping[str, Any] | None = None,
        error_score: float = 0.0,
    ) -> None:
        if compare is not None and compare not in OPERATORS:
            raise ConfigError(f"compare must be one of {', '.join(OPERATORS)}, got {compare!r}")
        if compare is not None and (expected is None) == (reference is None):
            raise ConfigError("compare needs exactly one of expected (a template) or reference (a tool call)")
        self.pool = pool
        self.tool = tool
        self.arguments = arguments
        self.compare = compare
        self.expected = expected
        self.reference = dict(reference) if reference is not None else None
        self.compare_options = dict(compare_options or {})
        self.score = score or tool_says_true
        self._score_takes_row = _takes_row(self.score)
        self.timeout_s = timeout_s
        self.error_score = float(error_score)
        self.__name__ = name
        self.counts: Counter[str] = Counter()
        self.skipped_by_kind: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"ToolVerificationReward(name={self.__name__!r}, tool={self.tool!r})"

    def _values(self, trajectory: Trajectory, row: dict[str, Any]) -> dict[str, str]:
        """What ``{name}`` in a template can say: every scalar column, the answer, question, golden."""
        golds = row_golds(row)
        values = {name: str(value) for name, value in row.items() if isinstance(value, str | int | float)}
        values.update(
            answer=trajectory.answer or "",
            question=sample_question(row, trajectory),
            golden=golds[0] if golds else "",
        )
        return values

    def _arguments_for(self, trajectory: Trajectory, row: dict[str, Any]) -> dict[str, Any] | None:
        if callable(self.arguments):
            arguments = self.arguments(trajectory, row)
            return None if arguments is None else dict(arguments)
        templates = [self.arguments, self.expected, self.reference]
        if trajectory.answer is None and any(_mentions(t, "{answer}") for t in templates if t is not None):
            return None
        return fill_template(self.arguments, self._values(trajectory, row))

    def _not_made(self, result: ToolResult) -> bool:
        """Whether the call never reached a working server (counted, its sample skipped); an unknown tool
        is a configuration error."""
        if result.failure is FailureKind.UNKNOWN_TOOL:
            raise ValueError(f"reward {self.__name__!r}: {result.text}")
        if result.failure in CALL_NOT_MADE:
            self.counts["skipped"] += 1
            self.skipped_by_kind[str(result.failure)] += 1
            return True
        return False

    def _answered_error(self, result: ToolResult) -> bool:
        """Whether the tool answered, with an error: the check ran and failed."""
        if result.ok:
            return False
        self.counts["tool_error"] += 1
        return True

    def _score_one(self, result: ToolResult, trajectory: Trajectory, row: dict[str, Any]) -> float | None:
        if self._not_made(result):
            return None
        if self._answered_error(result):
            return self.error_score
        value = (
            self.score(result, trajectory, row) if self._score_takes_row else self.score(result, trajectory)
        )
        return None if value is None else float(value)

    def _compared(
        self, result: ToolResult, trajectory: Trajectory, row: dict[str, Any], reference: ToolResult | None
    ) -> float | None:
        """``compare``'s verdict: the result against ``expected`` filled in, or the reference result. A
        reference that errs says nothing about the episode: its sample is skipped, counted."""
        if self._not_made(result):
            return None
        if self._answered_error(result):
            return self.error_score
        if reference is not None:
            if self._not_made(reference):
                return None
            if not reference.ok:  # the row's own reference query failed: a data problem, not the episode's
                self.counts["reference_error"] += 1
                return None
            expected = _as_text(reference)
        else:
            expected = fill_template(self.expected, self._values(trajectory, row))
        operator = OPERATORS[self.compare or "equals"]
        verdict = operator(result.text, expected, structured=result.structured, **self.compare_options)
        return float(verdict)

    def __call__(
        self,
        *,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        trajectories: Sequence[Trajectory] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        samples = sample_trajectories(trajectories, prompts, completions)
        rows = sample_rows(len(samples), kwargs, prompts)
        plans = [self._arguments_for(sample, row) for sample, row in zip(samples, rows, strict=True)]
        called = [i for i, arguments in enumerate(plans) if arguments is not None]
        calls: list[tuple[str, Mapping[str, Any] | None]] = [(self.tool, plans[i]) for i in called]
        if self.reference is not None:  # the reference calls go out with the others, in the same batch
            template = self.reference.get("arguments", {})
            calls += [
                (self.reference["tool"], fill_template(template, self._values(samples[i], rows[i])))
                for i in called
            ]
        episodes = [_episode(samples[i]) for i in called] * (2 if self.reference is not None else 1)
        results = self.pool.call_many(
            calls, timeout_s=self.timeout_s, episodes=episodes, budget_chars=REWARD_RESULT_CHARS
        )
        references: list[ToolResult | None] = list(results[len(called) :]) or [None] * len(called)
        scores: list[float | None] = [0.0] * len(samples)
        for i, result, reference in zip(called, results, references, strict=False):
            if self.compare is None:
                scores[i] = self._score_one(result, samples[i], rows[i])
            else:
                scores[i] = self._compared(result, samples[i], rows[i], reference)
        self.counts["calls"] += len(calls)
        if log_metric is not None and called:
            # Per call: a batch's skipped samples beside its mean, and how often the checked tool said no.
            not_made = sum(r.failure in CALL_NOT_MADE for r in results)
            answered_error = sum(not r.ok for r in results) - not_made
            log_metric(f"{self.__name__}/skipped_frac", not_made / len(results))
            log_metric(f"{self.__name__}/tool_error_frac", answered_error / len(results))
        return scores


def _episode(trajectory: Trajectory) -> Any:
    """The per-episode instances a sample used (None: the shared servers answer)."""
    tools = trajectory.tools
    return tools.episode if tools is not None else None


def _as_text(result: ToolResult) -> str:
    """A reference result as the text to compare with: its structured value as JSON when it has one."""
    value = result.structured
    if isinstance(value, Mapping) and set(value) == {"result"}:
        value = value["result"]
    return result.text if value is None else json.dumps(value)


__all__ = [
    "CALL_NOT_MADE",
    "ArgumentsSpec",
    "ToolVerificationReward",
    "fill_template",
    "result_matches_answer",
    "result_matches_golden",
    "tool_says_true",
]
