"""Rewards against real parts: hand-built trajectories, a real OpenAI-style judge endpoint on 127.0.0.1 whose
replies come from a tiny local transformers model, a local TransformersJudge, and real MCP servers through a
real ``BlockingToolPool``."""

from __future__ import annotations

import functools
import inspect
import logging
import pickle
import re
import textwrap
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anyio
import numpy as np
import pytest
import torch
import uvicorn
from conftest import ECHO_SERVER, ROOT, free_port, wait_for_port
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from tiny_models import tiny_llama, tiny_tokenizer
from transformers import LlamaForCausalLM, PreTrainedTokenizerFast

from mcp_rl.env.trajectory import CallRecord, Trajectory, Turn
from mcp_rl.rewards import (
    DEFAULT_JUDGE_TEMPLATE,
    JudgeReward,
    OpenAIJudge,
    ToolVerificationReward,
    TransformersJudge,
    answer_retrieved,
    build_reward_functions,
    exact_match,
    exact_match_score,
    f1,
    f1_score,
    format_reward,
    golden_list,
    is_async_reward,
    normalize_answer,
    parse_judge_score,
    render_judge_prompt,
    result_matches_answer,
    tool_use,
)
from mcp_rl.tools import BlockingToolPool, ToolResult
from mcp_rl.tools.bridge import run_sync
from mcp_rl.tools.server_config import parse_mcp_servers

KEY_ENV = "MCP_RL_TEST_JUDGE_KEY"
# The endpoint reads these markers; the template option is part of what the tests exercise.
JUDGE_TEMPLATE = (
    "Question: {question}\n<ref>{golden}</ref>\n<ans>{answer}</ans>\nReply <score>N</score>, 0-10."
)


def trajectory(answer: str | None, *turns: Turn, question: str = "q?") -> Trajectory:
    """A finished episode built by hand: data, exactly as the engine would record it."""
    return Trajectory(
        prompt_index=0,
        prompt_messages=[{"role": "user", "content": question}],
        prompt_ids=[1, 2],
        turns=list(turns) or [Turn(text=f"<answer>{answer}</answer>")],
        answer=answer,
        finish_reason="answer" if answer is not None else "length",
    )


def call(ok: bool = True) -> CallRecord:
    return CallRecord(
        turn=0, name="search", arguments={"query": "x"}, observation="...", failure=None if ok else "timeout"
    )


# -- exact match and F1 --------------------------------------------------------------------------------------
def test_normalisation_and_exact_match_on_hand_cases():
    assert normalize_answer("  The  Eiffel-Tower, in PARIS! ") == "eiffeltower in paris"
    assert normalize_answer("an apple a day") == "apple day"
    assert exact_match_score("the Beijing.", ["Beijing"]) == 1.0
    assert exact_match_score("Beijing city", ["Beijing"]) == 0.0
    assert exact_match_score("Shanghai", ["Beijing", "shanghai"]) == 1.0  # any gold
    assert exact_match_score(None, ["Beijing"]) == 0.0
    assert exact_match_score("The", ["a"]) == 0.0  # nothing left after normalising is no answer
    assert exact_match_score("1,000", "1000") == 1.0  # a bare string gold
    assert exact_match_score("Paris", np.array(["London", "Paris"], dtype=object)) == 1.0
    assert exact_match_score("Paris", {"target": np.array(["paris"])}) == 1.0
    search_r1_cell = {"style": "rule", "ground_truth": {"target": np.array(["Paris", "City of Light"])}}
    assert golden_list(search_r1_cell) == ["Paris", "City of Light"]
    assert golden_list(np.array([["a", "b"], ["c", "d"]])) == ["a", "b", "c", "d"]
    assert golden_list(42) == ["42"] and golden_list(None) == []
    with pytest.raises(ValueError, match="target"):
        golden_list({"unknown": ["x"]})


