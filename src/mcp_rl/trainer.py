"""``MCPGRPOTrainer``: TRL's GRPO with our rollout engine plugged in through ``_generate``.

The only module that touches TRL internals. TRL keeps everything it is good at (loss types, PEFT, the
reference model, vLLM weight sync, logging); we replace how completions come to be: multi-turn episodes
whose observation tokens come back with ``tool_mask`` 0, so TRL's loss ignores them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from trl import GRPOConfig, GRPOTrainer

from mcp_rl.configs import PromptConfig, RolloutConfig
from mcp_rl.engine import RolloutEngine, rollout_metrics
from mcp_rl.generation import Generator, TransformersGenerator
from mcp_rl.parsers import Parser, build_parser
from mcp_rl.pool import BlockingToolPool
from mcp_rl.prompts import PromptBuilder
from mcp_rl.trajectory import Trajectory


class MCPGRPOTrainer(GRPOTrainer):
    """GRPO over multi-turn MCP tool use.

    ``train_dataset`` rows need the columns ``prompt.user_template`` refers to (e.g. ``question``); a
    ``prompt`` column (the chat messages) is added here from the pool's tool schemas, the parser's format
    and the few-shot turns. Reward functions receive ``trajectories=`` besides TRL's usual arguments.
    The trainer owns ``pool``: it is closed when training ends.
    """

    def __init__(
        self,
        model: Any,
        reward_funcs: Callable[..., Any] | Sequence[Callable[..., Any]],
        args: GRPOConfig,
        train_dataset: Any,
        processing_class: Any,
        *,
        pool: BlockingToolPool,
        parser: Parser | str = "search_r1",
        prompt: PromptConfig | None = None,
        rollout: RolloutConfig | None = None,
        generator: Generator | None = None,
        close_pool: bool = True,
        **kwargs: Any,
    ) -> None:
        self.pool = pool
        self.close_pool = close_pool
        self.rollout_config = rollout or RolloutConfig()
        self.parser = build_parser(parser) if isinstance(parser, str) else parser
        self.parser.bind_tools([tool.as_dict() for tool in pool.tools])
        self.prompt_builder = PromptBuilder(
            prompt or PromptConfig(), self.parser, pool.tools, processing_class
        )
        train_dataset = self.with_prompts(train_dataset)
        if kwargs.get("eval_dataset") is not None:
            kwargs["eval_dataset"] = self.with_prompts(kwargs["eval_dataset"])
        super().__init__(
            model=model,
            reward_funcs=reward_funcs,
            args=args,
            train_dataset=train_dataset,
            processing_class=processing_class,
            **kwargs,
        )
        self.generator = generator or TransformersGenerator(
            self.accelerator.unwrap_model(self.model), processing_class, self.rollout_config.batch_size
        )
        self.engine = RolloutEngine(
            self.generator, processing_class, self.parser, self.prompt_builder, pool, self.rollout_config
        )
        self.last_trajectories: list[Trajectory] = []

    def with_prompts(self, dataset: Any) -> Any:
        """Add the ``prompt`` column (chat messages) unless the dataset brings its own."""
        if "prompt" in dataset.column_names:
            return dataset
        return dataset.map(lambda row: {"prompt": self.prompt_builder.messages(row)})

    # -- the hook -------------------------------------------------------------------------------------
    def _generate(self, prompts: list[Any]) -> tuple[Any, ...]:
        """Multi-turn rollouts for TRL: prompt/completion ids, tool mask, completions, logprobs, extras."""
        mode = "train" if self.model.training else "eval"
        trajectories = self.engine.rollout(prompts, num_generations=1)
        self.last_trajectories = trajectories
        self.log_rollout(mode, trajectories)
        prompt_ids = [t.prompt_ids for t in trajectories]
        completion_ids = [t.completion_ids for t in trajectories]
        tool_mask = [t.completion_mask for t in trajectories]
        completions = [[{"role": "assistant", "content": t.transcript}] for t in trajectories]
        logprobs = None
        if all(t.logprobs is not None for t in trajectories):
            logprobs = [t.logprobs for t in trajectories]
        extra_fields = {"trajectories": trajectories}
        return prompt_ids, completion_ids, tool_mask, completions, logprobs, extra_fields, None, []

    def log_rollout(self, mode: str, trajectories: Sequence[Trajectory]) -> None:
        """Rollout and tool metrics into TRL's per-step metrics (averaged and logged by TRL)."""
        metrics = {**rollout_metrics(trajectories), **self.engine.last_stats, **self.pool.metrics(reset=True)}
        for key, value in metrics.items():
            self._metrics[mode][key].append(float(value))
        model_tokens = sum(t.completion_mask.count(1) + len(t.prompt_ids) for t in trajectories)
        if mode == "train":
            self.state.num_input_tokens_seen += model_tokens
        self._metrics[mode]["num_tokens"] = [self.state.num_input_tokens_seen]
        lengths = [t.completion_mask.count(1) for t in trajectories]
        self._metrics[mode]["completions/mean_length"].append(sum(lengths) / max(1, len(lengths)))

    # -- lifetime -------------------------------------------------------------------------------------
    def train(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().train(*args, **kwargs)
        finally:
            if self.close_pool:
                self.pool.close()
