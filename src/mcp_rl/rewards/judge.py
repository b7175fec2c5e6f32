"""An LLM judge as a reward: each final answer is graded against the golden answers by a model.

Async end to end: ``JudgeReward.__call__`` is a coroutine function, so TRL awaits it on its own event loop,
concurrently with the other async rewards. Backends are async too — :class:`OpenAIJudge` sends a batch's
requests concurrently over one ``httpx2.AsyncClient``, :class:`TransformersJudge` generates on a worker thread
so the loop stays free. Synchronous callers go through :func:`mcp_rl.tools.bridge.run_sync`.
"""

from __future__ import annotations

import logging
import os
import re
import threading
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, Protocol

import anyio
import httpx2

from mcp_rl.env.trajectory import Trajectory
from mcp_rl.rewards.answers import golden_list, golds_column
from mcp_rl.rewards.samples import sample_question, sample_rows, sample_trajectories

logger = logging.getLogger(__name__)

DEFAULT_JUDGE_TEMPLATE = (
    "You are grading an answer to a question against a reference answer.\n\n"
    "Question: {question}\n"
    "Reference answer: {golden}\n"
    "Answer to grade: {answer}\n\n"
    "Grade how well the answer agrees with the reference, from 0 (wrong or missing) to 10 (fully correct; "
    "wording may differ). Reply with the grade only, as <score>N</score>."
)
_TEMPLATE_FIELD = re.compile(r"\{(question|answer|golden)\}")
_SCORE_TAG = re.compile(r"<score>\s*([-+]?\d+(?:\.\d+)?)\s*</score>", re.IGNORECASE)
_BARE_NUMBER = re.compile(r"(?<![\w.])([-+]?\d+(?:\.\d+)?)")


def render_judge_prompt(template: str, *, question: str, answer: str, golden: str) -> str:
    """Fill ``{question}``, ``{answer}`` and ``{golden}``; other braces (JSON examples) stay as written."""
    values = {"question": question, "answer": answer, "golden": golden}
    return _TEMPLATE_FIELD.sub(lambda match: values[match.group(1)], template)


def parse_judge_score(reply: str | None, max_score: float = 10.0) -> float | None:
    """``<score>N</score>`` (or, failing that, the first bare number) scaled to [0, 1]; None if unusable."""
    if reply is None:
        return None
    match = _SCORE_TAG.search(reply) or _BARE_NUMBER.search(reply)
    if match is None:
        return None
    value = float(match.group(1))
    # A grade outside the scale means the judge did not follow the template: skip rather than clip.
    return value / max_score if 0.0 <= value <= max_score else None


class JudgeBackend(Protocol):
    """Anything that turns judge prompts into replies, awaitably; None for a request that failed."""

    async def complete_many(self, prompts: Sequence[str]) -> list[str | None]: ...


