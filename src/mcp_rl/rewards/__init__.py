"""Reward functions in TRL's shape: rule rewards, an LLM judge, and rewards verified by calling an MCP tool.

One module per kind — :mod:`~mcp_rl.rewards.answers` (normalisation, EM/F1 scores, golden-answer columns),
:mod:`~mcp_rl.rewards.samples` (what each sample holds), :mod:`~mcp_rl.rewards.rules` (the rule rewards),
:mod:`~mcp_rl.rewards.judge` (the async LLM judge), :mod:`~mcp_rl.rewards.tool_verify` (tool-verified
rewards) — :mod:`~mcp_rl.rewards.registry`, which builds them from recipe specs by name, and
:mod:`~mcp_rl.rewards.rubric`, the rubric that holds them with their weights and scores episodes with them.
"""

from mcp_rl.rewards.answers import exact_match_score, f1_score, golden_list, normalize_answer
from mcp_rl.rewards.judge import (
    DEFAULT_JUDGE_TEMPLATE,
    JudgeBackend,
    JudgeReward,
    OpenAIJudge,
    TransformersJudge,
    parse_judge_score,
    render_judge_prompt,
)
from mcp_rl.rewards.registry import (
    BUILTIN_REWARDS,
    RewardFunction,
    bind_reward,
    build_reward_functions,
    import_object,
    is_async_reward,
)
from mcp_rl.rewards.rubric import Rubric, ScoredBatch, reward_arguments, weighted_total
from mcp_rl.rewards.rules import (
    answer_retrieved,
    called_twice,
    exact_match,
    f1,
    format_reward,
    format_score,
    tool_use,
)
from mcp_rl.rewards.samples import completion_text, sample_question, sample_rows, sample_trajectories
from mcp_rl.rewards.tool_verify import (
    ToolVerificationReward,
    fill_template,
    result_matches_answer,
    result_matches_golden,
    tool_says_true,
)

__all__ = [
    "BUILTIN_REWARDS",
    "DEFAULT_JUDGE_TEMPLATE",
    "JudgeBackend",
    "JudgeReward",
    "OpenAIJudge",
    "RewardFunction",
    "Rubric",
    "ScoredBatch",
    "ToolVerificationReward",
    "TransformersJudge",
    "answer_retrieved",
    "bind_reward",
    "build_reward_functions",
    "called_twice",
    "completion_text",
    "exact_match",
    "exact_match_score",
    "f1",
    "f1_score",
    "fill_template",
    "format_reward",
    "format_score",
    "golden_list",
    "import_object",
    "is_async_reward",
    "normalize_answer",
    "parse_judge_score",
    "render_judge_prompt",
    "result_matches_answer",
    "result_matches_golden",
    "reward_arguments",
    "sample_question",
    "sample_rows",
    "sample_trajectories",
    "tool_says_true",
    "tool_use",
    "weighted_total",
]
