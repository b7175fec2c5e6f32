"""Rewards by name: the built-in rewards, and a recipe's reward specs → reward functions and their weights
(which ``mcp_rl.rewards.rubric.Rubric`` holds and scores with).

Every reward is a callable TRL's ``GRPOTrainer`` takes as is: called with keyword arguments (``prompts``,
``completions``, ``completion_ids``, every dataset column such as ``golden_answers``, ``trainer_state``,
``log_extra``, ``log_metric``, and ``trajectories`` from our trainer), it returns one ``float | None`` per
sample, or an awaitable of that list; ``None`` tells TRL to skip this reward for that sample. Its ``__name__``
is what TRL logs under ``rewards/<name>/mean``.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcp_rl.config.errors import did_you_mean
from mcp_rl.config.reward_options import (
    BUILTIN_REWARD_OPTIONS,
    FormatOptions,
    JudgeOptions,
    RewardOptions,
    ToolVerifyOptions,
)
from mcp_rl.errors import ConfigError
from mcp_rl.rewards.judge import (
    DEFAULT_JUDGE_TEMPLATE,
    JudgeBackend,
    JudgeReward,
    OpenAIJudge,
    TransformersJudge,
)
from mcp_rl.rewards.rules import answer_retrieved, called_twice, exact_match, f1, format_reward, tool_use
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


def validated_options(reward: str, options: Mapping[str, Any]) -> RewardOptions:
    """A built-in reward's options checked against its model (``mcp_rl.config.reward_options``): the one
    place they are parsed, whether they come from a recipe or from code."""
    try:
        return BUILTIN_REWARD_OPTIONS[reward].model_validate(dict(options))
    except ValidationError as error:
        problems = error.errors()
        unknown = sorted(str(p["loc"][0]) for p in problems if p["type"] == "extra_forbidden")
        if unknown:
            known = ", ".join(sorted(BUILTIN_REWARD_OPTIONS[reward].model_fields))
            raise ConfigError(f"unknown option(s) {unknown} for reward {reward!r}; known: {known}") from None
        first = problems[0]
        where = ".".join(str(part) for part in first["loc"])
        if first["type"] == "missing":
            raise ConfigError(f"reward {reward!r} needs the option {where!r}") from None
        raise ConfigError(f"reward {reward!r}: option {where}: {first['msg']}") from None


def _build_format(options: FormatOptions, pool: Any) -> RewardFunction:
    return bind_reward(format_reward, "format", {"partial_credit": float(options.partial_credit)})


def _judge_backend(options: JudgeOptions) -> JudgeBackend:
    if options.backend == "openai":
        if options.base_url is None:
            raise ConfigError("reward 'judge' needs the option 'base_url'")
        return OpenAIJudge(
            base_url=options.base_url,
            model=options.model,
            api_key_env=options.api_key_env,
            max_concurrency=options.max_concurrency,
            timeout_s=float(options.timeout_s),
            retries=options.retries,
            max_tokens=options.max_tokens,
            temperature=float(options.temperature),
            system_prompt=options.system_prompt,
        )
    if options.backend == "transformers":
        model, tokenizer = options.model, options.tokenizer
        if isinstance(model, str):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(tokenizer if isinstance(tokenizer, str) else model)
            model = AutoModelForCausalLM.from_pretrained(model)
        elif tokenizer is None:
            raise ConfigError("reward 'judge': a model object needs the option 'tokenizer' too")
        return TransformersJudge(
            model,
            tokenizer,
            max_new_tokens=options.max_new_tokens,
            batch_size=options.batch_size,
            system_prompt=options.system_prompt,
        )
    raise ConfigError(f"reward 'judge': unknown backend {options.backend!r}; known: openai, transformers")


def _build_judge(options: JudgeOptions, pool: Any) -> RewardFunction:
    template = options.template or DEFAULT_JUDGE_TEMPLATE
    return JudgeReward(_judge_backend(options), template, max_score=float(options.max_score))


_EXPECTATIONS: dict[str, Callable[..., float | None]] = {
    "true": tool_says_true,
    "answer": result_matches_answer,
    "golden": result_matches_golden,
}


def _build_tool_verify(options: ToolVerifyOptions, pool: Any) -> RewardFunction:
    if pool is None:
        raise ConfigError(
            "reward 'tool_verify' calls an MCP tool: pass the tool pool to build_reward_functions"
        )
    tool, arguments = options.tool, options.arguments
    if isinstance(arguments, str):  # "package.module:function" building the arguments
        arguments = import_object(arguments)
    expect, score = options.expect, options.score
    if score is not None:
        score = import_object(score) if isinstance(score, str) else score
    elif expect in _EXPECTATIONS:
        score = _EXPECTATIONS[expect]
    else:
        raise ConfigError(
            f"reward 'tool_verify': expect must be one of {sorted(_EXPECTATIONS)}, got {expect!r}"
        )
    timeout_s, error_score = options.timeout_s, float(options.error_score)
    compare, expected, reference = options.compare, options.expected, options.reference
    compare_options = {
        key: value
        for key, value in (("tolerance", options.tolerance), ("path", options.path))
        if value is not None
    }
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


def _no_options(function: RewardFunction) -> Callable[[RewardOptions, Any], RewardFunction]:
    return lambda options, pool: function


BUILTIN_REWARDS: dict[str, Callable[[Any, Any], RewardFunction]] = {
    "exact_match": _no_options(exact_match),
    "f1": _no_options(f1),
    "format": _build_format,
    "tool_use": _no_options(tool_use),
    "answer_retrieved": _no_options(answer_retrieved),
    "judge": _build_judge,
    "tool_verify": _build_tool_verify,
    "called_twice": _no_options(called_twice),  # a metric: give it weight 0
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
        return BUILTIN_REWARDS[name](validated_options(name, options), pool)
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


__all__ = [
    "BUILTIN_REWARDS",
    "RewardFunction",
    "bind_reward",
    "build_reward_functions",
    "import_object",
    "is_async_reward",
    "unknown_options",
]
