"""Reward functions in TRL's shape: rule rewards, an LLM judge, and rewards verified by calling an MCP tool.

Every reward is a callable TRL's ``GRPOTrainer`` takes as is: called with keyword arguments (``prompts``,
``completions``, ``completion_ids``, every dataset column such as ``golden_answers``, ``trainer_state``,
``log_extra``, ``log_metric``, and ``trajectories`` from our trainer), it returns one ``float | None`` per
sample; ``None`` tells TRL to skip this reward for that sample. Its ``__name__`` is what TRL logs under
``rewards/<name>/mean``.

Answers come from ``Trajectory.answer`` — the answer the parser took from the model's own turns — never from
decoded text that may still hold the prompt's example answer (Search-R1's known bug). Without trajectories
(plain TRL), the first ``<answer>…</answer>`` of the completion alone is used.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import inspect
import logging
import math
import os
import re
import string
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Protocol, TypeVar

import anyio
import httpx2

from mcp_rl.pool import FailureKind, ToolResult
from mcp_rl.trajectory import Trajectory

logger = logging.getLogger(__name__)
T = TypeVar("T")
RewardFunction = Callable[..., Any]  # returns list[float | None], or an awaitable of it

# Dataset columns that may hold the golden answers, in the order they are looked for: ours, then
# Search-R1's parquet column (`reward_model: {ground_truth: {target: [...]}}`), then common QA names.
GOLD_COLUMNS = ("golden_answers", "reward_model", "ground_truth", "answers", "answer")
# Keys of a golden-answer dict that hold the answers themselves (Search-R1 nests them twice).
_GOLD_KEYS = ("target", "ground_truth", "golden_answers", "answers", "answer")
# Keyword arguments TRL or our trainer pass that are not per-sample dataset columns.
_NOT_COLUMNS = frozenset(
    {"prompts", "completions", "completion_ids", "trajectories", "environments"}
    | {"trainer_state", "log_extra", "log_metric"}
)


# -- answer normalisation and scores (SQuAD / Search-R1) -----------------------------------------------------
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation, as Search-R1 scores EM: lowercase, drop punctuation and articles, one space."""
    text = text.lower().translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def golden_list(golds: Any) -> list[str]:
    """Golden answers in any shape a dataset gives them → a flat list of strings.

    Accepts a string, a list/tuple, a numpy array (parquet columns load as arrays), a number, or a dict such
    as Search-R1's ``{"target": [...]}`` or its whole ``reward_model`` cell ``{"ground_truth": {...}}``.
    """
    if golds is None:
        return []
    if isinstance(golds, str):
        return [golds]
    if isinstance(golds, bytes):
        return [golds.decode()]
    if isinstance(golds, Mapping):
        for key in _GOLD_KEYS:
            if key in golds:
                return golden_list(golds[key])
        raise ValueError(
            f"golden answers given as a dict need one of the keys {_GOLD_KEYS}; got {sorted(golds)}"
        )
    if hasattr(golds, "tolist"):  # numpy arrays and scalars → Python lists and values
        golds = golds.tolist()
        if isinstance(golds, str):
            return [golds]
    if isinstance(golds, list | tuple | set):
        return [answer for item in golds for answer in golden_list(item)]
    return [str(golds)]


def exact_match_score(prediction: str | None, golds: Any) -> float:
    """1.0 if the normalised prediction equals any normalised golden answer, else 0.0."""
    if prediction is None:
        return 0.0
    predicted = normalize_answer(prediction)
    # An answer that normalises to nothing ("the", ".") must not match a gold that also does.
    return float(bool(predicted) and any(predicted == normalize_answer(g) for g in golden_list(golds)))


