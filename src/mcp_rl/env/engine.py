"""The rollout engine: generate → parse → invoke → update, for many trajectories at once.

Two schedules (``rollout.scheduling``). By episode, each episode advances on its own: its calls go to the
tool pool as soon as its turn is written, and whichever episodes have their observations back generate
together in one batch, so a slow or hung call delays only its own episode. By turn (the default), every
unfinished trajectory generates in one batch, then every call of every trajectory goes out at once, then the
next turn. Either way each observation is tokenized once and appended with mask 0 after the model's own
tokens, which are kept exactly as generated. Usable without TRL: evaluation and ``mcp-rl rollout`` drive it
directly.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent import futures
from typing import Any

from mcp_rl.config.sections import RolloutConfig
from mcp_rl.env.parsers import ParsedTurn, ParseError, Parser, ToolCall
from mcp_rl.env.prompts import PromptBuilder
from mcp_rl.env.trajectory import CallRecord, Trajectory, Turn
from mcp_rl.generation.base import Generation, Generator, SamplingParams
from mcp_rl.tools import BlockingToolPool, EpisodeTools, FailureKind, ToolResult, failed
from mcp_rl.tools.observation import TOKEN_TRUNCATION_MARKER

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
        self._thread_stats = threading.local()
        self.started = time.perf_counter()  # when the episodes under way started

    @property
    def last_stats(self) -> dict[str, float]:
        """The timings of the last rollout this thread ran (a trainer that rolls the next batch out in the
        background while this one is scored keeps each batch's own)."""
        return getattr(self._thread_stats, "stats", {})

    @last_stats.setter
    def last_stats(self, stats: dict[str, float]) -> None:
        self._thread_stats.stats = stats

    # -- the main loop --------------------------------------------------------------------------------
    def rollout(
        self,
        prompts: Sequence[Sequence[Mapping[str, Any]]],
        *,
        num_generations: int = 1,
        greedy: bool = False,
        rows: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Trajectory]:
        """Episodes for each message list, ``num_generations`` samples each, in prompt order.

        ``rows``, the dataset row of each prompt, reach the per-episode servers' ``setup`` (``{column}``).
        An episode whose per-episode servers failed to start ends after its first turn, as a failure."""
        started = time.perf_counter()
        trajectories = self.start(prompts, num_generations, rows)
        sampling = self.sampling(greedy)
        if self.by_episode:
            generate_s, tools_s = self.run_episodes(trajectories, sampling)
        else:
            generate_s, tools_s = self.run_turns(trajectories, sampling)
        for trajectory in trajectories:
            if not trajectory.done:
                trajectory.finish_reason = "max_turns"
            self.ended(trajectory)
        self.last_stats = timings(generate_s, tools_s, started)
        return trajectories

    def rollout_from(self, source: Iterator[Trajectory], *, greedy: bool = False) -> None:
        """By episode, every episode ``source`` hands out (made with ``start``), including those it adds
        while others run (see ``run_episodes``); the timings go to ``last_stats`` as for ``rollout``."""
        if not self.by_episode:
            raise ValueError("rollout_from needs episode scheduling and a generator that is not lockstep")
        started = time.perf_counter()
        generate_s, tools_s = self.run_episodes(source, self.sampling(greedy))
        self.last_stats = timings(generate_s, tools_s, started)

    @property
    def by_episode(self) -> bool:
        """Whether episodes advance on their own: a lockstep backend needs every rank's calls in step."""
        return self.config.scheduling == "episode" and not self.generator.lockstep

    def run_turns(self, trajectories: Sequence[Trajectory], sampling: SamplingParams) -> tuple[float, float]:
        """Turn by turn: all unfinished episodes generate, then all their calls; seconds generating and
        waiting for tools."""
        generate_s = tools_s = 0.0
        self.started = time.perf_counter()
        for turn_index in range(self.config.max_turns):
            active = [t for t in trajectories if not t.done]
            # A lockstep backend gathers every rank's prompts: keep calling it until all ranks are done.
            if not active and not self.generator.lockstep:
                break
            tick = time.perf_counter()
            generations = self.generate(active, sampling)
            elapsed = time.perf_counter() - tick
            generate_s += elapsed
            pending = [
                self.record_turn(t, g, last_turn=turn_index == self.config.max_turns - 1)
                for t, g in zip(active, generations, strict=True)
            ]
            for trajectory in active:
                trajectory.info["generate_s"] += elapsed
            tick = time.perf_counter()
            self.act(active, pending)
            tools_s += time.perf_counter() - tick
            for trajectory in active:
                if "episode_error" in trajectory.info:
                    fail_episode(trajectory)
                if trajectory.done:
                    self.ended(trajectory)
        return generate_s, tools_s

    def ended(self, trajectory: Trajectory) -> None:
        """Note when an episode ended (seconds after the episodes started), the first time it is seen done."""
        trajectory.info.setdefault("ended_s", time.perf_counter() - self.started)

    def run_episodes(
        self, episodes: Iterable[Trajectory], sampling: SamplingParams, *, in_flight: int | None = None
    ) -> tuple[float, float]:
        """Each episode on its own: the episodes that are ready (new, or their observation back) generate in
        one batch, their calls are submitted without waiting, and the loop waits only when no episode is
        ready. Seconds generating and waiting for tools.

        Episodes are taken from ``episodes`` as it yields them, at most ``in_flight`` running at once (None:
        no limit), so a caller can hand a lazy iterable that stops when it has enough episodes. An iterator
        that has none to give now (``StopIteration``) is asked again each time the loop goes round, after
        episodes ended, so it can add episodes while others run; the run ends when it has none and none
        runs."""
        waiting = CallsInFlight()
        self.started = time.perf_counter()
        try:
            return self.advance_episodes(iter(episodes), sampling, waiting, in_flight)
        except BaseException:  # the caller gave up (or a bug): calls still out are not waited for
            waiting.cancel()
            raise

    def advance_episodes(
        self,
        source: Iterator[Trajectory],
        sampling: SamplingParams,
        waiting: CallsInFlight,
        in_flight: int | None,
    ) -> tuple[float, float]:
        order: dict[int, int] = {}  # episodes generate in the order they came, as by turn
        ready: list[Trajectory] = []
        running = 0
        generate_s = tools_s = last_generate_s = 0.0
        while True:
            while in_flight is None or running < in_flight:
                trajectory = next(source, None)
                if trajectory is None:
                    break
                order[id(trajectory)] = len(order)
                running += 1
                ready.append(trajectory)
            if not ready and not waiting:
                return generate_s, tools_s
            tick = time.perf_counter()
            # None ready: wait for the first; then for the others, up to a share of a generate call.
            back = waiting.collect(block=not ready, window_s=self.config.gather * last_generate_s)
            for trajectory, parsed, results in back:
                if self.complete_turn(trajectory, parsed, results):
                    ready.append(trajectory)
                else:
                    running -= 1
            tools_s += time.perf_counter() - tick
            if not ready:
                continue  # the episodes that came back all ended: take new ones, or wait for the rest
            ready.sort(key=lambda t: order[id(t)])
            hold = getattr(self.generator, "hold", None)
            if hold is not None:  # a generator keeping state between calls: these episodes come back
                hold(waiting.sequences())
            tick = time.perf_counter()
            generations = self.generate(ready, sampling)
            last_generate_s = time.perf_counter() - tick
            generate_s += last_generate_s
            turns, ready = ready, []
            outgoing: list[tuple[Trajectory, ParsedTurn]] = []
            for trajectory, generation in zip(turns, generations, strict=True):
                trajectory.info["generate_s"] += last_generate_s
                last_turn = len(trajectory.turns) + 1 >= self.config.max_turns
                parsed = self.record_turn(trajectory, generation, last_turn=last_turn)
                if parsed is not None and parsed.calls and self.pool is not None:
                    outgoing.append((trajectory, parsed))
                    continue
                results = self.invoke(parsed.calls) if parsed is not None else []  # no pool, or no calls
                if self.complete_turn(trajectory, parsed, results):
                    ready.append(trajectory)
                else:
                    running -= 1
            if outgoing:
                for (trajectory, parsed), calls in zip(outgoing, self.submit(outgoing), strict=True):
                    waiting.add(calls, trajectory, parsed)

    def complete_turn(
        self, trajectory: Trajectory, parsed: ParsedTurn | None, results: Sequence[ToolResult]
    ) -> bool:
        """Write a turn's observation (when it needs one); whether the episode goes on."""
        if parsed is not None:
            self.observe(trajectory, parsed, results)
        if "episode_error" in trajectory.info:
            fail_episode(trajectory)
        if trajectory.done:
            self.ended(trajectory)
        return not trajectory.done

    def start(
        self,
        prompts: Sequence[Sequence[Mapping[str, Any]]],
        num_generations: int,
        rows: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[Trajectory]:
        if rows is not None and len(rows) != len(prompts):
            raise ValueError(f"rollout: {len(prompts)} prompts but {len(rows)} rows")
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
                        info={"generate_s": 0.0, "tools_s": 0.0},  # its own time, without waiting
                    )
                )
        if self.pool is not None:  # each episode's tools: its own per-episode server instances, if any
            episode_rows = [rows[t.prompt_index] for t in trajectories] if rows is not None else None
            opened = self.pool.open_episodes(len(trajectories), episode_rows)
            for trajectory, tools in zip(trajectories, opened, strict=True):
                trajectory.tools = tools
                if tools.error is not None:
                    trajectory.info["episode_error"] = tools.error
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

    def submit(
        self, pending: Sequence[tuple[Trajectory, ParsedTurn]]
    ) -> list[futures.Future[list[ToolResult]]]:
        """Each episode's calls, all sent at once without waiting: one future per episode (needs a pool)."""
        assert self.pool is not None
        groups = []
        for trajectory, parsed in pending:
            episode = trajectory.tools.episode if trajectory.tools is not None else None
            groups.append(([(c.name, c.arguments) for c in parsed.calls], [episode] * len(parsed.calls)))
        return self.pool.submit_groups(groups)

    def observe(self, trajectory: Trajectory, parsed: ParsedTurn, results: Sequence[ToolResult]) -> None:
        """Write the turn's observation back as tokens with mask 0, within the budgets."""
        # The episode's own tool time: its calls run at once, so its slowest one.
        trajectory.info["tools_s"] = trajectory.info.get("tools_s", 0.0) + max(
            (r.latency_s for r in results), default=0.0
        )
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