def test_f1_on_hand_cases():
    assert f1_score("Barack Obama", ["Barack Hussein Obama"]) == pytest.approx(0.8)  # p=1, r=2/3
    assert f1_score("the president Obama", ["Obama"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert f1_score("Obama", ["George Bush", "obama."]) == 1.0  # best gold wins
    assert f1_score("Bush", np.array(["Obama"])) == 0.0
    assert f1_score(None, ["Obama"]) == 0.0
    assert f1_score("x", []) == 0.0


def test_rule_rewards_score_the_trajectory_answer_not_the_text():
    # The completion still shows the prompt's example answer: only the parsed answer may count.
    samples = [trajectory("Paris"), trajectory("paris, France"), trajectory(None)]
    completions = ["<answer> Beijing </answer> ... <answer>Paris</answer>"] * 3
    golds = [["Paris"], np.array(["Paris"]), {"target": ["Paris"]}]
    kwargs = {
        "prompts": ["q"] * 3,
        "completions": completions,
        "trajectories": samples,
        "trainer_state": None,
    }
    assert exact_match(golden_answers=golds, **kwargs) == [1.0, 0.0, 0.0]
    assert f1(golden_answers=golds, **kwargs) == [1.0, pytest.approx(2 / 3), 0.0]
    # Plain TRL (no trajectories): the first answer tag of the completion only; Search-R1's column works too.
    plain = [
        [{"role": "assistant", "content": "I think <answer> the Paris </answer>"}],
        "no tag",
        "<answer></answer>",
    ]
    reward_model = [{"ground_truth": {"target": np.array(["Paris"])}}] * 3
    assert exact_match(completions=plain, reward_model=reward_model) == [1.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="golden answers"):
        exact_match(trajectories=samples)
    with pytest.raises(ValueError, match="2 golden answers for 3"):
        exact_match(trajectories=samples, golden_answers=[["a"], ["b"]])


def test_format_and_tool_use_rewards():
    clean = trajectory(
        "Paris", Turn(text="<search>x</search>", calls=[call()]), Turn(text="<answer>Paris</answer>")
    )
    bumpy = trajectory(
        "Paris", Turn(text="<search>x", parse_errors=["unclosed <search>"]), Turn(text="<answer>P")
    )
    no_answer = trajectory(None, Turn(text="hmm", calls=[call(ok=False)]))
    broken = trajectory(None, Turn(text="<answer>", parse_errors=["The answer was empty."]))
    samples = [clean, bumpy, no_answer, broken]
    assert format_reward(trajectories=samples, completions=["x"] * 4) == [1.0, 0.5, 0.0, 0.0]
    assert format_reward(trajectories=samples, partial_credit=0.2) == [1.0, 0.2, 0.0, 0.0]
    assert format_reward(completions=["<answer>a</answer>", "a"]) == [1.0, 0.0]
    assert tool_use(trajectories=samples, log_metric=print) == [1.0, 0.0, 0.0, 0.0]
    with pytest.raises(ValueError, match="trajectories"):
        tool_use(completions=["x"])


def test_answer_retrieved_reads_what_the_model_was_shown():
    def searched(shown: str) -> Trajectory:
        return trajectory(None, Turn(text="<search>q</search>", calls=[call()], observation=shown))

    samples = [
        searched("<information>Doc 1 Tollenmark lies on the river Vessaline.</information>"),
        searched("<information>Doc 1 the Vessalinebridge \u2026 [truncated 80 characters]</information>"),
        searched("<information>nothing relevant</information>"),
        trajectory("Vessaline"),  # answered without searching: the answer in its own text does not count
    ]
    golds = [["River Vessaline", "Vessaline"]] * 4
    assert answer_retrieved(trajectories=samples, golden_answers=golds) == [1.0, 0.0, 0.0, 0.0]
    functions, weights = build_reward_functions([{"name": "answer_retrieved", "weight": 0.2}])
    assert functions[0].__name__ == "answer_retrieved" and weights == [0.2]
    with pytest.raises(ValueError, match="trajectories"):
        answer_retrieved(completions=["x"], golden_answers=golds[:1])


# -- judge: parsing ------------------------------------------------------------------------------------------
def test_judge_score_parsing_and_template():
    assert parse_judge_score("<score>7</score>") == pytest.approx(0.7)
    assert parse_judge_score("ok <SCORE> 10 </SCORE> and 3 more") == 1.0
    assert parse_judge_score("8") == pytest.approx(0.8)
    assert parse_judge_score("I would give it 6/10.") == pytest.approx(0.6)
    assert parse_judge_score("<score>4</score>", max_score=5) == pytest.approx(0.8)
    for unusable in ("excellent", "", None, "<score>11</score>", "-3"):
        assert parse_judge_score(unusable) is None
    for field in ("{question}", "{answer}", "{golden}", "<score>"):
        assert field in DEFAULT_JUDGE_TEMPLATE
    rendered = render_judge_prompt(
        '{"json": 1} {question} {answer}', question="{answer}", answer="A", golden=""
    )
    assert rendered == '{"json": 1} {answer} A'  # values are not substituted again; other braces stay


# -- the tiny local model and a real OpenAI-style endpoint serving it ----------------------------------------
@pytest.fixture(scope="module")
def tiny_lm() -> tuple[LlamaForCausalLM, PreTrainedTokenizerFast]:
    """A tiny Llama (~30k parameters) and a byte-level BPE tokenizer trained here on a few sentences."""
    sentences = [
        "The judge reads the question and the reference answer.",
        "Paris is the capital of France and Berlin is the capital of Germany.",
        "Grade the answer against the reference and reply with a score.",
        "user assistant system question answer reference score",
    ]
    tokenizer = tiny_tokenizer(sentences, vocab_size=320)
    return tiny_llama(tokenizer, seed=0, hidden_size=32).eval(), tokenizer


class JudgeEndpoint:
    """``POST /v1/chat/completions`` served from the tiny model, with a scoring rule on top so the tests can
    check the plumbing: ``<score>10</score>`` when the answer equals the reference, else ``<score>0</score>``,
    followed by the model's own greedy tokens. Special answers steer the other paths: "eight" replies with a
    bare 8, "gibberish" with the model's words only, "slow" never answers in time. It records the peak of
    concurrent requests, every Authorization header, and can fail the next requests with HTTP 500."""

    def __init__(self, model: LlamaForCausalLM, tokenizer: PreTrainedTokenizerFast) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.model_lock = threading.Lock()
        self.url = ""
        self.expected_key: str | None = None
        self.active = 0
        self.reset()

    def reset(self) -> None:
        # `active` is never reset: a handler still sleeping from an earlier test decrements it when it ends.
        self.peak = self.requests = self.fail_next = 0
        self.delay_s = 0.0
        self.authorizations: list[str | None] = []

    def generate(self, prompt: str) -> str:
        messages = [{"role": "user", "content": prompt}]
        text = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
        batch = self.tokenizer(text, return_tensors="pt", add_special_tokens=False)
        with self.model_lock, torch.inference_mode():
            output = self.model.generate(
                **batch, max_new_tokens=4, do_sample=False, pad_token_id=self.tokenizer.pad_token_id
            )
        return self.tokenizer.decode(output[0, batch["input_ids"].shape[1] :], skip_special_tokens=True)

    def verdict(self, prompt: str, generated: str) -> str:
        answer = re.search(r"<ans>(.*?)</ans>", prompt, re.DOTALL).group(1)
        golds = re.search(r"<ref>(.*?)</ref>", prompt, re.DOTALL).group(1).split("; ")
        words = re.sub(r"\d", "", generated)  # the model's tokens, kept free of numbers a parser could take
        if answer == "eight":
            return f"8 {words}"
        if answer == "gibberish":
            return words
        return f"<score>{10 if exact_match_score(answer, golds) else 0}</score>{generated}"

    async def chat(self, request: Request) -> JSONResponse:
        self.requests += 1
        authorization = request.headers.get("authorization")
        self.authorizations.append(authorization)
        self.active += 1  # handlers all run on the server's one event loop: no lock needed
        self.peak = max(self.peak, self.active)
        try:
            if self.expected_key is not None and authorization != f"Bearer {self.expected_key}":
                # Like a careless proxy, echo what was sent: the client must keep it out of its logs.
                return JSONResponse({"error": f"bad credentials: {authorization}"}, status_code=401)
            if self.fail_next > 0:
                self.fail_next -= 1
                return JSONResponse({"error": "injected failure"}, status_code=500)
            body = await request.json()
            prompt = body["messages"][-1]["content"]
            await anyio.sleep(3.0 if "<ans>slow</ans>" in prompt else self.delay_s)
            generated = await anyio.to_thread.run_sync(self.generate, prompt)
            message = {"role": "assistant", "content": self.verdict(prompt, generated)}
            return JSONResponse(
                {
                    "id": f"chatcmpl-{uuid.uuid4().hex}",
                    "object": "chat.completion",
                    "model": body["model"],
                    "choices": [{"index": 0, "message": message, "finish_reason": "length"}],
                }
            )
        finally:
            self.active -= 1


@pytest.fixture(scope="module")
def judge_server(tiny_lm) -> Iterator[JudgeEndpoint]:
    endpoint = JudgeEndpoint(*tiny_lm)
    port = free_port()
    app = Starlette(routes=[Route("/v1/chat/completions", endpoint.chat, methods=["POST"])])
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", timeout_graceful_shutdown=1)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    wait_for_port(port)
    endpoint.url = f"http://127.0.0.1:{port}/v1"
    yield endpoint
    server.should_exit = True
    thread.join(timeout=10)


@pytest.fixture
def endpoint(judge_server: JudgeEndpoint) -> JudgeEndpoint:
    judge_server.reset()
    judge_server.expected_key = None
    return judge_server


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    key = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv(KEY_ENV, key)
    return key


async def test_judge_over_http_end_to_end(endpoint, api_key, caplog):
    caplog.set_level(logging.DEBUG)
    endpoint.delay_s = 0.1
    endpoint.expected_key = api_key
    judge = OpenAIJudge(endpoint.url, "tiny-judge", api_key_env=KEY_ENV, max_concurrency=3, timeout_s=10)
    reward = JudgeReward(judge, JUDGE_TEMPLATE)
    answers = ["Paris", "the paris", "Lyon", None, "eight", "gibberish", *["Paris", "Rome"] * 4]
    golds = [["Paris", "City of Light"]] * len(answers)
    metrics: dict[str, float] = {}
    scores = await reward(
        prompts=["q"] * len(answers),
        completions=["c"] * len(answers),
        trajectories=[trajectory(a, question="Capital of France?") for a in answers],
        golden_answers=golds,
        trainer_state=None,
        log_metric=metrics.__setitem__,
        log_extra=lambda column, values: None,
    )
    assert scores == [1.0, 1.0, 0.0, 0.0, pytest.approx(0.8), None, *[1.0, 0.0] * 4]
    asked = len(answers) - 1  # no answer: scored 0 without a request
    assert endpoint.requests == asked
    assert endpoint.peak == 3  # concurrent, and never above the cap
    assert endpoint.authorizations == [f"Bearer {api_key}"] * asked
    assert reward.counts == {"requests": asked, "unparseable": 1, "failed": 0}
    assert metrics == {"judge/failed_frac": 0.0, "judge/unparseable_frac": pytest.approx(1 / asked)}
    for shown in (repr(judge), str(judge), repr(reward), str(reward), caplog.text):
        assert api_key not in shown
    assert KEY_ENV in repr(judge)


def test_judge_retries_a_server_error(endpoint, caplog):
    caplog.set_level(logging.DEBUG)
    endpoint.fail_next = 1
    judge = OpenAIJudge(endpoint.url, "tiny-judge", retries=2)
    judge.backoff_s = 0.01
    # A synchronous caller (our eval) awaits the async judge through the one bridge.
    reward = JudgeReward(judge, JUDGE_TEMPLATE)
    scores = run_sync(functools.partial(reward, trajectories=[trajectory("Paris")], golden_answers=["Paris"]))
    assert scores == [1.0]
    assert endpoint.requests == 2
    assert "HTTP 500" in caplog.text  # the retry is logged (at debug level)


async def test_judge_timeout_and_rejection_give_none_without_leaking_the_key(endpoint, api_key, caplog):
    caplog.set_level(logging.DEBUG)
    judge = OpenAIJudge(endpoint.url, "tiny-judge", api_key_env=KEY_ENV, timeout_s=0.3, retries=1)
    judge.backoff_s = 0.01
    reward = JudgeReward(judge, JUDGE_TEMPLATE)
    started = time.monotonic()
    scores = await reward(
        trajectories=[trajectory("slow"), trajectory("Paris")], golden_answers=[["Paris"]] * 2
    )
    assert scores == [None, 1.0]
    assert time.monotonic() - started < 2.5
    assert endpoint.requests == 3  # the slow one was tried twice
    assert reward.counts["failed"] == 1 and "1 of 2 requests failed (timeout x1)" in caplog.text
    # The endpoint rejects the key and echoes it back in its error body: our log line must redact it.
    endpoint.expected_key = "something-else"
    assert await reward(trajectories=[trajectory("Paris")], golden_answers=[["Paris"]]) == [None]
    assert endpoint.requests == 4  # a 401 is not retried
    assert "HTTP 401" in caplog.text and "bad credentials: Bearer ***" in caplog.text
    assert api_key not in caplog.text


def test_openai_judge_requires_its_key_variable(monkeypatch):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(ValueError, match=KEY_ENV):
        OpenAIJudge("http://127.0.0.1:9/v1", "m", api_key_env=KEY_ENV)


async def test_transformers_judge_with_the_tiny_model(tiny_lm):
    model, tokenizer = tiny_lm
    judge = TransformersJudge(model, tokenizer, max_new_tokens=4)
    replies = await judge.complete_many(
        ["Is Paris right?", "A much longer prompt about the capital of Germany."]
    )
    assert len(replies) == 2 and all(isinstance(r, str) for r in replies)
    scores = await JudgeReward(judge)(
        trajectories=[trajectory("Paris"), trajectory("Lyon")], golden_answers=[["Paris"]] * 2
    )
    assert len(scores) == 2 and all(s is None or 0.0 <= s <= 1.0 for s in scores)


# -- tool-verified rewards through a real pool ---------------------------------------------------------------
@pytest.fixture(scope="module")
def tool_pool() -> Iterator[BlockingToolPool]:
    servers = parse_mcp_servers(
        {
            "mcpServers": {
                "echo": {"command": "python", "args": [ECHO_SERVER], "cwd": str(ROOT)},
                "calculator": {
                    "command": "python",
                    "args": ["-m", "tool_servers.calculator"],
                    "cwd": str(ROOT),
                },
            }
        }
    )
    with BlockingToolPool(servers) as pool:
        yield pool


def echo_matches_golden(result: ToolResult, trajectory: Trajectory, row: dict[str, Any]) -> float:
    return exact_match_score(result.text, row["golden_answers"])


def test_tool_verification_through_the_pool(tool_pool):
    tool_pool.metrics(reset=True)
    golds = [["Paris"], ["Paris"], ["Paris"]]
    samples = [trajectory("the Paris"), trajectory("Lyon"), trajectory(None)]
    echo = ToolVerificationReward(tool_pool, "echo", {"text": "{answer}"}, echo_matches_golden)
    assert echo(trajectories=samples, golden_answers=golds, prompts=["q"] * 3) == [1.0, 0.0, 0.0]
    assert tool_pool.metrics()["tools/echo/calls"] == 2  # no answer: no call

    # The default verdict reads true / yes / "correct" (structured {"result": ...} or text).
    verdicts = ToolVerificationReward(tool_pool, "echo", {"text": "{answer}"})
    said = [trajectory("yes"), trajectory("Correct."), trajectory("no"), trajectory("1")]
    assert verdicts(trajectories=said) == [1.0, 1.0, 0.0, 1.0]

    # A tool that answers with an error is a failed check: it scores 0 and is counted, not skipped.
    failing = ToolVerificationReward(tool_pool, "fail", {"message": "checked {answer} for {question}"})
    metrics: dict[str, float] = {}
    assert failing(trajectories=samples[:2], log_metric=metrics.__setitem__) == [0.0, 0.0]
    assert failing.counts == {"tool_error": 2, "calls": 2}
    assert metrics == {"tool_verify/skipped_frac": 0.0, "tool_verify/tool_error_frac": 1.0}

    # Arguments from a function; None means "do not call".
    by_function = ToolVerificationReward(
        tool_pool, "echo", lambda t, row: None if t.answer == "skip" else {"text": row["verdict"]}
    )
    rows = {"verdict": ["yes", "no", "yes"]}
    assert by_function(trajectories=[trajectory("a"), trajectory("b"), trajectory("skip")], **rows) == [
        1.0,
        0.0,
        0.0,
    ]

    with pytest.raises(ValueError, match="no tool named 'nope'"):
        ToolVerificationReward(tool_pool, "nope", {"x": "{answer}"})(trajectories=samples[:1])


def test_calculator_verifies_arithmetic_answers(tool_pool):
    # Recompute the question's expression with the calculator tool and compare with the model's answer.
    verify = ToolVerificationReward(
        tool_pool, "calculate", {"expression": "{question}"}, result_matches_answer
    )
    questions = ["2+3", "2+3", "1/3", "1/3", "0.1+0.2", "1/0"]
    answers = ["5", "6", "1/3", "0.3333333333", "0.30", "inf"]
    samples = [trajectory(a) for a in answers]
    assert verify(trajectories=samples, question=questions) == [1.0, 0.0, 1.0, 1.0, 1.0, 0.0]


# -- building from specs, sync and async -------------------------------------------------------------
USER_MODULE = """
async def async_bonus(*, trajectories, bonus=0.0, **kwargs):
    return [bonus + (t.answer is not None) for t in trajectories]

def length_penalty(*, trajectories, **kwargs):
    return [-0.01 * len(t.answer or "") for t in trajectories]

def arguments(trajectory, row):
    return {"text": trajectory.answer or ""}
"""


def score_synchronously(function: Any, batch: dict[str, Any]) -> list[float | None]:
    """A reward's scores from synchronous code, as our eval gets them: async rewards through the bridge."""
    if is_async_reward(function):
        return run_sync(functools.partial(function, **batch))
    return function(**batch)


def test_build_reward_functions_with_every_name(endpoint, tool_pool, tiny_lm, tmp_path, monkeypatch):
    model, tokenizer = tiny_lm
    saved = tmp_path / "judge-model"
    model.save_pretrained(saved)
    tokenizer.save_pretrained(saved)
    (tmp_path / "my_rewards.py").write_text(textwrap.dedent(USER_MODULE))
    monkeypatch.syspath_prepend(str(tmp_path))

    class Spec:  # the object form a recipe dataclass would give
        name, weight, options = "format", 0.5, {"partial_credit": 0.25}

    specs = [
        "exact_match",
        {"name": "f1", "weight": 0.3},
        Spec(),
        {"name": "tool_use", "weight": 0.1},
        {"name": "judge", "options": {"base_url": endpoint.url, "model": "tiny", "template": JUDGE_TEMPLATE}},
        {"name": "judge", "backend": "transformers", "model": str(saved), "max_new_tokens": 3, "weight": 0},
        {
            "name": "tool_verify",
            "options": {"tool": "echo", "arguments": {"text": "{answer}"}, "expect": "golden"},
        },
        {"name": "tool_verify", "tool": "echo", "arguments": "my_rewards:arguments", "label": "echo_ok"},
        {"name": "my_rewards:async_bonus", "options": {"bonus": 1.0}},
        {"name": "my_rewards:length_penalty", "weight": 2.0},
    ]
    functions, weights = build_reward_functions(specs, pool=tool_pool)
    names = [fn.__name__ for fn in functions]
    assert names == [
        "exact_match",
        "f1",
        "format",
        "tool_use",
        "judge",
        "judge_2",
        "tool_verify",
        "echo_ok",
        "async_bonus",
        "length_penalty",
    ]
    assert weights == [1.0, 0.3, 0.5, 0.1, 1.0, 0.0, 1.0, 1.0, 1.0, 2.0]
    # TRL's own test for async rewards (it gathers those on its loop): the judges and the async user function.
    assert [
        inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(type(fn).__call__) for fn in functions
    ] == [False] * 4 + [True, True] + [False] * 2 + [True, False]

    samples = [
        trajectory(
            "Paris", Turn(text="<search>x</search>", calls=[call()]), Turn(text="<answer>Paris</answer>")
        ),
        trajectory(
            "Lyon", Turn(text="<answer", parse_errors=["unclosed"]), Turn(text="<answer>Lyon</answer>")
        ),
        trajectory(None),
    ]
    batch = {
        "prompts": ["q"] * 3,
        "completions": ["c"] * 3,
        "completion_ids": [[1]] * 3,
        "golden_answers": [np.array(["Paris"])] * 3,
        "trajectories": samples,
        "trainer_state": None,
        "log_extra": lambda column, values: None,
        "log_metric": lambda name, value: None,
    }
    scores = {fn.__name__: score_synchronously(fn, batch) for fn in functions}
    assert scores["exact_match"] == scores["f1"] == [1.0, 0.0, 0.0]
    assert scores["format"] == [1.0, 0.25, 0.0]
    assert scores["tool_use"] == [1.0, 0.0, 0.0]
    assert scores["judge"] == [1.0, 0.0, 0.0]
    assert len(scores["judge_2"]) == 3 and all(s is None or 0 <= s <= 1 for s in scores["judge_2"])
    assert scores["tool_verify"] == [1.0, 0.0, 0.0]
    assert scores["echo_ok"] == [0.0, 0.0, 0.0]  # "Paris" is not a "true" verdict
    assert scores["async_bonus"] == [2.0, 2.0, 1.0]
    assert scores["length_penalty"] == [pytest.approx(-0.05), pytest.approx(-0.04), 0.0]
    # Bound rewards are plain objects: they pickle (TRL's supported reward forms do).
    assert pickle.loads(pickle.dumps(functions[2])).__name__ == "format"


def test_build_reward_functions_errors():
    with pytest.raises(
        ValueError,
        match=r"unknown reward 'bleu'; known: answer_retrieved, called_twice, exact_match, f1, format",
    ):
        build_reward_functions(["bleu"])
    with pytest.raises(ValueError, match=r"unknown option\(s\) \['partial'\] for reward 'format'"):
        build_reward_functions([{"name": "format", "partial": 0.2}])
    with pytest.raises(ValueError, match="pass the tool pool"):
        build_reward_functions([{"name": "tool_verify", "tool": "echo", "arguments": {}}])
    with pytest.raises(ValueError, match="needs the option 'base_url'"):
        build_reward_functions([{"name": "judge", "model": "m"}])
    with pytest.raises(ValueError, match="cannot import"):
        build_reward_functions(["no_such_module_xyz:reward"])
