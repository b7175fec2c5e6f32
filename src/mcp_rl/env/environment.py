"""``Environment``: one task's tools, parser, prompts, rubric, generator and engine — the only place they are
wired — and the owner of its episodes from rollout to release.

Training, evaluation, ``mcp-rl rollout``/``prompt``, the warm start, the benchmarks and the tests all get
their episodes from an Environment, and score them through its rubric, so the parts meet the same way
everywhere: the parser learns the pool's tools, the prompt builder renders them where the chat template
wants them, the engine drives the generator against the pool, and every scored batch goes through one hook
(``batch_scored``: traces, metrics, per-episode server release).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mcp_rl.config.sections import PromptConfig, Recipe, RolloutConfig
from mcp_rl.env.parsers import Parser, build_parser
from mcp_rl.env.prompts import PromptBuilder
from mcp_rl.env.recipe_checks import check_recipe, recipe_servers
from mcp_rl.errors import ConfigError
from mcp_rl.rewards.rubric import Rubric, ScoredBatch, TRLRewards
from mcp_rl.rewards.samples import sample_rows
from mcp_rl.tools import BlockingToolPool
from mcp_rl.tools.server_logs import TextSink

if TYPE_CHECKING:  # the engine and the generators import torch: only once a model is used
    from mcp_rl.env.engine import RolloutEngine
    from mcp_rl.env.recorder import EpisodeRecorder
    from mcp_rl.env.trajectory import Trajectory
    from mcp_rl.generation.base import Generator


__all__ = ["Environment", "build_generator", "recipe_parser", "tool_pool"]


def recipe_parser(recipe: Recipe) -> Parser:
    """The parser ``recipe.parser`` names, built with its options (bind it to the pool's tools before use)."""
    return build_parser(recipe.parser.name, **recipe.parser.options)


def tool_pool(recipe: Recipe, errlog: TextSink | None = None) -> BlockingToolPool:
    """A tool pool, not yet started, over the recipe's MCP servers and observation budget; the servers'
    stderr goes to ``errlog`` (None: this process's stderr). Start it, or use it as a context manager."""
    return BlockingToolPool(
        recipe_servers(recipe), observation_chars=recipe.tools.observation_chars, errlog=errlog
    )


class Environment:
    """Everything that turns rows of a dataset into scored episodes.

    Built in two phases, so that whatever can fail in seconds does so before a model loads and before
    anything is written:

    1. ``Environment.from_recipe(recipe, errlog=...)`` (or the constructor, from parts) starts the tool
       servers, binds the parser to their tools and builds the rubric (a reward naming a missing tool fails
       here);
    2. ``env.use_model(model, tokenizer, seed=...)`` builds the generator ``rollout.backend`` names, the
       prompt builder and the engine, and checks that the first prompt fits the model's context.

    The constructor does both at once when given a ``tokenizer`` and a ``generator`` (a ``tokenizer`` alone
    gives prompts without an engine). Use it as a context manager: leaving it closes the pool and frees the
    generator.

    Args:
        tokenizer: the policy's tokenizer (chat template, token ids in and out); None until ``use_model``.
        generator: a ``Generator`` (``TransformersGenerator``, ``VLLMGenerator``, ...), with ``tokenizer``.
        pool: a started ``BlockingToolPool``, or None for a setup without tools. The Environment owns it.
        parser: a ``Parser`` or the name of a built-in one (``search_r1``, ``tool_call``, ``tags``).
        prompt: how the first messages are written (system text, user template, few-shot turns).
        rollout: turn and token budgets, sampling, how observations are framed.
        rubric: the reward functions, weights and metrics episodes are scored by (default: none).
    """

    def __init__(
        self,
        tokenizer: Any = None,
        generator: Generator | None = None,
        *,
        pool: BlockingToolPool | None = None,
        parser: Parser | str = "search_r1",
        prompt: PromptConfig | None = None,
        rollout: RolloutConfig | None = None,
        rubric: Rubric | None = None,
        report_by: str | None = None,
    ) -> None:
        self.pool = pool
        self.report_by = report_by  # a row column whose values split the logged metrics
        self.closed = False
        self.prompt_config = prompt or PromptConfig()
        self.rollout_config = rollout or RolloutConfig()
        self.parser = build_parser(parser) if isinstance(parser, str) else parser
        self.tools = pool.tools if pool is not None else []
        self.parser.bind_tools([tool.as_dict() for tool in self.tools])
        self.rubric = rubric or Rubric()
        self.tokenizer: Any = None
        self.prompts: PromptBuilder | None = None
        self._engine: RolloutEngine | None = None
        self._recorder: EpisodeRecorder | None = None
        self._trl: TRLRewards | None = None
        self.last_batch: ScoredBatch | None = None  # the newest batch the hook saw
        if tokenizer is not None:
            self.wire(tokenizer, generator)
        elif generator is not None:
            raise ValueError("Environment: a generator needs the tokenizer it generates with")

    @classmethod
    def from_recipe(
        cls,
        recipe: Recipe,
        *,
        errlog: TextSink | None = None,
        pool: BlockingToolPool | None = None,
        rewards: bool = True,
    ) -> Environment:
        """The recipe's servers started (unless a started ``pool`` is given), its parser and its rubric
        (``rewards=False``: none, for what only renders prompts). Then ``use_model``."""
        check_recipe(recipe)  # user reward imports, the parser's options, server commands
        owned = pool is None
        pool = pool or tool_pool(recipe, errlog).start()
        try:
            return cls(
                pool=pool,
                parser=recipe_parser(recipe),
                prompt=recipe.prompt,
                rollout=recipe.rollout,
                rubric=Rubric.from_specs(recipe.rewards, pool) if rewards else None,
                report_by=recipe.data.report_by,
            )
        except BaseException:
            if owned:
                pool.close()
            raise

    def use_model(
        self, model: Any, tokenizer: Any, *, seed: int = 0, generator: Generator | None = None
    ) -> Environment:
        """Generate with ``model``: the generator ``rollout.backend`` names (unless ``generator`` is given),
        the prompt builder and the engine; ``ConfigError`` (and the Environment closed) when the first prompt
        and the episode's token budget do not fit the model's context."""
        from mcp_rl.env.prompt_fit import check_prompt_fits, context_tokens

        try:
            self.wire(
                tokenizer, generator or build_generator(self.rollout_config, model, tokenizer, seed=seed)
            )
            # Before any episode runs: a prompt past the model's context is a configuration error.
            check_prompt_fits(self.prompts, self.rollout_config, context_tokens(tokenizer, model))
        except BaseException:
            self.close()
            raise
        return self

    def prompt_builder(self, tokenizer: Any) -> PromptBuilder:
        """How this Environment writes an episode's first messages, for ``tokenizer``'s chat template."""
        return PromptBuilder(self.prompt_config, self.parser, self.tools, tokenizer)

    def wire(self, tokenizer: Any, generator: Generator | None) -> None:
        """The prompt builder, and the engine over ``generator`` when there is one (``use_model`` without
        the fit check)."""
        self.tokenizer = tokenizer
        self.prompts = self.prompt_builder(tokenizer)
        if generator is not None:
            from mcp_rl.env.engine import RolloutEngine

            self._engine = RolloutEngine(
                generator, tokenizer, self.parser, self.prompts, self.pool, self.rollout_config
            )

    # -- the parts ------------------------------------------------------------------------------------
    @property
    def engine(self) -> RolloutEngine:
        if self._engine is None:
            raise ConfigError("this Environment has no model yet: call env.use_model(model, tokenizer) first")
        return self._engine

    @property
    def generator(self) -> Generator:
        return self.engine.generator

    def use_generator(self, generator: Generator) -> None:
        """Generate with another backend from now on (the trainer's, when TRL owns vLLM)."""
        self.engine.generator = generator

    @property
    def recorder(self) -> EpisodeRecorder:
        """What the hook writes: traces (see ``record_traces``) and metrics."""
        if self._recorder is None:
            from mcp_rl.env.recorder import EpisodeRecorder

            self._recorder = EpisodeRecorder(self.prompt_config.user_template)
        return self._recorder

    def record_traces(self, trace_path: str | Path | None) -> None:
        """Append one trace line per episode of every batch the hook sees to ``trace_path`` (None: stop)."""
        self.recorder.trace_path = Path(trace_path) if trace_path else None

    # -- episodes -------------------------------------------------------------------------------------
    def messages(self, row: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The first messages of an episode for one dataset row."""
        if self.prompts is None:
            raise ConfigError("this Environment has no tokenizer yet: call env.use_model(model, tokenizer)")
        return self.prompts.messages(row)

    def with_prompts(self, dataset: Any) -> Any:
        """A ``datasets.Dataset`` with a ``prompt`` column of chat messages, unless it brings its own."""
        if "prompt" in dataset.column_names:
            return dataset

        def add_prompt(row: Mapping[str, Any]) -> dict[str, Any]:
            return {"prompt": self.messages(row)}

        if not hasattr(dataset, "_fingerprint"):  # an IterableDataset: mapped lazily, nothing to cache
            return dataset.map(add_prompt)
        # The builder cannot be hashed for datasets' cache (a warning on every run); the first row's
        # messages carry its state (system prompt, few-shot, tool schemas); the dataset fingerprint, the rows.
        from datasets.fingerprint import Hasher

        state = self.messages(dataset[0]) if len(dataset) else None
        return dataset.map(add_prompt, new_fingerprint=Hasher.hash((dataset._fingerprint, state)))

    def rollout_rows(self, rows: Sequence[Mapping[str, Any]], *, greedy: bool = False) -> list[Trajectory]:
        """One episode per dataset row (``engine.rollout`` takes message lists, several samples each)."""
        return self.engine.rollout([self.messages(row) for row in rows], greedy=greedy, rows=rows)

    # -- scoring --------------------------------------------------------------------------------------
    def score(self, trajectories: Sequence[Trajectory], rows: Sequence[Mapping[str, Any]]) -> ScoredBatch:
        """The rubric's scores for these episodes (a reward that raises is recorded, not raised), then the
        hook: their per-episode servers stop. Call it while they still run: tool-verified rewards use them."""
        batch = self.rubric.score(trajectories, rows)
        self.batch_scored(batch, rows)
        return batch

    def trl_rewards(self) -> TRLRewards:
        """The rubric as TRL's ``reward_funcs`` (one per entry), each of TRL's batches handed to the hook
        once every entry has scored it."""
        if self._trl is None:
            self._trl = TRLRewards(self.rubric, self._trl_batch_scored)
        return self._trl

    def _trl_batch_scored(self, batch: ScoredBatch, kwargs: Mapping[str, Any]) -> None:
        state = kwargs.get("trainer_state")
        # The optimizer step these episodes train (global_step counts the ones done): the same step number
        # as the metrics line that logs their rewards, and what a resume trims traces to.
        step = state.global_step + 1 if state is not None else 0
        rows = sample_rows(len(batch), kwargs)
        self.batch_scored(batch, rows, step=step, log_metric=kwargs.get("log_metric"))

    def batch_scored(
        self,
        batch: ScoredBatch,
        rows: Sequence[Mapping[str, Any]],
        *,
        step: int | None = None,
        log_metric: Any = None,
    ) -> None:
        """The hook every scored batch goes through: a training batch's trace lines (``step``: the optimizer
        step it trains; None for an evaluation's or a demonstration's batch, which are not traced), its
        rollout metrics and the pool's counters (reset) through ``log_metric`` (a trainer's), then its
        per-episode server instances stopped — every reward has seen the state the episodes left."""
        self.last_batch = batch
        if step is not None:
            self.recorder.write_traces(batch, rows, step)
        if log_metric is not None:
            extra = {**(self._engine.last_stats if self._engine else {}), **self.tool_metrics(reset=True)}
            self.recorder.log_metrics(batch, rows, log_metric, extra, self.report_by)
        self.release(batch.trajectories)

    def release(self, trajectories: Sequence[Trajectory]) -> None:
        """Stop the episodes' per-episode server instances (idempotent); the hook does it once scored."""
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
            close = getattr(self._engine.generator, "close", None) if self._engine else None
            if callable(close):
                close()

    def __enter__(self) -> Environment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def build_generator(rollout: RolloutConfig, model: Any, tokenizer: Any, *, seed: int = 0) -> Generator:
    """The generator ``rollout.backend`` names: transformers on ``model`` itself (reusing attention state
    across turns unless ``rollout.reuse_cache`` is off), the same in a second process on a copy of
    ``model``, or an in-process vLLM engine started from the weights ``model`` was loaded from (new weights
    arrive through ``sync``)."""
    if rollout.backend == "vllm":
        from mcp_rl.generation.vllm import VLLMGenerator

        path = model.config._name_or_path  # the folder (or hub id) the policy was loaded from
        return VLLMGenerator(path, tokenizer=tokenizer, dtype=model.dtype, seed=seed)
    if rollout.backend == "process":
        from mcp_rl.generation.process import ProcessGenerator

        return ProcessGenerator(
            model, tokenizer, batch_size=rollout.batch_size, threads=rollout.generator_threads, seed=seed
        )
    if rollout.reuse_cache:
        from mcp_rl.generation.cached import CachedTransformersGenerator

        return CachedTransformersGenerator(model, tokenizer, rollout.batch_size)
    from mcp_rl.generation.base import TransformersGenerator

    return TransformersGenerator(model, tokenizer, rollout.batch_size)