def _token_f1(predicted: list[str], gold: list[str]) -> float:
    same = sum((Counter(predicted) & Counter(gold)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(predicted), same / len(gold)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str | None, golds: Any) -> float:
    """SQuAD token F1 between the normalised prediction and the best-matching golden answer."""
    if prediction is None:
        return 0.0
    predicted = normalize_answer(prediction).split()
    return max((_token_f1(predicted, normalize_answer(g).split()) for g in golden_list(golds)), default=0.0)


# -- what each sample holds ----------------------------------------------------------------------------------
_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def completion_text(completion: Any) -> str:
    """A TRL completion (a string, or a conversational list of messages) → the model's text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence):
        return "".join(
            str(m.get("content") or "")
            for m in completion
            if isinstance(m, Mapping) and m.get("role", "assistant") == "assistant"
        )
    return str(completion)


def _answer_from_text(text: str) -> str | None:
    # The first complete answer ends an episode in our parser too; an empty one is no answer.
    match = _ANSWER_TAG.search(text)
    return (match.group(1).strip() or None) if match else None


def _as_messages(prompt: Any) -> list[dict[str, Any]]:
    """A TRL prompt (messages, or plain text) as chat messages."""
    return list(prompt) if isinstance(prompt, list) else [{"role": "user", "content": str(prompt or "")}]


def sample_trajectories(
    trajectories: Sequence[Trajectory] | None,
    prompts: Sequence[Any] | None,
    completions: Sequence[Any] | None,
) -> list[Trajectory]:
    """Our trainer's trajectories, or minimal ones built from plain TRL completions (answer tag only)."""
    if trajectories is not None:
        return list(trajectories)
    if completions is None:
        raise ValueError("a reward needs `trajectories` (from the mcp-rl trainer) or TRL's `completions`")
    prompts = list(prompts) if prompts is not None else [None] * len(completions)
    return [
        Trajectory(
            prompt_index=i,
            prompt_messages=_as_messages(prompt),
            prompt_ids=[],
            answer=_answer_from_text(completion_text(completion)),
            finish_reason="answer",
        )
        for i, (prompt, completion) in enumerate(zip(prompts, completions, strict=True))
    ]


def _answers(
    trajectories: Sequence[Trajectory] | None, completions: Sequence[Any] | None
) -> list[str | None]:
    return [t.answer for t in sample_trajectories(trajectories, None, completions)]


def golds_column(
    golden_answers: Sequence[Any] | None, columns: Mapping[str, Any], n: int, *, required: bool = True
) -> list[Any]:
    """The per-sample golden answers: ``golden_answers`` or the first other gold column present."""
    column = golden_answers
    if column is None:
        column = next((columns[name] for name in GOLD_COLUMNS if columns.get(name) is not None), None)
    if column is None:
        if required:
            raise ValueError(f"this reward needs golden answers in a dataset column, one of {GOLD_COLUMNS}")
        return [None] * n
    if len(column) != n:
        raise ValueError(f"got {len(column)} golden answers for {n} samples")
    return list(column)


def sample_rows(
    n: int, columns: Mapping[str, Any], prompts: Sequence[Any] | None = None
) -> list[dict[str, Any]]:
    """Per-sample dicts of the dataset columns TRL passed (each column is a list, one value a sample)."""
    per_sample = {
        name: value
        for name, value in columns.items()
        if name not in _NOT_COLUMNS
        and isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) == n
    }
    rows = [{name: value[i] for name, value in per_sample.items()} for i in range(n)]
    if prompts is not None:
        for row, prompt in zip(rows, prompts, strict=True):
            row.setdefault("prompt", prompt)
    return rows


def _row_golds(row: Mapping[str, Any]) -> list[str]:
    return golden_list(next((row[name] for name in GOLD_COLUMNS if row.get(name) is not None), None))


def sample_question(row: Mapping[str, Any], trajectory: Trajectory | None = None) -> str:
    """The question: a ``question`` column if the dataset has one, else the prompt's last user message."""
    if row.get("question") is not None:
        return str(row["question"])
    messages: Any = trajectory.prompt_messages if trajectory is not None else row.get("prompt")
    if isinstance(messages, str):
        return messages
    users = [m for m in messages or [] if isinstance(m, Mapping) and m.get("role") == "user"]
    return str(users[-1].get("content") or "") if users else ""


# -- rule rewards --------------------------------------------------------------------------------------------
def _score_answers(
    score: Callable[[str | None, Any], float],
    trajectories: Sequence[Trajectory] | None,
    completions: Sequence[Any] | None,
    golden_answers: Sequence[Any] | None,
    columns: Mapping[str, Any],
) -> list[float | None]:
    """``score(answer, golds)`` per sample: the final answers against the golden-answer column."""
    answers = _answers(trajectories, completions)
    golds = golds_column(golden_answers, columns, len(answers))
    return [score(a, g) for a, g in zip(answers, golds, strict=True)]


