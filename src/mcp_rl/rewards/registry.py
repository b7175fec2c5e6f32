"""Rewards by name: the built-in rewards, and recipe specs → TRL's ``reward_funcs`` and ``reward_weights``.

Every reward is a callable TRL's ``GRPOTrainer`` takes as is: called with keyword arguments (``prompts``,
``completions``, ``completion_ids``, every dataset column such as ``golden_answers``, ``trainer_state``,
``log_extra``, ``log_metric``, and ``trajectories`` from our trainer), it returns one ``float | None`` per
sample, or an awaitable of that list; ``None`` tells TRL to skip this reward for that sample. Its ``__name__``
is what TRL logs under ``rewards/<name>/mean``.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import inspect
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcp_rl.config.sections import did_you_mean
from mcp_rl.errors import ConfigError
from mcp_rl.rewards.judge import (
    DEFAULT_JUDGE_TEMPLATE,
    JudgeBackend,
    JudgeReward,
    OpenAIJudge,
    TransformersJudge,
)
from mcp_rl.rewards.rules import answer_retrieved, exact_match, f1, format_reward, tool_use
from mcp_rl.rewards.samples import NOT_COLUMNS
from mcp_rl.rewards.tool_verify import (
    ToolVerificationReward,
    result_matches_answer,
    result_matches_golden,
    tool_says_true,
)

RewardFunction = Callable[..., Any]  # returns list[float | None], or an awaitable of it


def is_async_reward(function: RewardFunction) -> bool:
    """Whether calling ``function`` gives a coroutine: an ``async def``, or an object with async ``__call__``.

    TRL's own test: it awaits such rewards on its event loop, concurrently, and calls the others directly.
    """
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(type(function).__call__)


class _BoundReward:
    """A reward with fixed keyword options and its own display name (a class, not a closure: it pickles)."""

    def __init__(self, function: RewardFunction, name: str, options: Mapping[str, Any]) -> None:
        self.function = function
        self.options = dict(options)
        self.__name__ = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__name__!r}, options={sorted(self.options)})"

    def __call__(self, **kwargs: Any) -> Any:
        return self.function(**{**kwargs, **self.options})


class _AsyncBoundReward(_BoundReward):
    """The same for an async reward, kept async so TRL gathers it with the others on its event loop."""

    async def __call__(self, **kwargs: Any) -> Any:
        return await self.function(**{**kwargs, **self.options})


def bind_reward(
    function: RewardFunction, name: str, options: Mapping[str, Any] | None = None
) -> RewardFunction:
    """``function`` under ``name`` with keyword ``options`` fixed; async stays async (TRL's test for it)."""
    return (_AsyncBoundReward if is_async_reward(function) else _BoundReward)(function, name, options or {})


def _load_file(file: Path, base_dir: str | Path | None, spec: str) -> Any:
    """The module of a ``.py`` file (relative to ``base_dir``, default the working directory), loaded once."""
    resolved = (file if file.is_absolute() else Path(base_dir or Path.cwd()) / file).resolve()
    if not resolved.is_file():
        raise ConfigError(f"cannot import {spec!r}: no file {resolved}")
    name = "mcp_rl_user_rewards." + re.sub(r"\W", "_", str(resolved))
    if name in sys.modules:
        return sys.modules[name]
    module_spec = importlib.util.spec_from_file_location(name, resolved)
    if module_spec is None or module_spec.loader is None:
        raise ConfigError(f"cannot import {spec!r}: {resolved} is not a Python module")
    module = importlib.util.module_from_spec(module_spec)
    sys.modules[name] = module  # before running it, as import does (dataclasses and pickle look it up)
    try:
        module_spec.loader.exec_module(module)
    except Exception as error:
        del sys.modules[name]
        raise ConfigError(f"cannot import {spec!r}: {type(error).__name__} in {resolved}: {error}") from error
    return module


def import_object(path: str, base_dir: str | Path | None = None) -> Any:
    """``package.module:attribute`` or ``path/to/file.py:attribute`` → the attribute (dots after the colon
    walk into it). A relative file is found from ``base_dir`` (a recipe's folder; default: the working
    directory). Every failure is a one-line ``ValueError`` saying what was looked for and how to fix it."""
    module_name, _, attribute = path.rpartition(":")
    if not module_name or not attribute:
        raise ConfigError(f"expected 'package.module:function' or 'path/to/file.py:function', got {path!r}")
    if module_name.endswith(".py"):
        target: Any = _load_file(Path(module_name).expanduser(), base_dir, path)
    else:
        try:
            target = importlib.import_module(module_name)
        except ImportError as error:
            raise ConfigError(
                f"cannot import {path!r}: {error}; install its package or put its folder on PYTHONPATH, "
                "or name a file next to the recipe as 'file.py:function'"
            ) from error
        except Exception as error:  # the module itself failed while running
            raise ConfigError(f"cannot import {path!r}: {type(error).__name__}: {error}") from error
    for part in attribute.split("."):
        if not hasattr(target, part):
            found = sorted(n for n in dir(target) if not n.startswith("_") and callable(getattr(target, n)))
            raise ConfigError(
                f"cannot import {path!r}: {module_name} has no {part!r}"
                f"{did_you_mean(part, found)}; it has: {', '.join(found[:12]) or 'nothing callable'}"
            )
        target = getattr(target, part)
    return target


def unknown_options(function: Callable[..., Any], options: Mapping[str, Any]) -> list[str]:
    """The ``options`` keys ``function`` does not take as keyword arguments (none with ``**kwargs``)."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):  # builtins and some C callables have no signature: nothing to check
        return []
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters):
        return []
    names = {p.name for p in parameters if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    return sorted(key for key in options if key != "label" and key not in names)


class _Options:
    """A spec's options, taken one by one; whatever is left at the end is a mistake worth reporting."""

    def __init__(self, reward: str, options: Mapping[str, Any]) -> None:
        self.reward, self.left, self.known = reward, dict(options), ["label"]

    def take(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        self.known.append(key)
        if required and self.left.get(key) is None:
            raise ConfigError(f"reward {self.reward!r} needs the option {key!r}")
        return self.left.pop(key, default)

    def done(self) -> None:
        self.left.pop("label", None)
        if self.left:
            raise ConfigError(
                f"unknown option(s) {sorted(self.left)} for reward {self.reward!r}; "
                f"known: {', '.join(sorted(set(self.known)))}"
            )


def _build_format(options: _Options, pool: Any) -> RewardFunction:
    return bind_reward(
        format_reward, "format", {"partial_credit": float(options.take("partial_credit", 0.5))}
    )


def _judge_backend(options: _Options) -> JudgeBackend:
    backend = options.take("backend", "openai")
    if backend == "openai":
        return OpenAIJudge(
            base_url=options.take("base_url", required=True),
            model=options.take("model", required=True),
            api_key_env=options.take("api_key_env"),
            max_concurrency=int(options.take("max_concurrency", 8)),
            timeout_s=float(options.take("timeout_s", 30.0)),
            retries=int(options.take("retries", 2)),
            max_tokens=int(options.take("max_tokens", 64)),
            temperature=float(options.take("temperature", 0.0)),
            system_prompt=options.take("system_prompt"),
        )
    if backend == "transformers":
        model, tokenizer = options.take("model", required=True), options.take("tokenizer")
        if isinstance(model, str):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(tokenizer if isinstance(tokenizer, str) else model)
            model = AutoModelForCausalLM.from_pretrained(model)
        elif tokenizer is None:
            raise ConfigError("reward 'judge': a model object needs the option 'tokenizer' too")
        return TransformersJudge(
            model,
            tokenizer,
            max_new_tokens=int(options.take("max_new_tokens", 16)),
            batch_size=int(options.take("batch_size", 8)),
            system_prompt=options.take("system_prompt"),
        )
    raise ConfigError(f"reward 'judge': unknown backend {backend!r}; known: openai, transformers")


def _build_judge(options: _Options, pool: Any) -> RewardFunction:
    template = options.take("template", DEFAULT_JUDGE_TEMPLATE)
    max_score = float(options.take("max_score", 10.0))
    return JudgeReward(_judge_backend(options), template, max_score=max_score)


_EXPECTATIONS: dict[str, Callable[..., float | None]] = {
    "true": tool_says_true,
    "answer": result_matches_answer,
    "golden": result_matches_golden,
}


def _build_tool_verify(options: _Options, pool: Any) -> RewardFunction:
    if pool is None:
        raise ConfigError(
            "reward 'tool_verify' calls an MCP tool: pass the tool pool to build_reward_functions"
        )
    tool = options.take("tool", required=True)
    arguments = options.take("arguments", required=True)
    if isinstance(arguments, str):  # "package.module:function" building the arguments
        arguments = import_object(arguments)
    expect, score = options.take("expect", "true"), options.take("score")
    if score is not None:
        score = import_object(score) if isinstance(score, str) else score
    elif expect in _EXPECTATIONS:
        score = _EXPECTATIONS[expect]
    else:
        raise ConfigError(
            f"reward 'tool_verify': expect must be one of {sorted(_EXPECTATIONS)}, got {expect!r}"
        )
    timeout_s = options.take("timeout_s")
    error_score = float(options.take("error_score", 0.0))
    compare, expected = options.take("compare"), options.take("expected")
    reference = options.take("reference")
    compare_options = {key: options.take(key) for key in ("tolerance", "path")}
    compare_options = {key: value for key, value in compare_options.items() if value is not None}
    for needed in [tool, *([reference.get("tool")] if isinstance(reference, Mapping) else [])]:
        if pool.resolve(str(needed)) is None:  # found now, not as a crash in the middle of training
            names = ", ".join(spec.name for spec in pool.tools) or "none"
            raise ConfigError(f"reward 'tool_verify': no tool named {needed!r}; the servers have: {names}")
    return ToolVerificationReward(
        pool,
        tool,
        arguments,
        score,
        timeout_s=timeout_s,
        compare=compare,
        expected=None if expected is None else str(expected),
        reference=reference,
        compare_options=compare_options,
        error_score=error_score,
    )


def _no_options(function: RewardFunction) -> Callable[[_Options, Any], RewardFunction]:
    return lambda options, pool: function


BUILTIN_REWARDS: dict[str, Callable[[_Options, Any], RewardFunction]] = {
    "exact_match": _no_options(exact_match),
    "f1": _no_options(f1),
    "format": _build_format,
    "tool_use": _no_options(tool_use),
    "answer_retrieved": _no_options(answer_retrieved),
    "judge": _build_judge,
    "tool_verify": _build_tool_verify,
}


def _read_spec(spec: Any) -> tuple[str, float, dict[str, Any]]:
    """A spec → (name, weight, options): a name, a mapping (options nested or inline), or an object."""
    if isinstance(spec, str):
        return spec, 1.0, {}
    if isinstance(spec, Mapping):
        if "name" not in spec:
            raise ConfigError(f"a reward spec needs a 'name', got {dict(spec)}")
        inline = {key: value for key, value in spec.items() if key not in ("name", "weight", "options")}
        options = {**dict(spec.get("options") or {}), **inline}
        weight = spec.get("weight")
        return str(spec["name"]), 1.0 if weight is None else float(weight), options
    weight = getattr(spec, "weight", None)
    return (
        str(spec.name),
        1.0 if weight is None else float(weight),
        dict(getattr(spec, "options", None) or {}),
    )


def _build_one(name: str, options: Mapping[str, Any], pool: Any) -> RewardFunction:
    if name in BUILTIN_REWARDS:
        taken = _Options(name, options)
        function = BUILTIN_REWARDS[name](taken, pool)
        taken.done()
        return function
    if ":" in name:
        function = import_object(name)
        if not callable(function):
            raise ConfigError(f"reward {name!r} is not callable")
        extra = {key: value for key, value in options.items() if key != "label"}
        return (
            bind_reward(function, getattr(function, "__name__", name.rpartition(":")[2]), extra)
            if extra
            else function
        )
    raise ConfigError(
        f"unknown reward {name!r}; known: {', '.join(sorted(BUILTIN_REWARDS))}, "
        "or 'package.module:function' for your own"
    )


def _renamed(function: RewardFunction, name: str) -> RewardFunction:
    if getattr(function, "__name__", None) == name:
        return function
    if isinstance(function, JudgeReward | ToolVerificationReward | _BoundReward):
        function.__name__ = name  # our own objects: rename in place, keeping `counts` reachable
        return function
    return bind_reward(function, name)  # never rename a user's function itself


def build_reward_functions(
    specs: Sequence[Mapping[str, Any] | Any], pool: Any = None
) -> tuple[list[RewardFunction], list[float]]:
    """Recipe specs → (reward functions, weights) for ``GRPOTrainer(reward_funcs=...)`` and
    ``GRPOConfig(reward_weights=...)``.

    A spec is a name, a mapping ``{"name", "weight", "options"}`` (options may also sit inline), or an
    object with ``.name``/``.weight``/``.options``. The option ``label`` renames a reward in the logs;
    display names are made unique (``judge``, ``judge_2``) so TRL's per-reward metrics never collide.
    """
    functions: list[RewardFunction] = []
    weights: list[float] = []
    used: Counter[str] = Counter()
    for spec in specs:
        name, weight, options = _read_spec(spec)
        function = _build_one(name, options, pool)
        label = str(options.get("label") or getattr(function, "__name__", name))
        used[label] += 1
        if used[label] > 1:
            label = f"{label}_{used[label]}"
        functions.append(_renamed(function, label))
        weights.append(weight)
    return functions, weights


@dataclass
class BatchScores:
    """Each reward's per-sample scores on a batch (``None``: not scored), and the rewards that raised."""

    scores: dict[str, list[float | None]] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)  # reward name -> "ErrorType: message"


async def _awaited(value: Any) -> Any:
    return await value


def _ignore(*args: Any, **kwargs: Any) -> None:
    """``log_extra`` / ``log_metric`` outside a trainer: nothing is logged."""


def reward_arguments(trajectories: Sequence[Any], rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The keyword arguments TRL gives a reward for these episodes: ``prompts``, ``completions`` (the
    conversational form: the model's turns with the observations in place), ``completion_ids``, every dataset
    column as a list, ``trajectories``, and ``trainer_state``/``log_extra``/``log_metric`` stand-ins."""
    if len(trajectories) != len(rows):
        raise ValueError(f"got {len(trajectories)} trajectories for {len(rows)} dataset rows")
    names = list(dict.fromkeys(key for row in rows for key in row))
    columns = {
        name: [row.get(name) for row in rows]
        for name in names
        if name not in NOT_COLUMNS and name not in ("prompt", "completion")
    }
    return {
        "prompts": [t.prompt_messages for t in trajectories],
        "completions": [[{"role": "assistant", "content": t.transcript}] for t in trajectories],
        "completion_ids": [list(t.completion_ids) for t in trajectories],
        **columns,
        "trajectories": list(trajectories),
        "trainer_state": None,
        "log_extra": _ignore,
        "log_metric": _ignore,
    }


def weighted_total(scores: Mapping[str, float | None], weights: Mapping[str, float]) -> float | None:
    """The weighted sum TRL trains on (its ``nansum``: unscored rewards left out, weight 1 when unset); None
    when no function scored."""
    parts = [weights.get(name, 1.0) * score for name, score in scores.items() if score is not None]
    return sum(parts) if parts else None


def score_batch(
    functions: Sequence[RewardFunction], trajectories: Sequence[Any], rows: Sequence[Mapping[str, Any]]
) -> BatchScores:
    """Call each reward as TRL does (see :func:`reward_arguments`; async ones on the shared loop through
    ``mcp_rl.tools.bridge.run_sync``) → its scores by display name. A reward that raises or returns the wrong
    number of scores is recorded in ``errors`` with ``None`` scores; the others still run."""
    from mcp_rl.tools.bridge import run_sync  # the loop thread starts only when a batch is scored

    kwargs = reward_arguments(trajectories, rows)
    result = BatchScores()
    for function in functions:
        name = str(getattr(function, "__name__", type(function).__name__))
        try:
            if is_async_reward(function):
                values = run_sync(functools.partial(function, **kwargs))
            else:
                values = function(**kwargs)
                if inspect.isawaitable(values):  # a sync callable that hands back an awaitable
                    values = run_sync(_awaited, values)
            values = list(values)
            if len(values) != len(trajectories):
                raise ValueError(f"returned {len(values)} scores for {len(trajectories)} episodes")
            result.scores[name] = [None if value is None else float(value) for value in values]
        except Exception as error:
            result.errors[name] = f"{type(error).__name__}: {error}"
            result.scores[name] = [None] * len(trajectories)
    return result


__all__ = [
    "BUILTIN_REWARDS",
    "BatchScores",
    "RewardFunction",
    "bind_reward",
    "build_reward_functions",
    "import_object",
    "is_async_reward",
    "reward_arguments",
    "score_batch",
    "unknown_options",
    "weighted_total",
]
