"""``MCPGRPOTrainer``: TRL's GRPO with an ``Environment``'s episodes, through TRL's public ``rollout_func``.

The only module that touches TRL. TRL keeps everything it is good at (loss types, PEFT, the reference
model, vLLM weight sync, logging); we replace how completions come to be: multi-turn episodes whose
observation tokens come back as ``env_mask`` 0, so TRL's loss ignores them. The seam is public:

- ``rollout_func`` (TRL 1.16, experimental) receives this process's prompts and returns prompt ids,
  completion ids, sampled-token logprobs (for vLLM's importance-sampling correction, None otherwise),
  ``env_mask`` (becomes TRL's ``tool_mask``) and ``trajectories``, which TRL hands to every reward function;
- TRL's reward functions are the Environment's rubric (``TRLRewards``): one scoring pass per batch, then
  the Environment's hook writes traces, logs rollout and tool metrics through TRL's ``log_metric`` and stops
  the episodes' per-episode servers;
- what must agree between the rollout and TRL's loss (temperature, top-p, the completion budget) is
  checked when the trainer is built (``check_sampling_agrees``), on every path;
- a ``TrainerCallback`` marks each checkpoint folder complete once transformers has written all of it;
- ``compute_loss`` (a public ``Trainer`` method) hands TRL each micro-batch without its all-padding columns,
  and tells ``LeanScoring`` (installed over TRL's fused LM-head forward, the way TRL installs its own) which
  tokens the loss reads;
- what a step learns from (``GRPOStepConfig``): dynamic sampling refills the batch with groups that have a
  reward spread before TRL sees it, negative advantages can be down-weighted, and a step with too few
  informative groups is skipped with Adam's moments untouched (``SkipStepWithoutSignal``);
- ``reset_reference`` makes the policy as it is (after a warm start) the KL reference, and
  ``mix_in_demonstrations`` adds the warm start's supervised loss to every micro-batch's (``grpo.sft_coef``);
- with ``grpo.overlap`` the next batch is rolled out in the background while this one trains
  (``mcp_rl.training.overlap``), and TRL's importance-sampling correction, which TRL applies for vLLM only,
  weighs the stale samples (``stale_samples_weighted``).

One private method is overridden, ``_generate_and_score_completions``: it is where a batch's rows are known
before the rollout, which dynamic sampling and overlap need (pinned by ``trl>=1.16,<2``).
"""

from __future__ import annotations

import itertools
import json
import random
import warnings
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import gather_object
from trl import GRPOConfig, GRPOTrainer
from trl.models import unwrap_model_for_generation

from mcp_rl.config.sections import GRPOStepConfig, RolloutConfig
from mcp_rl.env.environment import Environment
from mcp_rl.env.refill import GroupRefill, OverlappingRefill
from mcp_rl.env.trajectory import Trajectory
from mcp_rl.errors import ConfigError
from mcp_rl.generation.trl_vllm import TRLVLLMGenerator
from mcp_rl.rewards.rubric import Rubric, ScoredBatch
from mcp_rl.training.callbacks import SkipStepWithoutSignal
from mcp_rl.training.checkpoints import CheckpointMarker
from mcp_rl.training.demonstration_loss import DemonstrationLoss
from mcp_rl.training.lean_forward import LeanScoring, trim_padding
from mcp_rl.training.overlap import Metrics, RolloutAhead, Rows


def check_sampling_agrees(rollout: RolloutConfig, args: GRPOConfig) -> None:
    """``ConfigError`` when the Environment samples otherwise than TRL scores: TRL computes the loss's
    log-probabilities at ``GRPOConfig.temperature`` (and ``top_p``) and budgets completions by
    ``max_completion_length``; the engine samples and budgets by ``rollout``. A mismatch trains on
    log-probabilities of a distribution the episodes were not drawn from."""
    pairs = [
        ("temperature", rollout.temperature, "temperature", args.temperature),
        ("top_p", rollout.top_p, "top_p", args.top_p),
        (
            "max_completion_tokens",
            rollout.max_completion_tokens,
            "max_completion_length",
            args.max_completion_length,
        ),
    ]
    for ours, mine, theirs, trl in pairs:
        if mine != trl:
            raise ConfigError(
                f"rollout.{ours}={mine} but GRPOConfig.{theirs}={trl}: the rollout samples with one and "
                f"TRL's loss scores with the other; set both to the same value (a recipe sets rollout.{ours} "
                "only)"
            )


