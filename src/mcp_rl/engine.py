"""The rollout engine: generate → parse → invoke → update, for a whole batch of trajectories at once.

Each turn, every unfinished trajectory generates in one batch; every call of every trajectory goes to the
tool pool at once (so a turn costs about one tool latency, however many trajectories there are); each
observation is tokenized once and appended with mask 0 after the model's own tokens, which are kept exactly
as generated. Usable without TRL: evaluation and ``mcp-rl rollout`` drive it directly.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from typing import Any

from mcp_rl.configs import RolloutConfig
from mcp_rl.generation import Generation, Generator, SamplingParams
from mcp_rl.observation import TOKEN_TRUNCATION_MARKER
from mcp_rl.parsers import ParsedTurn, ParseError, Parser, ToolCall
from mcp_rl.pool import BlockingToolPool, EpisodeTools, FailureKind, ToolResult, failed
from mcp_rl.prompts import PromptBuilder
from mcp_rl.trajectory import CallRecord, Trajectory, Turn

TRUNCATED = TOKEN_TRUNCATION_MARKER


class RolloutEngine:
    """Runs multi-turn episodes for many prompts against a generator, a parser and a tool pool."""

    def __init__(
        self,
        generator: Generator,
        tokenizer: Any,
        parser: Parser,
        prompts: PromptBuilder,
        pool: BlockingToolPool | None,
        config: RolloutConfig,
    ) -> None:
        self.generator = generator
        self.tokenizer = tokenizer
        self.parser = parser
        self.prompts = prompts
        self.pool = pool
        self.config = config
        before, after = prompts.observation_frame(config.observation_role)
        eos = tokenizer.eos_token_id
        eos_text = tokenizer.decode([eos]) if eos is not None else None
        # The frame is the same for every observation: tokenize its pieces once.
        self.before_ids = self._encode(before)
        after_eos = before
        if eos_text and after_eos.startswith(eos_text):
            after_eos = after_eos[len(eos_text) :]  # the model already closed its turn
        self.before_after_eos_ids = self._encode(after_eos)
        self.after_ids = self._encode(after)
        self.truncated_ids = self._encode(TRUNCATED)
        self.last_stats: dict[str, float] = {}

    # -- the main loop --------------------------------------------------------------------------------
    def rollout(
        self,
        prompts: Sequence[Sequence[Mapping[str, Any]]],
        *,
        num_generations: int = 1,
        greedy: bool = False,
    ) -> list[Trajectory]:
        """Episodes for each message list, ``num_generations`` samples each, in prompt order."""
        started = time.perf_counter()
        trajectories = self.start(prompts, num_generations)
        sampling = self.sampling(greedy)
        generate_s = tools_s = 0.0
        for turn_index in range(self.config.max_turns):
            active = [t for t in trajectories if not t.done]
            # A lockstep backend gathers every rank's prompts: keep calling it until all ranks are done.
            if not active and not self.generator.lockstep:
                break
            tick = time.perf_counter()
            generations = self.generate(active, sampling)
            generate_s += time.perf_counter() - tick
            pending = [
                self.record_turn(t, g, last_turn=turn_index == self.config.max_turns - 1)
                for t, g in zip(active, generations, strict=True)
            ]
            tick = time.perf_counter()
            self.act(active, pending)
            tools_s += time.perf_counter() - tick
        for trajectory in trajectories:
            if not trajectory.done:
                trajectory.finish_reason = "max_turns"
        self.last_stats = {
            "rollout/generate_s": generate_s,
            "rollout/tools_s": tools_s,
            "rollout/total_s": time.perf_counter() - started,
        }
        return trajectories

    def start(self, prompts: Sequence[Sequence[Mapping[str, Any]]], num_generations: int) -> list[Trajectory]:
        trajectories: list[Trajectory] = []
        encoded: dict[str, list[int]] = {}  # TRL hands each prompt over repeated once per generation
        for index, messages in enumerate(prompts):
            key = json.dumps(messages, sort_keys=True, default=str)
            prompt_ids = encoded.get(key) or encoded.setdefault(key, self.prompts.encode(messages))
            for _ in range(num_generations):
                trajectories.append(
                    Trajectory(
                        prompt_index=index,
                        prompt_messages=[dict(m) for m in messages],
                        prompt_ids=list(prompt_ids),
                    )
                )
        if self.pool is not None:  # each episode's tools: its own per-episode server instances, if any
            opened = self.pool.open_episodes(len(trajectories))
            for trajectory, tools in zip(trajectories, opened, strict=True):
                trajectory.tools = tools
        return trajectories

    def sampling(self, greedy: bool) -> SamplingParams:
        config = self.config
        return SamplingParams(
            max_new_tokens=config.max_new_tokens,
            temperature=0.0 if greedy else config.temperature,
            top_p=config.top_p,
            top_k=config.top_k,
            stop_strings=list(self.parser.stop_strings),
        )

    def generate(self, active: Sequence[Trajectory], sampling: SamplingParams) -> list[Generation]:
        """One turn for every active trajectory, in one batched call.

        Finished trajectories never get here, so a long episode does not make short ones pay for it; a
        trajectory nearly out of budget is trimmed afterwards rather than shortening everyone's turn.
        """
        return self.generator.generate([t.prompt_ids + t.completion_ids for t in active], sampling)

    def remaining(self, trajectory: Trajectory) -> int:
        return self.config.max_completion_tokens - len(trajectory.completion_ids)

    def record_turn(
        self, trajectory: Trajectory, generation: Generation, *, last_turn: bool
    ) -> ParsedTurn | None:
        """Append the model's tokens, parse them, and decide whether the episode goes on.

        Returns the parsed turn when it needs an observation (calls, parse errors, or no action to retry).
        """
        ids = generation.token_ids[: max(0, self.remaining(trajectory))]
        truncated_by_budget = len(ids) < len(generation.token_ids)
        text = self.tokenizer.decode(ids, skip_special_tokens=True)
        trajectory.completion_ids += ids
        trajectory.completion_mask += [1] * len(ids)
        if generation.logprobs is not None:
            trajectory.logprobs = (trajectory.logprobs or []) + list(generation.logprobs[: len(ids)])
        turn = Turn(text=text, generated_tokens=len(ids))
        trajectory.turns.append(turn)
        trajectory.info["last_finish"] = "length" if truncated_by_budget else generation.finish_reason
        parsed = self.parser.parse(text)
        turn.parse_errors = [error.message for error in parsed.errors]
        if parsed.answer is not None:
            trajectory.answer = parsed.answer
            trajectory.finish_reason = "answer"
            return None
        if self.remaining(trajectory) <= 0:
            trajectory.finish_reason = "max_tokens"
            return None
        if last_turn:
            trajectory.finish_reason = "max_turns"
            return None
        if not parsed.has_action and self.config.on_no_action == "stop":
            trajectory.finish_reason = "no_action"
            return None
        return parsed

    def act(self, active: Sequence[Trajectory], pending: Sequence[ParsedTurn | None]) -> None:
        """Invoke all calls of all trajectories concurrently, then append each trajectory's observation."""
        calls = [
            (t, call) for t, parsed in zip(active, pending, strict=True) if parsed for call in parsed.calls
        ]
        results = self.invoke([call for _, call in calls], [t.tools for t, _ in calls])
        by_trajectory: dict[int, list[ToolResult]] = {}
        for (trajectory, _), result in zip(calls, results, strict=True):
            by_trajectory.setdefault(id(trajectory), []).append(result)
        for trajectory, parsed in zip(active, pending, strict=True):
            if parsed is not None:
                self.observe(trajectory, parsed, by_trajectory.get(id(trajectory), []))

    def invoke(
        self, calls: Sequence[ToolCall], tools: Sequence[EpisodeTools | None] = ()
    ) -> list[ToolResult]:
        """Every call at once; call ``i`` goes to ``tools[i]``'s per-episode instances where it has them."""
        if not calls:
            return []
        if self.pool is None:
            return [
                failed(c.name, c.arguments, FailureKind.UNKNOWN_TOOL, "no tools are configured")
                for c in calls
            ]
        episodes = [t.episode if t is not None else None for t in tools] if tools else None
        return self.pool.call_many([(call.name, call.arguments) for call in calls], episodes=episodes)

    def observe(self, trajectory: Trajectory, parsed: ParsedTurn, results: Sequence[ToolResult]) -> None:
        """Write the turn's observation back as tokens with mask 0, within the budgets."""
        turn = trajectory.turns[-1]
        index = len(trajectory.turns) - 1
        items: list[tuple[ToolCall | ParseError, str]] = []
        for call, result in zip(parsed.calls, results, strict=True):
            items.append((call, result.text))
            turn.calls.append(
                CallRecord(
                    index,
                    call.name,
                    call.arguments,
                    result.text,
                    result.failure and str(result.failure),
                    result.latency_s,
                )
            )
        items += [(error, error.message) for error in parsed.errors]
        content = self.parser.format_observation(items) if items else self.parser.invalid_action_message
        if self.config.observation_role != "inline":
            content = content.strip()  # a chat message needs no blank lines around it; inline text may
        observation_ids = self.observation_ids(
            content, ended_with_eos=trajectory.info["last_finish"] == "eos"
        )
        if len(observation_ids) > self.remaining(trajectory):
            # As in TRL: an observation that does not fit ends the episode instead of being cut mid-frame.
            trajectory.finish_reason = "max_tokens"
            return
        turn.observation = self.tokenizer.decode(observation_ids, skip_special_tokens=False)
        turn.observation_tokens = len(observation_ids)
        trajectory.completion_ids += observation_ids
        trajectory.completion_mask += [0] * len(observation_ids)
        if trajectory.logprobs is not None:
            trajectory.logprobs += [0.0] * len(observation_ids)

    def observation_ids(self, content: str, *, ended_with_eos: bool) -> list[int]:
        """Frame + content token ids; the content is cut to ``max_observation_tokens`` with a marker."""
        content_ids = self._encode(content)
        limit = self.config.max_observation_tokens
        if len(content_ids) > limit:
            content_ids = content_ids[: max(0, limit - len(self.truncated_ids))] + self.truncated_ids
        before = self.before_after_eos_ids if ended_with_eos else self.before_ids
        return before + content_ids + self.after_ids

    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"] if text else []