def exact_match(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    completions: Sequence[Any] | None = None,
    golden_answers: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Search-R1's reward: 1.0 when the final answer matches a golden answer after normalisation."""
    return _score_answers(exact_match_score, trajectories, completions, golden_answers, kwargs)


def f1(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    completions: Sequence[Any] | None = None,
    golden_answers: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Token F1 of the final answer against the best golden answer: partial credit for near misses."""
    return _score_answers(f1_score, trajectories, completions, golden_answers, kwargs)


def format_score(trajectory: Trajectory, partial_credit: float = 0.5) -> float:
    """1.0 for a clean episode ending in an answer; ``partial_credit`` if some turn had parse errors."""
    if trajectory.answer is None:
        return 0.0
    return partial_credit if any(turn.parse_errors for turn in trajectory.turns) else 1.0


def format_reward(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    completions: Sequence[Any] | None = None,
    partial_credit: float = 0.5,
    **kwargs: Any,
) -> list[float | None]:
    """Format validity: did the episode end with a parseable answer, without malformed turns on the way."""
    # Without trajectories (plain TRL) parse errors are unknown: only the answer tag can be checked.
    return [format_score(t, partial_credit) for t in sample_trajectories(trajectories, None, completions)]


def tool_use(*, trajectories: Sequence[Trajectory] | None = None, **kwargs: Any) -> list[float | None]:
    """Shaping: 1.0 if the episode made at least one successful tool call."""
    if trajectories is None:
        raise ValueError("the tool_use reward needs `trajectories`: use the mcp-rl trainer")
    return [float(any(call.ok for call in t.calls)) for t in trajectories]


_NON_WORD = re.compile(r"[^\w\s]")


def _words(text: str) -> str:
    """Like ``normalize_answer``, but punctuation splits words: markup such as ``river.</information>``."""
    return " ".join(_ARTICLES.sub(" ", _NON_WORD.sub(" ", text.lower())).split())


def _contains_answer(text: str, golds: Any) -> bool:
    padded = f" {_words(text)} "
    return any(f" {gold} " in padded for gold in map(_words, golden_list(golds)) if gold)


def answer_retrieved(
    *,
    trajectories: Sequence[Trajectory] | None = None,
    golden_answers: Sequence[Any] | None = None,
    **kwargs: Any,
) -> list[float | None]:
    """Shaping for search: 1.0 if a golden answer was in an observation the model was shown.

    Dense where EM is sparse: it pays for a query that finds the evidence even before the model learns to copy
    the answer out of it. It reads what the model saw (after truncation), not the tool's full result.
    """
    if trajectories is None:
        raise ValueError("the answer_retrieved reward needs `trajectories`: use the mcp-rl trainer")
    golds = golds_column(golden_answers, kwargs, len(trajectories))
    return [
        float(any(_contains_answer(turn.observation or "", g) for turn in t.turns if turn.calls))
        for t, g in zip(trajectories, golds, strict=True)
    ]


# -- sync/async plumbing -------------------------------------------------------------------------------------
def run_sync(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run an async function from synchronous code.

    Reward functions are called synchronously; if this thread already runs an event loop (a notebook, an
    async eval), ``anyio.run`` would refuse, so the work runs on a fresh loop in a helper thread instead.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return anyio.run(function, *args)
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as executor:
        return executor.submit(anyio.run, function, *args).result()


def call_reward(function: RewardFunction, **kwargs: Any) -> list[float | None]:
    """Call any reward function (sync, ``async def``, or an object with an async ``__call__``) and wait.

    TRL awaits async rewards itself; our eval calls rewards directly and goes through here.
    """
    outcome = function(**kwargs)
    if inspect.isawaitable(outcome):
        awaitable = outcome

        async def wait() -> Any:
            return await awaitable

        outcome = run_sync(wait)
    return [None if value is None else float(value) for value in outcome]


# -- the LLM judge -------------------------------------------------------------------------------------------
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
    """Anything that turns judge prompts into replies; None for a request that failed."""

    def complete_many(self, prompts: Sequence[str]) -> list[str | None]: ...


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

    def complete_many(self, prompts: Sequence[str]) -> list[str | None]:
        return run_sync(self.acomplete_many, list(prompts))

    async def acomplete_many(self, prompts: Sequence[str]) -> list[str | None]:
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

    def __repr__(self) -> str:
        name = getattr(getattr(self.model, "config", None), "_name_or_path", "") or type(self.model).__name__
        return f"TransformersJudge(model={name!r}, max_new_tokens={self.max_new_tokens})"

    def _render(self, prompt: str) -> str:
        if not getattr(self.tokenizer, "chat_template", None):
            return prompt
        messages = [{"role": "system", "content": self.system_prompt}] if self.system_prompt else []
        messages.append({"role": "user", "content": prompt})
        return self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)

    def complete_many(self, prompts: Sequence[str]) -> list[str | None]:
        replies: list[str | None] = []
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

    def __call__(
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
        replies = self.backend.complete_many(judge_prompts) if judge_prompts else []
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


# -- rewards verified by an MCP tool -------------------------------------------------------------------------
ArgumentsSpec = Callable[[Trajectory, dict[str, Any]], Mapping[str, Any] | None] | Mapping[str, Any]
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TRUE_WORDS = frozenset({"true", "1", "1.0", "yes", "correct", "pass", "passed", "ok", "valid"})
_VERDICT_KEYS = ("correct", "result", "verdict", "passed", "valid", "ok")


def fill_template(template: Any, values: Mapping[str, str]) -> Any:
    """Replace ``{name}`` in every string of a (nested) arguments template; unknown names stay as written."""
    if isinstance(template, str):
        return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)
    if isinstance(template, Mapping):
        return {key: fill_template(value, values) for key, value in template.items()}
    if isinstance(template, list | tuple):
        return [fill_template(value, values) for value in template]
    return template


def _mentions(template: Any, placeholder: str) -> bool:
    if isinstance(template, str):
        return placeholder in template
    if isinstance(template, Mapping):
        return any(_mentions(value, placeholder) for value in template.values())
    return isinstance(template, list | tuple) and any(_mentions(value, placeholder) for value in template)


def tool_says_true(result: ToolResult, trajectory: Trajectory | None = None) -> float:
    """The default verdict: 1.0 if the tool answered true / 1 / yes / "correct", else 0.0."""
    value = result.structured
    if isinstance(value, Mapping):
        # MCP servers wrap a bare return value as {"result": value}; verifiers may name their verdict.
        key = next((k for k in _VERDICT_KEYS if k in value), None)
        value = value[key] if key else (next(iter(value.values())) if len(value) == 1 else None)
    if value is None or isinstance(value, Mapping | list):
        value = result.text
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int | float):
        return float(value == 1)
    return float(str(value).strip().strip(".!\"'").lower() in _TRUE_WORDS)


def _same_number(left: str, right: str) -> bool:
    try:
        return Fraction(left.strip()) == Fraction(right.strip())
    except (ValueError, ZeroDivisionError):
        return False


def _same_value(tool_text: str, expected: str | None) -> bool:
    if expected is None:
        return False
    # A calculator may give both forms ("1/3 ≈ 0.3333333333"): either one matching is a match.
    candidates = [tool_text, *tool_text.split("≈")]
    return any(exact_match_score(c, [expected]) or _same_number(c, expected) for c in candidates)


def result_matches_answer(result: ToolResult, trajectory: Trajectory) -> float:
    """1.0 if the tool's result equals the model's answer (as text after normalisation, or as a number)."""
    return float(_same_value(result.text, trajectory.answer))


def result_matches_golden(result: ToolResult, trajectory: Trajectory, row: Mapping[str, Any]) -> float:
    """1.0 if the tool's result equals one of the sample's golden answers."""
    return float(any(_same_value(result.text, gold) for gold in _row_golds(row)))


def _takes_row(function: Callable[..., Any]) -> bool:
    """Whether a score function accepts a third positional argument, the sample's dataset row."""
    try:
        parameters = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    return len(positional) >= 3 or any(p.kind is p.VAR_POSITIONAL for p in parameters)


class ToolVerificationReward:
    """Score each sample by calling an MCP tool through the trainer's own ``BlockingToolPool``.

    ``arguments`` is either a function ``(trajectory, row) -> dict`` (return None to skip the call and score
    0.0) or a dict template whose strings may say ``{answer}`` (the model's answer), ``{question}``,
    ``{golden}`` (the first golden answer) or ``{<column>}``. A template that needs ``{answer}`` on a sample
    without one scores 0.0 without a call. All calls of a batch go out as one concurrent ``call_many``.

    ``score(result, trajectory[, row])`` maps a successful result to a reward (default: ``tool_says_true``).
    A failed call gives None (TRL skips it) and is counted; an unknown tool is a configuration error.
    """

    def __init__(
        self,
        pool: Any,
        tool: str,
        arguments: ArgumentsSpec,
        score: Callable[..., float | None] | None = None,
        *,
        name: str = "tool_verify",
        timeout_s: float | None = None,
    ) -> None:
        self.pool = pool
        self.tool = tool
        self.arguments = arguments
        self.score = score or tool_says_true
        self._score_takes_row = _takes_row(self.score)
        self.timeout_s = timeout_s
        self.__name__ = name
        self.counts: Counter[str] = Counter()

    def __repr__(self) -> str:
        return f"ToolVerificationReward(name={self.__name__!r}, tool={self.tool!r})"

    def _arguments_for(self, trajectory: Trajectory, row: dict[str, Any]) -> dict[str, Any] | None:
        if callable(self.arguments):
            arguments = self.arguments(trajectory, row)
            return None if arguments is None else dict(arguments)
        if trajectory.answer is None and _mentions(self.arguments, "{answer}"):
            return None
        golds = _row_golds(row)
        values = {name: str(value) for name, value in row.items() if isinstance(value, str | int | float)}
        values.update(
            answer=trajectory.answer or "",
            question=sample_question(row, trajectory),
            golden=golds[0] if golds else "",
        )
        return fill_template(self.arguments, values)

    def _score_one(self, result: ToolResult, trajectory: Trajectory, row: dict[str, Any]) -> float | None:
        if result.failure is FailureKind.UNKNOWN_TOOL:
            raise ValueError(f"reward {self.__name__!r}: {result.text}")
        if not result.ok:
            self.counts["failed"] += 1
            return None
        value = (
            self.score(result, trajectory, row) if self._score_takes_row else self.score(result, trajectory)
        )
        return None if value is None else float(value)

    def __call__(
        self,
        *,
        prompts: Sequence[Any] | None = None,
        completions: Sequence[Any] | None = None,
        trajectories: Sequence[Trajectory] | None = None,
        log_metric: Callable[[str, float], None] | None = None,
        **kwargs: Any,
    ) -> list[float | None]:
        samples = sample_trajectories(trajectories, prompts, completions)
        rows = sample_rows(len(samples), kwargs, prompts)
        plans = [self._arguments_for(sample, row) for sample, row in zip(samples, rows, strict=True)]
        called = [i for i, arguments in enumerate(plans) if arguments is not None]
        results = self.pool.call_many([(self.tool, plans[i]) for i in called], timeout_s=self.timeout_s)
        scores: list[float | None] = [0.0] * len(samples)
        for i, result in zip(called, results, strict=True):
            scores[i] = self._score_one(result, samples[i], rows[i])
        self.counts["calls"] += len(called)
        if log_metric is not None and called:
            log_metric(f"{self.__name__}/failed_frac", sum(not r.ok for r in results) / len(called))
        return scores


# -- building rewards from a recipe --------------------------------------------------------------------------
class _BoundReward:
    """A reward with fixed keyword options and its own display name (a class, not a closure: it pickles)."""

    def __init__(self, function: RewardFunction, name: str, options: Mapping[str, Any]) -> None:
        self.function = function
        self.options = dict(options)
        self.__name__ = name

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.__name__!r}, options={sorted(self.options)})"

    def __call__(self, **kwargs: Any) -> Any:
        return self.function(**{**kwargs, **self.options})


