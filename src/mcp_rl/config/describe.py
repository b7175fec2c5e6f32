"""``mcp-rl recipes show NAME --fields``: every recipe field with its type, default, help and bounds.

The text is made from the models of ``mcp_rl.config.sections`` themselves, so the documentation cannot
drift from what a recipe accepts.
"""

from __future__ import annotations

from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo

from mcp_rl.config.errors import BOUND_WORDS, is_model, show_value, type_members
from mcp_rl.config.sections import Recipe, RewardSpec

__all__ = ["STEP_SIZE_FIELDS", "describe_recipe_fields"]

# TRL's own step-size and advantage settings, set in the recipe's `trainer` section under these names.
STEP_SIZE_FIELDS = {
    "learning_rate": "Peak learning rate (TRL's default 1e-6). Adam moves every trained weight by about this "
    "much per step, whatever the signal.",
    "warmup_steps": "Steps over which the learning rate rises from 0 (Adam starts with empty moments: its "
    "first steps are lr * sign(gradient)). warmup_ratio gives it as a share of the run.",
    "lr_scheduler_type": "Schedule after the warm-up: constant, linear, cosine, constant_with_warmup, ...",
    "beta": "Weight of the KL penalty to the reference model, which is the warm-started policy when the "
    "recipe has a warm start (full weights and LoRA alike); 0 = no reference.",
    "scale_rewards": "group (divide advantages by each group's reward std: a 0.1 shaping gap becomes as "
    "large as an exact-match flip), batch (by the batch's std) or none.",
    "loss_type": "How token losses are averaged: dapo (default), dr_grpo, bnpo, grpo, ...",
    "epsilon_high": "Upper clip of the probability ratio (DAPO's clip-higher, 0.28); acts only when "
    "num_iterations > 1 (with 1, the ratio is exactly 1).",
    "num_generations": "Samples per question (the group): larger groups give a peaked policy more contrast.",
}


def _type_name(hint: Any) -> str:
    members = type_members(hint)
    if len(members) > 1:
        return " | ".join(_type_name(member) for member in members)
    hint = members[0]
    if get_origin(hint) is Literal:
        return " | ".join(repr(choice) for choice in get_args(hint))
    if get_origin(hint) in (list, dict):
        return f"{get_origin(hint).__name__}[{', '.join(_type_name(a) for a in get_args(hint))}]"
    if hint is type(None):
        return "null"
    return "Any" if hint is Any else getattr(hint, "__name__", str(hint))


def _bounds(info: FieldInfo) -> str:
    """A field's numeric bounds in words, e.g. ' Must be at least 1.'; '' when it has none."""
    words = []
    for bound in info.metadata:
        for attr, text in BOUND_WORDS.values():
            if getattr(bound, attr, None) is not None:
                words.append(f"{text.removeprefix('be ')} {getattr(bound, attr)}")
    return f" Must be {' and '.join(words)}." if words else ""


def _describe_fields(cls: type[BaseModel], prefix: str) -> list[str]:
    lines = []
    for name, info in cls.model_fields.items():
        default = info.get_default(call_default_factory=True)
        lines.append(f"  {prefix}{name}: {_type_name(info.annotation)} = {show_value(default)}")
        lines.append(f"      {info.description}{_bounds(info)}")
    return lines


def describe_recipe_fields() -> str:
    """Every recipe field with its type, default, help and bounds, section by section."""
    lines: list[str] = []
    for name, info in Recipe.model_fields.items():
        hint = info.annotation
        if is_model(hint):
            lines += ["", f"{name}: {info.description}", *_describe_fields(hint, f"{name}.")]
        elif name == "rewards":
            lines += ["", f"rewards: {info.description} Each item:", *_describe_fields(RewardSpec, "- ")]
        elif name == "trainer":
            lines += ["", f"trainer: {info.description} See help(trl.GRPOConfig). The step-size ones:"]
            for key, text in STEP_SIZE_FIELDS.items():
                lines += [f"  trainer.{key}", f"      {text}"]
        else:
            lines += [f"{name}: {_type_name(hint)} — {info.description}"]
    return "\n".join(lines).strip() + "\n"