def timings(generate_s: float, tools_s: float, started: float) -> dict[str, float]:
    """A rollout's seconds generating, waiting for tools, and in all since ``started``."""
    return {
        "rollout/generate_s": generate_s,
        "rollout/tools_s": tools_s,
        "rollout/total_s": time.perf_counter() - started,
    }


class CallsInFlight:
    """The episodes waiting for their calls, and the order their results come back in.

    Each future reports itself to a queue when it is done (from the pool's loop), so collecting costs what
    came back, not a scan of every episode still out."""

    def __init__(self) -> None:
        self.episodes: dict[futures.Future[list[ToolResult]], tuple[Trajectory, ParsedTurn]] = {}
        self.arrived: queue.SimpleQueue[futures.Future[list[ToolResult]]] = queue.SimpleQueue()

    def __len__(self) -> int:
        return len(self.episodes)

    def add(
        self, calls: futures.Future[list[ToolResult]], trajectory: Trajectory, parsed: ParsedTurn
    ) -> None:
        self.episodes[calls] = (trajectory, parsed)
        calls.add_done_callback(self.arrived.put)

    def collect(
        self, *, block: bool, window_s: float
    ) -> list[tuple[Trajectory, ParsedTurn, list[ToolResult]]]:
        """The episodes whose results are back: with ``block``, wait for one first; then wait up to
        ``window_s`` more while some are still out."""
        done: list[futures.Future[list[ToolResult]]] = []
        if block and self.episodes:
            done.append(self.arrived.get())
        deadline = time.perf_counter() + window_s
        while len(done) < len(self.episodes):
            try:
                done.append(self.arrived.get(timeout=max(0.0, deadline - time.perf_counter())))
            except queue.Empty:
                break
        return [(*self.episodes.pop(future), future.result()) for future in done]

    def sequences(self) -> list[list[int]]:
        """Each waiting episode's tokens so far."""
        return [t.prompt_ids + t.completion_ids for t, _ in self.episodes.values()]

    def cancel(self) -> None:
        for calls in self.episodes:
            calls.cancel()


def fail_episode(trajectory: Trajectory) -> None:
    """End an episode whose per-episode servers never started: it scores as a failure (no answer), the
    model's first turn kept, and its calls failed, so the trace shows what happened.

    It still runs one turn rather than none: a trajectory without completion tokens breaks the trainer's
    batch (TRL reads each completion's last token)."""
    trajectory.answer = None
    trajectory.finish_reason = "episode_failed"