class _AsyncBoundReward(_BoundReward):
    """The same for an async reward, kept async so TRL gathers it with the others on its event loop."""

    async def __call__(self, **kwargs: Any) -> Any:
        return await self.function(**{**kwargs, **self.options})


def bind_reward(
    function: RewardFunction, name: str, options: Mapping[str, Any] | None = None
) -> RewardFunction:
    """``function`` under ``name`` with keyword ``options`` fixed; async stays async (TRL's test for it)."""
    is_async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(type(function).__call__)
    return (_AsyncBoundReward if is_async else _BoundReward)(function, name, options or {})


def import_object(path: str) -> Any:
    """``package.module:attribute`` → the attribute (dots after the colon walk into it)."""
    module_name, _, attribute = path.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected 'package.module:function', got {path!r}")
    try:
        target: Any = importlib.import_module(module_name)
        for part in attribute.split("."):
            target = getattr(target, part)
    except (ImportError, AttributeError) as error:
        raise ValueError(f"cannot import {path!r}: {error}") from error
    return target


class _Options:
    """A spec's options, taken one by one; whatever is left at the end is a mistake worth reporting."""

    def __init__(self, reward: str, options: Mapping[str, Any]) -> None:
        self.reward, self.left, self.known = reward, dict(options), ["label"]

    def take(self, key: str, default: Any = None, *, required: bool = False) -> Any:
        self.known.append(key)
        if required and self.left.get(key) is None:
            raise ValueError(f"reward {self.reward!r} needs the option {key!r}")
        return self.left.pop(key, default)

    def done(self) -> None:
        self.left.pop("label", None)
        if self.left:
            raise ValueError(
                f"unknown option(s) {sorted(self.left)} for reward {self.reward!r}; "
                f"known: {', '.join(sorted(set(self.known)))}"
            )


