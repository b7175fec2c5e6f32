"""mcp-rl: RL post-training for multi-turn tool use over MCP servers.

The public nouns, importable from here::

    from mcp_rl import BlockingToolPool, Environment, MCPGRPOTrainer, Rubric, load_recipe

Names are resolved on first use, so ``import mcp_rl`` stays cheap (no torch, TRL or MCP import until a
noun that needs one is touched): the command line starts fast and tools can be listed without a model.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# name -> the module that defines it
_EXPORTS = {
    # tools
    "ToolPool": "mcp_rl.tools",
    "BlockingToolPool": "mcp_rl.tools",
    "ToolResult": "mcp_rl.tools",
    "FailureKind": "mcp_rl.tools",
    "parse_mcp_servers": "mcp_rl.tools.server_config",
    "in_process": "mcp_rl.tools.server_config",
    # the environment and its episodes
    "Environment": "mcp_rl.env.environment",
    "RolloutEngine": "mcp_rl.env.engine",
    "Trajectory": "mcp_rl.env.trajectory",
    "TransformersGenerator": "mcp_rl.generation.base",
    "SamplingParams": "mcp_rl.generation.base",
    "build_parser": "mcp_rl.env.parsers",
    # rewards
    "exact_match": "mcp_rl.rewards",
    "f1": "mcp_rl.rewards",
    "format_reward": "mcp_rl.rewards",
    "tool_use": "mcp_rl.rewards",
    "answer_retrieved": "mcp_rl.rewards",
    "JudgeReward": "mcp_rl.rewards",
    "ToolVerificationReward": "mcp_rl.rewards",
    "build_reward_functions": "mcp_rl.rewards",
    "Rubric": "mcp_rl.rewards.rubric",
    "ScoredBatch": "mcp_rl.rewards.rubric",
    # models and training
    "load_model": "mcp_rl.generation.models",
    "MCPGRPOTrainer": "mcp_rl.training.trainer",
    # recipes
    "Recipe": "mcp_rl.config.sections",
    "ModelConfig": "mcp_rl.config.sections",
    "PromptConfig": "mcp_rl.config.sections",
    "RolloutConfig": "mcp_rl.config.sections",
    "load_recipe": "mcp_rl.config.recipe",
    # built-in data
    "builtin_dataset_dir": "mcp_rl.datasets",
}

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mcp_rl' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # resolved once
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