class OpenAIJudge:
    """A judge behind an OpenAI-compatible ``/chat/completions`` endpoint (OpenAI, vLLM, llama.cpp, ...).

    Requests run concurrently up to ``max_concurrency``; transport errors, timeouts, HTTP 429 and 5xx are
    retried ``retries`` times with exponential backoff (honouring ``Retry-After``). The API key is read from
    the environment variable named ``api_key_env`` each time it is needed and is never stored on the object,
    logged, or put in a message.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = None,
        max_concurrency: int = 8,
        timeout_s: float = 30.0,
        retries: int = 2,
        *,
        max_tokens: int = 64,
        temperature: float = 0.0,
        backoff_s: float = 0.5,
        system_prompt: str | None = None,
    ) -> None:
        if max_concurrency < 1 or retries < 0 or timeout_s <= 0:
            raise ValueError("OpenAIJudge needs max_concurrency >= 1, retries >= 0 and timeout_s > 0")
        if api_key_env is not None and not os.environ.get(api_key_env):
            raise ValueError(f"OpenAIJudge: environment variable {api_key_env} (the API key) is not set")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.max_concurrency = max_concurrency
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.backoff_s = backoff_s
        self.system_prompt = system_prompt

    def __repr__(self) -> str:
        # Only the variable's name: the key itself never appears in a repr.
        return (
            f"OpenAIJudge(base_url={self.base_url!r}, model={self.model!r}, "
            f"api_key_env={self.api_key_env!r}, max_concurrency={self.max_concurrency}, "
            f"timeout_s={self.timeout_s}, retries={self.retries})"
        )

    def _api_key(self) -> str | None:
        return os.environ.get(self.api_key_env) if self.api_key_env else None

    def _redact(self, text: str) -> str:
        key = self._api_key()
        return text.replace(key, "***") if key else text

    async def complete_many(self, prompts: Sequence[str]) -> list[str | None]:
        """All prompts concurrently (capped); replies in order, None where a request failed for good."""
        replies: list[str | None] = [None] * len(prompts)
        problems: Counter[str] = Counter()
        limiter = anyio.CapacityLimiter(self.max_concurrency)
        headers = {"Authorization": f"Bearer {key}"} if (key := self._api_key()) else {}
        limits = httpx2.Limits(
            max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency
        )

        async def one(index: int, client: httpx2.AsyncClient) -> None:
            async with limiter:
                replies[index], problem = await self._complete(client, prompts[index])
            if problem is not None:
                problems[problem] += 1

        async with (
            httpx2.AsyncClient(headers=headers, timeout=self.timeout_s, limits=limits) as client,
            anyio.create_task_group() as group,
        ):
            for index in range(len(prompts)):
                group.start_soon(one, index, client)
        if problems:
            # One line per batch rather than one per sample: a dead judge must not flood the training log.
            summary = ", ".join(f"{problem} x{count}" for problem, count in problems.most_common())
            failed = sum(problems.values())
            logger.warning(
                "judge %s: %d of %d requests failed (%s)", self.model, failed, len(prompts), summary
            )
        return replies

    def _body(self, prompt: str) -> dict[str, Any]:
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        return {
            "model": self.model,
            "messages": messages,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature,
        }

    async def _complete(self, client: httpx2.AsyncClient, prompt: str) -> tuple[str | None, str | None]:
        """One judgement with retries → (reply, None) or (None, why it failed)."""
        body, problem = self._body(prompt), "no attempt"
        for attempt in range(self.retries + 1):
            wait = self.backoff_s * 2**attempt
            try:
                # fail_after bounds the whole exchange; httpx's own timeout only bounds each read/write.
                with anyio.fail_after(self.timeout_s):
                    response = await client.post(f"{self.base_url}/chat/completions", json=body)
            except (httpx2.TransportError, TimeoutError, OSError) as error:
                timed_out = isinstance(error, TimeoutError | httpx2.TimeoutException)
                problem = "timeout" if timed_out else self._redact(f"{type(error).__name__}: {error}")
            else:
                if response.status_code == 429 or response.status_code >= 500:
                    problem = f"HTTP {response.status_code}"
                    wait = max(wait, _retry_after_s(response))
                elif response.is_error:  # 4xx: retrying cannot help (bad key, unknown model, bad request)
                    return None, self._redact(f"HTTP {response.status_code}: {response.text[:200]}")
                else:
                    return _reply_content(response)
            if attempt < self.retries:
                logger.debug("judge request failed (%s); retry %d in %.2f s", problem, attempt + 1, wait)
                await anyio.sleep(wait)
        return None, problem


def _retry_after_s(response: httpx2.Response, cap_s: float = 30.0) -> float:
    try:
        return min(cap_s, max(0.0, float(response.headers.get("retry-after", 0))))
    except ValueError:  # an HTTP date: rare for APIs, not worth parsing
        return 0.0


def _reply_content(response: httpx2.Response) -> tuple[str | None, str | None]:
    try:
        content = response.json()["choices"][0]["message"]["content"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None, "malformed response"
    return (content, None) if isinstance(content, str) else (None, "malformed response")


class TransformersJudge:
    """A local judge: a transformers causal LM, greedy decoding through its chat template, in batches."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        max_new_tokens: int = 16,
        *,
        batch_size: int = 8,
        system_prompt: str | None = None,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.max_new_tokens = max_new_tokens
        # Batches need left padding with a pad token; without one, prompts go one at a time.
        self.batch_size = batch_size if tokenizer.pad_token_id is not None else 1
        self.system_prompt = system_prompt
        # One model, one generation at a time: rewards sharing this judge may await it concurrently.
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        name = getattr(getattr(self.model, "config", None), "_name_or_path", "") or type(self.model).__name__
        return f"TransformersJudge(model={name!r}, max_new_tokens={self.max_new_tokens})"

    def _render(self, prompt: str) -> str:
        if not getattr(self.tokenizer, "chat_template", None):
            return prompt
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    async def complete_many(self, prompts: Sequence[str]) -> list[str | None]:
        """Greedy replies in order, generated on a worker thread: the event loop stays free meanwhile."""
        return await anyio.to_thread.run_sync(self._generate_all, list(prompts))

    def _generate_all(self, prompts: Sequence[str]) -> list[str | None]:
        replies: list[str | None] = []
        with self._lock:
            for start in range(0, len(prompts), self.batch_size):
                replies.extend(self._generate(prompts[start : start + self.batch_size]))
        return replies

    def _generate(self, prompts: Sequence[str]) -> list[str]:
        import torch  # only the local judge needs it; keeps `import mcp_rl.rewards` light

        templated = bool(getattr(self.tokenizer, "chat_template", None))
        batch = self.tokenizer(
            [self._render(p) for p in prompts],
            return_tensors="pt",
            padding=True,
            padding_side="left",
            add_special_tokens=not templated,  # the chat template already wrote BOS and friends
        ).to(self.model.device)
        pad_id = self.tokenizer.pad_token_id
        with torch.inference_mode():
            output = self.model.generate(
                **batch,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=pad_id if pad_id is not None else self.tokenizer.eos_token_id,
            )
        new_tokens = output[:, batch["input_ids"].shape[1] :]
        return self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)