def _build_format(options: _Options, pool: Any) -> RewardFunction:
    return bind_reward(
        format_reward, "format", {"partial_credit": float(options.take("partial_credit", 0.5))}
    )


def _judge_backend(options: _Options) -> JudgeBackend:
    backend = options.take("backend", "openai")
    if backend == "openai":
        return OpenAIJudge(
            base_url=options.take("base_url", required=True),
            model=options.take("model", required=True),
            api_key_env=options.take("api_key_env"),
            max_concurrency=int(options.take("max_concurrency", 8)),
            timeout_s=float(options.take("timeout_s", 30.0)),
            retries=int(options.take("retries", 2)),
            max_tokens=int(options.take("max_tokens", 64)),
            temperature=float(options.take("temperature", 0.0)),
            system_prompt=options.take("system_prompt"),
        )
    if backend == "transformers":
        model, tokenizer = options.take("model", required=True), options.take("tokenizer")
        if isinstance(model, str):
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(tokenizer if isinstance(tokenizer, str) else model)
            model = AutoModelForCausalLM.from_pretrained(model)
        elif tokenizer is None:
            raise ValueError("reward 'judge': a model object needs the option 'tokenizer' too")
        return TransformersJudge(
            model,
            tokenizer,
            max_new_tokens=int(options.take("max_new_tokens", 16)),
            batch_size=int(options.take("batch_size", 8)),
            system_prompt=options.take("system_prompt"),
        )
    raise ValueError(f"reward 'judge': unknown backend {backend!r}; known: openai, transformers")