def is_reward_model(function: Any) -> bool:
    """A reward model (a hub id, or a module TRL runs on the decoded text), which TRL scores itself."""
    return isinstance(function, str) or hasattr(function, "forward")


def prompt_key(row: dict[str, Any]) -> str:
    return json.dumps(row.get("prompt"), sort_keys=True, default=str)


class MCPGRPOTrainer(GRPOTrainer):
    """GRPO over multi-turn MCP tool use.

    Args:
        environment: a built ``Environment`` (tools, parser, prompts, generator, rubric). The trainer owns
            it and closes it when training ends (``close_environment=False`` keeps it open).
        reward_funcs: TRL's reward functions; None (the default) takes the Environment's rubric. Given, its
            callables become the Environment's rubric (which must then be empty); reward models (a hub id, a
            module) go to TRL as they are and are not part of the rubric.
        trace_path: where one JSON line per episode goes (its turns, calls, rewards and dataset row).
        lean_scoring: the training forward reads the prompt prefix all rows share once and projects only the
            tokens the loss reads onto the vocabulary (``mcp_rl.training.lean_forward``); False keeps TRL's
            forward. Off under FSDP and DeepSpeed, which own the forward pass. The reference model
            (``beta > 0``) scores with it too.
        grpo: which samples a step learns from and when it steps (``GRPOStepConfig``; default: as TRL).
        model, args, train_dataset, processing_class, **kwargs: as for ``GRPOTrainer``.
            ``args.reward_weights`` defaults to the rubric's weights; ``args`` must sample as the
            Environment does (``check_sampling_agrees``).

    ``train_dataset`` rows need the columns ``prompt.user_template`` refers to (e.g. ``question``); a
    ``prompt`` column (the chat messages) is added from the Environment. Reward functions receive
    ``trajectories=`` besides TRL's usual arguments.
    """

    def __init__(
        self,
        model: Any,
        reward_funcs: Callable[..., Any] | Sequence[Callable[..., Any]] | None = None,
        args: GRPOConfig | None = None,
        train_dataset: Any = None,
        processing_class: Any = None,
        *,
        environment: Environment,
        trace_path: str | Path | None = None,
        close_environment: bool = True,
        lean_scoring: bool = True,
        grpo: GRPOStepConfig | None = None,
        **kwargs: Any,
    ) -> None:
        if args is None:
            raise ConfigError("MCPGRPOTrainer needs args (a trl.GRPOConfig)")
        check_sampling_agrees(environment.rollout_config, args)
        self.environment = environment
        self.close_environment = close_environment
        self.grpo = grpo or GRPOStepConfig()
        self._batch_rows: list[dict[str, Any]] | None = None
        self._ready: list[Trajectory] | None = None  # episodes dynamic sampling already played for the batch
        self._refill_order: Iterator[int] | None = None
        self.skip_update = False  # the current batch has too few informative groups: no optimizer step
        self.ahead: RolloutAhead | None = None  # grpo.overlap: the next batch, rolled out while this trains
        self.step_metrics: dict[str, list[float]] = defaultdict(list)  # ours, added to TRL's log line
        self.demonstration_loss: DemonstrationLoss | None = None  # grpo.sft_coef's demonstrations
        train_dataset = environment.with_prompts(train_dataset)
        if kwargs.get("eval_dataset") is not None:
            kwargs["eval_dataset"] = environment.with_prompts(kwargs["eval_dataset"])
        functions = self.trl_reward_funcs(environment, reward_funcs, args)
        environment.record_traces(trace_path)
        self.rewards = environment.trl_rewards()
        stand_ins = iter(self.rewards.functions())
        reward_funcs = [f if is_reward_model(f) else next(stand_ins) for f in functions]
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="You are using 'rollout_func'", category=UserWarning)
            super().__init__(
                model=model,
                reward_funcs=reward_funcs,
                args=args,
                train_dataset=train_dataset,
                processing_class=processing_class,
                rollout_func=self.rollout,
                **kwargs,
            )
        self.add_callback(CheckpointMarker())
        self.add_callback(SkipStepWithoutSignal(self))
        if self.grpo.dynamic_sampling and self.accelerator.num_processes > 1:
            raise ConfigError(
                "grpo.dynamic_sampling runs on one training process only (a group may span ranks)"
            )
        if self.grpo.dynamic_sampling and any(is_reward_model(f) for f in functions):
            raise ConfigError(
                "grpo.dynamic_sampling needs reward functions, not reward models, to score groups"
            )
        self.lean_scoring: LeanScoring | None = None
        self.reference_scoring: LeanScoring | None = None
        if lean_scoring and not (self.is_fsdp_enabled or self.is_deepspeed_enabled):
            policy = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
            self.lean_scoring = LeanScoring(policy, self.temperature, args.cast_lm_head_to_fp32)
            if self.ref_model is not None:  # under LoRA the reference is the policy's own forward
                self.reference_scoring = LeanScoring(
                    self.ref_model, self.temperature, args.cast_lm_head_to_fp32
                )
        if self.accelerator.num_processes > 1:
            environment.recorder.distribute(
                self.accelerator.process_index, self.accelerator.num_processes, gather_object
            )
        if args.use_vllm:
            environment.use_generator(
                TRLVLLMGenerator(
                    self.vllm_generation,
                    processing_class,
                    self.eos_token_ids,
                    lockstep=args.vllm_mode == "server",
                )
            )
        if self.grpo.overlap:
            self.check_overlap_possible()
            self.ahead = RolloutAhead(self.play_rows, lambda: self.environment.engine.last_stats)

    def check_overlap_possible(self) -> None:
        if self.accelerator.num_processes > 1:
            raise ConfigError("grpo.overlap runs on one training process only")
        if not getattr(self.environment.generator, "own_weights", False):
            raise ConfigError(
                "grpo.overlap needs a generator with its own copy of the weights, which a rollout can use "
                "while the policy trains: set rollout.backend: process"
            )

    @staticmethod
    def trl_reward_funcs(environment: Environment, reward_funcs: Any, args: GRPOConfig) -> list[Any]:
        """TRL's reward functions in order (reward models included); the Environment's rubric is their
        callables, and ``args.reward_weights`` is set to the rubric's weights when unset."""
        if reward_funcs is None:
            rubric = environment.rubric
            if args.reward_weights is None:
                args.reward_weights = list(rubric.weights)
            elif [float(w) for w in args.reward_weights] != rubric.weights:
                raise ConfigError(
                    f"GRPOConfig.reward_weights={list(args.reward_weights)} but the Environment's rubric "
                    f"weighs its rewards {rubric.weights}: set the weights in one place (the rubric)"
                )
            return list(rubric.functions)
        functions = list(reward_funcs) if isinstance(reward_funcs, Sequence) else [reward_funcs]
        weights = list(args.reward_weights) if args.reward_weights is not None else [1.0] * len(functions)
        if len(weights) != len(functions):
            raise ConfigError(f"{len(weights)} GRPOConfig.reward_weights for {len(functions)} reward_funcs")
        pairs = [(f, w) for f, w in zip(functions, weights, strict=True) if not is_reward_model(f)]
        callables = [f for f, _ in pairs]
        if len(environment.rubric) and environment.rubric.functions != callables:
            raise ConfigError(
                "reward functions given twice: the Environment has a rubric and MCPGRPOTrainer got "
                "reward_funcs; give them in one place"
            )
        environment.rubric = Rubric(callables, [w for _, w in pairs])
        return functions

    # -- the reference --------------------------------------------------------------------------------
    def reset_reference(self) -> None:
        """The policy as it is now becomes the KL reference (``beta > 0``).

        TRL builds its reference when the trainer is built: a second copy loaded from the checkpoint, or
        under LoRA the base model with the adapters off. A warm start runs after that, so without this the
        KL term would pull the policy back to the model before the warm start. Under LoRA the adapters are
        copied into a frozen ``ref`` adapter, which TRL's reference forward then uses.
        """
        if self.beta == 0.0:
            return
        model = self.accelerator.unwrap_model(self.model)
        if self.ref_model is not None:
            self.accelerator.unwrap_model(self.ref_model).load_state_dict(model.state_dict())
            return
        if "ref" not in model.peft_config:
            model.add_adapter("ref", model.peft_config["default"])
        for name, parameter in model.named_parameters():
            if ".ref." in name:
                parameter.requires_grad_(False)
                parameter.data.copy_(model.get_parameter(name.replace(".ref.", ".default.")).data)

    def mix_in_demonstrations(self, episodes: Sequence[Trajectory]) -> None:
        """With ``grpo.sft_coef`` > 0, every micro-batch's loss gets that times the mean token loss of
        ``grpo.sft_batch_size`` of these episodes (``mcp_rl.training.demonstration_loss``)."""
        if self.grpo.sft_coef > 0:
            pad_id = self.processing_class.pad_token_id
            size = self.grpo.sft_batch_size
            self.demonstration_loss = DemonstrationLoss(
                episodes, batch_size=size, pad_id=pad_id, seed=self.args.seed
            )

    # -- the rollout ----------------------------------------------------------------------------------
    def rollout(self, prompts: list[Any], trainer: GRPOTrainer) -> dict[str, Any]:
        """TRL's ``rollout_func``: one episode per prompt (TRL repeats each prompt once per generation)."""
        ready, self._ready = self._ready, None
        rows = self._batch_rows
        if rows is not None and len(rows) != len(prompts):
            rows = None
        # Dynamic sampling may have played and scored this batch already.
        ready_here = ready is not None and len(ready) == len(prompts)
        trajectories = ready if ready_here else self.play(prompts, rows)
        if not len(self.environment.rubric):  # reward models alone: nothing of ours scores the batch
            self.environment.batch_scored(
                ScoredBatch(list(trajectories), {}, {}),
                rows or [{} for _ in trajectories],
                step=self.state.global_step + 1,
            )
        logprobs = None
        if all(t.logprobs is not None for t in trajectories):
            logprobs = [t.logprobs for t in trajectories]
        return {
            "prompt_ids": [t.prompt_ids for t in trajectories],
            "completion_ids": [t.completion_ids for t in trajectories],
            "logprobs": logprobs,
            "env_mask": [t.completion_mask for t in trajectories],
            "trajectories": trajectories,
        }

    def play(self, prompts: list[Any], rows: Rows | None, *, sync: bool = True) -> list[Trajectory]:
        """One episode per prompt with the current weights (``sync=False``: those the generator holds)."""
        with self.weights_for_rollout(sync):
            return self.environment.engine.rollout(prompts, rows=rows)

    def weights_for_rollout(self, sync: bool) -> AbstractContextManager[None]:
        return self.generating() if sync else nullcontext()

    @contextmanager
    def generating(self) -> Iterator[None]:
        """The current weights in the generator for the episodes played inside the block."""
        if self.ahead is not None:  # a rollout under way must not have its weights replaced
            self.ahead.wait()
        # Sharded weights (ZeRO-3, FSDP) are gathered for generation: every forward pass would otherwise be a
        # collective that all ranks must join, and ranks finish their episodes at different turns.
        with unwrap_model_for_generation(
            self.model_wrapped, self.accelerator, gather_deepspeed3_params=self.args.ds3_gather_for_generation
        ) as unwrapped:
            self.environment.generator.sync(unwrapped, self.state.global_step)
            yield

    def fresh_rows(self, count: int, seen: set[str]) -> list[dict[str, Any]]:
        """Up to ``count`` training rows whose prompt is not in ``seen`` (added to it), in a seeded order
        that cycles through the dataset."""
        size = len(self.train_dataset)
        if self._refill_order is None:
            order = list(range(size))
            random.Random(self.args.seed).shuffle(order)
            self._refill_order = itertools.cycle(order)
        rows: list[dict[str, Any]] = []
        for _ in range(size):
            if len(rows) == count:
                break
            row = dict(self.train_dataset[next(self._refill_order)])
            if prompt_key(row) not in seen:
                seen.add(prompt_key(row))
                rows.append(row)
        return rows

    def dynamic_batch(
        self, inputs: Rows, metrics: Metrics | None = None, *, sync: bool = True
    ) -> tuple[Rows, list[Trajectory]]:
        """DAPO's dynamic sampling: the batch's rows with every group lacking a reward spread replaced by a
        group of an unseen training question that has one, as far as ``max_extra_rollouts`` allows; the
        rest filled with dropped groups. The episodes are kept for ``rollout`` and their scores for TRL's
        call (``TRLRewards.score_ahead``), so neither is produced twice. By episode, a group is judged as
        soon as its episodes ended and its replacement starts while the others run; by turn, in whole
        rounds. Returns the chosen rows and their episodes; ``metrics`` (default: this step's) gets the
        rollouts spent and the share of groups without spread."""
        metrics = self.step_metrics if metrics is None else metrics
        seen = {prompt_key(row) for row in inputs}
        refill = GroupRefill(
            self.num_generations,
            len(inputs) // self.num_generations,
            self.grpo.max_extra_rollouts,
            self.rewards.score_ahead,
            lambda count: self.fresh_rows(count, seen),
        )
        try:
            if self.environment.engine.by_episode:
                self.refill_overlapping(refill, inputs, sync)
            else:
                self.refill_in_rounds(refill, inputs, sync)
        except BaseException:  # nothing will train on these: their servers stop, their scores go
            self.discard([episode for group in refill.groups for episode in group.episodes])
            raise
        for group in refill.surplus():
            self.discard(group.episodes)
        chosen = refill.chosen()
        metrics["dynamic_sampling/extra_rollouts"].append(float(refill.spent))
        metrics["dynamic_sampling/zero_std_share"].append(refill.zero_std_share())
        metrics["dynamic_sampling/groups_kept"].append(float(min(len(refill.kept), refill.wanted)))
        episodes = [episode for group in chosen for episode in group.episodes]
        return [row for group in chosen for row in group.rows], episodes

    def refill_in_rounds(self, refill: GroupRefill, rows: Rows, sync: bool) -> None:
        """Play every candidate group, judge them all, then the round of replacements, until none is due."""
        while rows:
            episodes = self.play([row["prompt"] for row in rows], rows, sync=sync)
            refill.judge(refill.add(rows, episodes))
            rows = refill.replacements(running=0)

    def refill_overlapping(self, refill: GroupRefill, rows: Rows, sync: bool) -> None:
        """Play the batch by episode, each group judged once it ended and replaced while the others run."""
        engine = self.environment.engine

        def start(group_rows: Sequence[dict[str, Any]]) -> list[Trajectory]:
            return engine.start([row["prompt"] for row in group_rows], 1, group_rows)

        with self.weights_for_rollout(sync):
            engine.rollout_from(OverlappingRefill(refill, start, rows))

    def discard(self, episodes: Sequence[Trajectory]) -> None:
        """Episodes no step trains on: their kept scores forgotten, their per-episode servers stopped."""
        self.rewards.forget(episodes)
        self.environment.release(episodes)

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        # TRL hands `rollout_func` the prompts alone; the rows' other columns are what per-episode servers'
        # `setup` paths name (`{column}`), so the rows are kept for the rollout this call makes.
        training = self.model.training
        if training and self.ahead is not None:
            inputs = self.overlapped_batch(inputs)
        elif training and self.grpo.dynamic_sampling:
            inputs, self._ready = self.dynamic_batch(inputs)
        self._batch_rows = inputs
        try:
            with self.stale_samples_weighted(training):
                output = super()._generate_and_score_completions(inputs)
        finally:
            self._batch_rows = None
            self._ready = None
        if training:
            self.weigh_advantages(output)
        return output

    # -- overlap --------------------------------------------------------------------------------------
    def overlapped_batch(self, inputs: Rows) -> Rows:
        """With ``grpo.overlap``: the rows of the batch rolled out during the last step (its episodes kept
        for ``rollout``), and this call's rows started in the background with the weights as they are now.
        The first call (of a run, or after a resume) plays its rows at once and starts a batch of training
        rows of its own drawing, so that TRL's batches all train, each one step later."""
        assert self.ahead is not None
        played = self.ahead.take()
        upcoming = inputs
        with self.generating():  # this step's weights, for what is played now and what starts now
            if played is None:
                played = self.ahead.played(inputs, self.state.global_step)
                upcoming = self.drawn_batch(len(inputs))
            self.ahead.start(upcoming, self.state.global_step)
        self.environment.engine.last_stats = played.stats
        for name, values in played.metrics.items():
            self.step_metrics[name].extend(values)
        self._ready = played.episodes
        return played.rows

    def play_rows(self, rows: Rows, metrics: Metrics) -> tuple[Rows, list[Trajectory]]:
        """A batch's rows played with the weights the generator holds (dynamic sampling's, if on)."""
        if self.grpo.dynamic_sampling:
            return self.dynamic_batch(rows, metrics, sync=False)
        return rows, self.play([row["prompt"] for row in rows], rows, sync=False)

    def drawn_batch(self, size: int) -> Rows:
        """``size`` rows as TRL lays out a batch: distinct training rows, each once per generation."""
        rows = self.fresh_rows(size // self.num_generations, set())
        return [row for row in rows for _ in range(self.num_generations)]

    @contextmanager
    def stale_samples_weighted(self, training: bool) -> Iterator[None]:
        """With ``grpo.overlap``, TRL's importance-sampling correction while it scores a batch and computes
        its loss: each token's loss weighed by the current policy's probability over the sampling policy's
        (``trainer.vllm_importance_sampling_mode``, truncated or masked at ``_clip_max``/``_clip_min``).

        TRL applies it only for its own vLLM generation, behind ``use_vllm``, and then syncs vLLM's weights
        at each new step; the gate is opened for the block with that sync marked done.
        """
        if self.ahead is None or not training:
            yield
            return
        saved = self.use_vllm, getattr(self, "_last_loaded_step", None)
        self.use_vllm, self._last_loaded_step = True, self.state.global_step
        try:
            yield
        finally:
            self.use_vllm, self._last_loaded_step = saved

    def weigh_advantages(self, output: dict[str, Any]) -> None:
        """Count the batch's informative groups (some advantage not 0), decide whether the step is skipped,
        and scale negative advantages by ``grpo.negative_advantage_weight``."""
        advantages = output["advantages"]
        # Every rank decides alike (a rank stepping alone would leave the replicas apart), and a group may
        # span ranks: count over the whole batch.
        groups = self.accelerator.gather(advantages).view(-1, self.num_generations)
        informative = int((groups.abs() > 1e-6).any(1).sum())
        self.skip_update = informative < self.grpo.min_informative_groups
        self.step_metrics["grpo/informative_groups"].append(float(informative))
        self.step_metrics["grpo/skipped_step"].append(float(self.skip_update))
        if self.grpo.negative_advantage_weight != 1.0:
            output["advantages"] = torch.where(
                advantages < 0, advantages * self.grpo.negative_advantage_weight, advantages
            )

    def log(self, logs: dict[str, float], start_time: float | None = None) -> None:
        if "loss" in logs and self.step_metrics:
            logs = {**logs, **{k: sum(v) / len(v) for k, v in self.step_metrics.items() if v}}
            self.step_metrics.clear()
        super().log(logs, start_time)

    # -- the loss -------------------------------------------------------------------------------------
    def compute_loss(
        self, model: Any, inputs: dict[str, Any], return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> Any:
        """TRL's loss on the micro-batch without the columns that are padding in all of its rows, scoring only
        the tokens the loss reads (model-written completion tokens)."""
        inputs = trim_padding(inputs)
        loss_mask = inputs["completion_mask"] * inputs.get("tool_mask", 1)
        lean = nullcontext() if self.lean_scoring is None else self.lean_scoring.reading(loss_mask)
        with self.stale_samples_weighted(self.model.training), lean:
            loss = super().compute_loss(model, inputs, return_outputs, num_items_in_batch)
        if self.demonstration_loss is None or not self.model.training:
            return loss
        with torch.device(self.accelerator.device):  # the batch tensors ``supervised_loss`` builds
            demonstrated = self.demonstration_loss(
                self.accelerator.unwrap_model(model), self.state.global_step
            )
        self.step_metrics["grpo/sft_loss"].append(float(demonstrated.detach()))
        # TRL's loss comes scaled for gradient accumulation (its micro-batches sum to the step's loss).
        return loss + self.grpo.sft_coef * demonstrated / self.current_gradient_accumulation_steps

    # -- lifetime -------------------------------------------------------------------------------------
    def train(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().train(*args, **kwargs)
        finally:
            if self.ahead is not None:  # the batch rolled out for a step that will not come
                self.ahead.close(self.discard)
            if self.close_environment:
                self.environment.close()