class JudgeReward:
    """An LLM judge grades each final answer against the golden answers; the grade scaled to [0, 1] is the
    reward. No answer scores 0 without asking; a failed request or an unparseable reply gives None (TRL
    skips it) and is counted in ``counts`` and through TRL's ``log_metric``."""

    def __init__(
        self,
        backend: JudgeBackend,
        template: str = DEFAULT_JUDGE_TEMPLATE,
        *,
        name: str = "judge",
        max_score: float = 10.0,
    ) -> None:
        self.backend = backend
        self.template = template
        self.max_score = max_score
        self.__name__ = name
        self.counts: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"JudgeReward(name={self.__name__!r}, backend={self.backend!r})"

    async def __call__(
        self,
        *,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        trajectories: Sequence[Trajectory] | None = None,
        golden_answers: Sequence[Any] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        samples = sample_trajectories(trajectories, prompts, completions)
        golds = golds_column(golden_answers, kwargs, len(samples), required=False)
        rows = sample_rows(len(samples), kwargs, prompts)
        asked = [i for i, sample in enumerate(samples) if sample.answer is not None]
        judge_prompts = [
            render_judge_prompt(
                self.template,
                question=sample_question(rows[i], samples[i]),
                answer=samples[i].answer or "",
                golden="; ".join(golden_list(golds[i])),
            )
            for i in asked
        ]
        replies = await self.backend.complete_many(judge_prompts) if judge_prompts else []
        scores: list[float | None] = [0.0] * len(samples)
        failed = unparseable = 0
        for i, reply in zip(asked, replies, strict=True):
            scores[i] = parse_judge_score(reply, self.max_score)
            failed += reply is None
            unparseable += reply is not None and scores[i] is None
        self.counts.update(requests=len(asked), failed=failed, unparseable=unparseable)
        if log_metric is not None and asked:
            log_metric(f"{self.__name__}/failed_frac", failed / len(asked))
            log_metric(f"{self.__name__}/unparseable_frac", unparseable / len(asked))
        return scores


__all__ = [
    "DEFAULT_JUDGE_TEMPLATE",
    "JudgeBackend",
    "JudgeReward",
    "OpenAIJudge",
    "TransformersJudge",
    "parse_judge_score",
    "render_judge_prompt",
]