def _build_judge(options: _Options, pool: Any) -> RewardFunction:
    template = options.take("template", DEFAULT_JUDGE_TEMPLATE)
    max_score = float(options.take("max_score", 10.0))
    return JudgeReward(_judge_backend(options), template, max_score=max_score)


_EXPECTATIONS: dict[str, Callable[..., float | None]] = {
    "true": tool_says_true,
    "answer": result_matches_answer,
    "golden": result_matches_golden,
}


def _build_tool_verify(options: _Options, pool: Any) -> RewardFunction:
    if pool is None:
        raise ValueError(
            "reward 'tool_verify' calls an MCP tool: pass the tool pool to build_reward_functions"
        )
    tool = options.take("tool", required=True)
    arguments = options.take("arguments", required=True)
    if isinstance(arguments, str):  # "package.module:function" building the arguments
        arguments = import_object(arguments)
    expect, score = options.take("expect", "true"), options.take("score")
    if score is not None:
        score = import_object(score) if isinstance(score, str) else score
    elif expect in _EXPECTATIONS:
        score = _EXPECTATIONS[expect]
    else:
        raise ValueError(
            f"reward 'tool_verify': expect must be one of {sorted(_EXPECTATIONS)}, got {expect!r}"
        )
    timeout_s = options.take("timeout_s")
    return ToolVerificationReward(pool, tool, arguments, score, timeout_s=timeout_s)


def _no_options(function: RewardFunction) -> Callable[[_Options, Any], RewardFunction]:
    return lambda options, pool: function


BUILTIN_REWARDS: dict[str, Callable[[_Options, Any], RewardFunction]] = {
    "exact_match": _no_options(exact_match),
    "f1": _no_options(f1),
    "format": _build_format,
    "tool_use": _no_options(tool_use),
    "answer_retrieved": _no_options(answer_retrieved),
    "judge": _build_judge,
    "tool_verify": _build_tool_verify,
}