def rollout_metrics(trajectories: Sequence[Trajectory]) -> dict[str, float]:
    """Per-batch numbers worth a line in the logs."""
    if not trajectories:
        return {}
    n = len(trajectories)
    calls = [c for t in trajectories for c in t.calls]
    metrics = {
        "rollout/turns_mean": sum(len(t.turns) for t in trajectories) / n,
        "rollout/calls_per_trajectory": len(calls) / n,
        "rollout/call_failure_rate": sum(not c.ok for c in calls) / len(calls) if calls else 0.0,
        "rollout/parse_errors_per_trajectory": sum(
            len(turn.parse_errors) for t in trajectories for turn in t.turns
        )
        / n,
        "rollout/answered": sum(t.answer is not None for t in trajectories) / n,
        "rollout/observation_tokens_mean": sum(t.completion_mask.count(0) for t in trajectories) / n,
        "rollout/model_tokens_mean": sum(t.completion_mask.count(1) for t in trajectories) / n,
    }
    for reason in ("answer", "no_action", "max_turns", "max_tokens"):
        metrics[f"rollout/finish_{reason}"] = sum(t.finish_reason == reason for t in trajectories) / n
    return metrics


def searched_again(trajectory: Trajectory) -> bool:
    """Two or more tool calls: what a question needing a second lookup (a two-hop one) asks for."""
    return len(trajectory.calls) >= 2


def hop_metrics(
    trajectories: Sequence[Trajectory], rows: Sequence[Mapping[str, Any]], exact: Sequence[float] | None
) -> dict[str, float]:
    """By the rows' ``hops`` column (when they have one): exact match and the share with ≥ 2 calls."""
    by_hops: dict[Any, list[int]] = {}
    for index, row in enumerate(rows):
        if row.get("hops") is not None:
            by_hops.setdefault(row["hops"], []).append(index)
    metrics: dict[str, float] = {}
    for hops, indices in sorted(by_hops.items()):
        metrics[f"hops/{hops}/called_twice"] = sum(searched_again(trajectories[i]) for i in indices) / len(
            indices
        )
        if exact is not None:
            metrics[f"hops/{hops}/em"] = sum(exact[i] for i in indices) / len(indices)
    return metrics
