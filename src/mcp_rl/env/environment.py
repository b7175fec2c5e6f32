"""``RolloutPipeline``: the tool pool, parser, prompt builder, generator and engine of one setup, built once.

Training, evaluation, ``mcp-rl rollout``, the benchmarks and the tests all get their episodes from a
pipeline, so the parts are wired the same way everywhere: the parser learns the pool's tools, the prompt
builder renders them where the chat template wants them, and the engine drives the generator against the
pool. Build one from a recipe (``RolloutPipeline.from_recipe``) or from parts (the constructor), and use it
as a context manager: leaving it closes the pool and frees the generator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mcp_rl.config.sections import PromptConfig, Recipe, RolloutConfig
from mcp_rl.env.assembly import recipe_parser, tool_pool
from mcp_rl.env.engine import RolloutEngine
from mcp_rl.env.parsers import Parser, build_parser
from mcp_rl.env.prompt_fit import check_prompt_fits, context_tokens
from mcp_rl.env.prompts import PromptBuilder
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.generation.base import Generator, TransformersGenerator
from mcp_rl.generation.cached import CachedTransformersGenerator
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_logs import TextSink


class RolloutPipeline:
    """Everything that turns rows of a dataset into episodes.

    Args:
        tokenizer: the policy's tokenizer (chat template, token ids in and out).
        generator: a ``Generator`` (``TransformersGenerator``, ``VLLMGenerator``, ...).
        pool: a started ``BlockingToolPool``, or None for a setup without tools. The pipeline owns it.
        parser: a ``Parser`` or the name of a built-in one (``search_r1``, ``tool_call``, ``tags``).
        prompt: how the first messages are written (system text, user template, few-shot turns).
        rollout: turn and token budgets, sampling, how observations are framed.
    """

    def __init__(
        self,
        tokenizer: Any,
        generator: Generator,
        *,
        pool: BlockingToolPool | None = None,
        parser: Parser | str = "search_r1",
        prompt: PromptConfig | None = None,
        rollout: RolloutConfig | None = None,
    ) -> None:
        self.tokenizer = tokenizer
        self.pool = pool
        self.closed = False
        self.rollout_config = rollout or RolloutConfig()
        self.parser = build_parser(parser) if isinstance(parser, str) else parser
        tools = pool.tools if pool is not None else []
        self.parser.bind_tools([tool.as_dict() for tool in tools])
        self.prompts = PromptBuilder(prompt or PromptConfig(), self.parser, tools, tokenizer)
        self.engine = RolloutEngine(
            generator, tokenizer, self.parser, self.prompts, pool, self.rollout_config
        )

    @classmethod
    def from_recipe(
        cls,
        recipe: Recipe,
        model: Any,
        tokenizer: Any,
        *,
        errlog: TextSink | None = None,
        seed: int = 0,
        pool: BlockingToolPool | None = None,
        generator: Generator | None = None,
    ) -> RolloutPipeline:
        """The recipe's parser and prompts; its servers started (unless a ``pool`` is given) and the
        generator ``rollout.backend`` names (unless a ``generator`` is given), on ``model``."""
        owned = pool is None
        pool = pool or tool_pool(recipe, errlog).start()
        try:
            generator = generator or build_generator(recipe.rollout, model, tokenizer, seed=seed)
            pipeline = cls(
                tokenizer,
                generator,
                pool=pool,
                parser=recipe_parser(recipe),
                prompt=recipe.prompt,
                rollout=recipe.rollout,
            )
        except BaseException:
            if owned:
                pool.close()
            raise
        try:  # before any episode runs: a prompt past the model's context is a configuration error
            check_prompt_fits(pipeline.prompts, recipe.rollout, context_tokens(tokenizer, model))
        except BaseException:
            pipeline.close()
            raise
        return pipeline

    # -- the parts ------------------------------------------------------------------------------------
    @property
    def generator(self) -> Generator:
        return self.engine.generator

    def use_generator(self, generator: Generator) -> None:
        """Generate with another backend from now on (the trainer's, when TRL owns vLLM)."""
        self.engine.generator = generator

    # -- episodes -------------------------------------------------------------------------------------
    def messages(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The first messages of an episode for one dataset row."""
        return self.prompts.messages(row)

    def with_prompts(self, dataset: Any) -> Any:
        """A ``datasets.Dataset`` with a ``prompt`` column of chat messages, unless it brings its own."""
        if "prompt" in dataset.column_names:
            return dataset
        return dataset.map(lambda row: {"prompt": self.messages(row)})

    def rollout_rows(self, rows: Sequence[Mapping[str, Any]], *, greedy: bool = False) -> list[Trajectory]:
        """One episode per dataset row (``engine.rollout`` takes message lists, several samples each)."""
        return self.engine.rollout([self.messages(row) for row in rows], greedy=greedy, rows=rows)

    def release(self, trajectories: Sequence[Trajectory]) -> None:
        """Stop the episodes' per-episode server instances once their rewards are computed (idempotent)."""
        if self.pool is not None:
            self.pool.close_episodes([t.tools for t in trajectories])

    def tool_metrics(self, reset: bool = False) -> dict[str, float]:
        """The pool's counters (calls, failures by kind, latency, reconnects); {} without tools."""
        return self.pool.metrics(reset=reset) if self.pool is not None else {}

    # -- lifetime -------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the tool servers and free the generator's resources (a vLLM engine's KV cache); idempotent."""
        if self.closed:
            return
        self.closed = True
        try:
            if self.pool is not None:
                self.pool.close()
        finally:
            close = getattr(self.generator, "close", None)
            if callable(close):
                close()

    def __enter__(self) -> RolloutPipeline:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def build_generator(rollout: RolloutConfig, model: Any, tokenizer: Any, *, seed: int = 0) -> Generator:
    """The generator ``rollout.backend`` names: transformers on ``model`` itself (reusing attention state
    across turns unless ``rollout.reuse_cache`` is off), or an in-process vLLM engine started from the
    weights ``model`` was loaded from (new weights arrive through ``sync``)."""
    if rollout.backend == "vllm":
        from mcp_rl.generation.vllm import VLLMGenerator

        path = model.config._name_or_path  # the folder (or hub id) the policy was loaded from
        return VLLMGenerator(path, tokenizer=tokenizer, dtype=model.dtype, seed=seed)
    if rollout.reuse_cache:
        return CachedTransformersGenerator(model, tokenizer, rollout.batch_size)
    return TransformersGenerator(model, tokenizer, rollout.batch_size)