def _read_spec(spec: Any) -> tuple[str, float, dict[str, Any]]:
    """A spec → (name, weight, options): a name, a mapping (options nested or inline), or an object."""
    if isinstance(spec, str):
        return spec, 1.0, {}
    if isinstance(spec, Mapping):
        if "name" not in spec:
            raise ValueError(f"a reward spec needs a 'name', got {dict(spec)}")
        inline = {key: value for key, value in spec.items() if key not in ("name", "weight", "options")}
        options = {**dict(spec.get("options") or {}), **inline}
        weight = spec.get("weight")
        return str(spec["name"]), 1.0 if weight is None else float(weight), options
    weight = getattr(spec, "weight", None)
    return (
        str(spec.name),
        1.0 if weight is None else float(weight),
        dict(getattr(spec, "options", None) or {}),
    )


def _build_one(name: str, options: Mapping[str, Any], pool: Any) -> RewardFunction:
    if name in BUILTIN_REWARDS:
        taken = _Options(name, options)
        function = BUILTIN_REWARDS[name](taken, pool)
        taken.done()
        return function
    if ":" in name:
        function = import_object(name)
        if not callable(function):
            raise ValueError(f"reward {name!r} is not callable")
        extra = {key: value for key, value in options.items() if key != "label"}
        return (
            bind_reward(function, getattr(function, "__name__", name.rpartition(":")[2]), extra)
            if extra
            else function
        )
    raise ValueError(
        f"unknown reward {name!r}; known: {', '.join(sorted(BUILTIN_REWARDS))}, "
        "or 'package.module:function' for your own"
    )


def _renamed(function: RewardFunction, name: str) -> RewardFunction:
    if getattr(function, "__name__", None) == name:
        return function
    if isinstance(function, JudgeReward | ToolVerificationReward | _BoundReward):
        function.__name__ = name  # our own objects: rename in place, keeping `counts` reachable
        return function
    return bind_reward(function, name)  # never rename a user's function itself


def build_reward_functions(
    specs: Sequence[Mapping[str, Any] | Any], pool: Any = None
) -> tuple[list[RewardFunction], list[float]]:
    """Recipe specs → (reward functions, weights) for ``GRPOTrainer(reward_funcs=...)`` and
    ``GRPOConfig(reward_weights=...)``.

    A spec is a name, a mapping ``{"name", "weight", "options"}`` (options may also sit inline), or an
    object with ``.name``/``.weight``/``.options``. The option ``label`` renames a reward in the logs;
    display names are made unique (``judge``, ``judge_2``) so TRL's per-reward metrics never collide.
    """
    functions: list[RewardFunction] = []
    weights: list[float] = []
    used: Counter[str] = Counter()
    for spec in specs:
        name, weight, options = _read_spec(spec)
        function = _build_one(name, options, pool)
        label = str(options.get("label") or getattr(function, "__name__", name))
        used[label] += 1
        if used[label] > 1:
            label = f"{label}_{used[label]}"
        functions.append(_renamed(function, label))
        weights.append(weight)
    return functions, weights


def weighted_total(
    scores: Mapping[str, Sequence[float | None]], weights: Mapping[str, float] | Sequence[float]
) -> list[float]:
    """Per-sample weighted sum of named rewards, None (and NaN) counted as 0 — TRL's nansum, for eval."""
    if isinstance(weights, Mapping):
        factors = [float(weights.get(name, 1.0)) for name in scores]
    else:
        factors = [float(w) for w in weights]
        if len(factors) != len(scores):
            raise ValueError(f"{len(factors)} weights for {len(scores)} rewards")
    lengths = {len(values) for values in scores.values()}
    if len(lengths) > 1:
        raise ValueError(f"rewards scored different numbers of samples: {sorted(lengths)}")
    totals = [0.0] * (lengths.pop() if lengths else 0)
    for factor, values in zip(factors, scores.values(), strict=True):
        for i, value in enumerate(values):
            if value is not None and not math.isnan(value):
                totals[i] += factor * value
    return totals


__all__ = [
    "DEFAULT_JUDGE_TEMPLATE",
    "JudgeBackend",
    "JudgeReward",
    "OpenAIJudge",
    "ToolVerificationReward",
    "TransformersJudge",
    "bind_reward",
    "build_reward_functions",
    "call_reward",
    "exact_match",
    "exact_match_score",
    "f1",
    "f1_score",
    "format_reward",
    "golden_list",
    "normalize_answer",
    "parse_judge_score",
    "render_judge_prompt",
    "tool_says_true",
    "tool_use",
    "weighted_total",
]
