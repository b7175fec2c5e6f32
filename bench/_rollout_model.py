"""The rollout benchmark's task, tool and tiny model (helper of ``bench/rollout.py``).

A two-hop lookup: the question names an animal; ``lookup(animal)`` says which place it lives by,
``lookup(place)`` says which town that place is in, and the answer is the town. The tool exists twice with
the same replies and the same latency: as an MCP server (our engine's side; in-process, or a stdio
subprocess: ``python bench/_rollout_model.py --latency 0.2``) and as a plain async Python function (TRL's
built-in ``tools=`` side).

The model is a tiny Llama with a byte-level BPE tokenizer trained on the episodes themselves and Qwen2.5's
chat template, which TRL recognises: ``add_response_schema`` gives it Qwen's response parser and the
template is prefix-preserving, so TRL's tool loop runs unchanged. A short supervised warm-up on the
episodes rendered as each side renders its prompt makes greedy decoding write
``<tool_call>\\n{"name": "lookup", "arguments": {"query": ...}}\\n</tool_call><|im_end|>`` twice and then the
answer, so both sides generate the same tokens.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

# The tiny model builders live with the tests (tests/tiny_models.py), which this benchmark shares.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

SYSTEM = "Answer with the lookup tool."
TOOL_NAME = "lookup"
# animal -> (place, town): lookup(animal) names the place, lookup(place) names the town.
FACTS: dict[str, tuple[str, str]] = {
    "fox": ("river", "Draskel"),
    "owl": ("forest", "Morvane"),
    "heron": ("lake", "Velora"),
    "badger": ("hill", "Ostrand"),
}


def question(animal: str) -> str:
    return f"Where does the {animal} live?"


def reply(query: str) -> str:
    """The tool's reply, shared by both implementations of the tool."""
    for animal, (place, town) in FACTS.items():
        if query == animal:
            return f"The {animal} lives by the {place}."
        if query == place:
            return f"The {place} is in {town}."
    return f"Nothing is known about {query}."


def make_mcp_server(latency_s: float) -> MCPServer:
    """Our side: an MCP server whose ``lookup`` waits ``latency_s`` (an async sleep), then replies."""
    server = MCPServer("bench-lookup")

    @server.tool(name=TOOL_NAME)
    async def lookup(query: str) -> str:
        """Look a word up."""
        await anyio.sleep(latency_s)
        return reply(query)

    return server


def make_python_tool(latency_s: float) -> Callable[..., Any]:
    """TRL's side: the same tool as an async Python function (TRL dispatches on ``__name__``)."""
    import asyncio

    async def lookup(query: str) -> str:
        """Look a word up.

        Args:
            query: The word to look up.
        """
        await asyncio.sleep(latency_s)
        return reply(query)

    return lookup


def prompt_messages(animal: str) -> list[dict[str, Any]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question(animal)}]


def episode(animal: str) -> list[dict[str, Any]]:
    """The whole target episode as chat messages: two calls, their replies, the answer."""
    place, town = FACTS[animal]
    messages = prompt_messages(animal)
    for query in (animal, place):
        call = {"type": "function", "function": {"name": TOOL_NAME, "arguments": {"query": query}}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "name": TOOL_NAME, "content": reply(query)})
    messages.append({"role": "assistant", "content": town})
    return messages


def chat_template() -> str:
    from trl.chat_template_utils import qwen2_5_chat_template

    return qwen2_5_chat_template


def openai_tools(specs: Sequence[Any]) -> list[Mapping[str, Any]]:
    """The pool's MCP tools as the chat template's ``tools=`` takes them (what our PromptBuilder renders)."""
    return [spec.as_openai() for spec in specs]


def render_episodes(tool_variants: Sequence[Sequence[Any]], animals: Sequence[str]) -> list[str]:
    """Every episode rendered with every side's tools (the two sides' prompts differ only in the schemas)."""
    from tiny_models import TINY_SPECIALS
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    renderer = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.BPE()), bos_token=TINY_SPECIALS[1], eos_token=TINY_SPECIALS[2]
    )
    renderer.chat_template = chat_template()
    return [
        renderer.apply_chat_template(episode(animal), tools=list(tools), tokenize=False)
        for tools in tool_variants
        for animal in animals
    ]


def make_tokenizer(texts: Sequence[str], vocab_size: int = 1024) -> Any:
    """A byte-level BPE trained on the rendered episodes, with ChatML specials and Qwen2.5's chat template."""
    from tiny_models import tiny_tokenizer

    return tiny_tokenizer(texts, chat_template=chat_template(), vocab_size=vocab_size)


def make_model(tokenizer: Any, *, hidden_size: int = 64, layers: int = 2, seed: int = 0) -> Any:
    from tiny_models import tiny_llama

    return tiny_llama(tokenizer, seed=seed, hidden_size=hidden_size, layers=layers)


def assistant_targets(tokenizer: Any, texts: Sequence[str], width: int) -> Any:
    """A (batch, width) bool mask of the tokens the model writes (assistant turns through ``<|im_end|>``),
    for the left-padded encodings of ``texts``."""
    import torch
    from tiny_models import TINY_SPECIALS

    header, end = "<|im_start|>assistant\n", TINY_SPECIALS[2]
    mask = torch.zeros((len(texts), width), dtype=torch.bool)
    for row, text in enumerate(texts):
        spans, pos = [], 0
        while (start := text.find(header, pos)) >= 0:
            stop = text.index(end, start + len(header)) + len(end)
            spans.append((start + len(header), stop))
            pos = stop
        offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
        shift = width - len(offsets)
        for index, (first, _) in enumerate(offsets):
            if any(a <= first < b for a, b in spans):
                mask[row, shift + index] = True
    return mask


def warm_up(
    model: Any,
    tokenizer: Any,
    texts: Sequence[str],
    *,
    max_steps: int = 400,
    lr: float = 3e-3,
    min_margin: float = 2.0,
    check_every: int = 5,
) -> tuple[int, float]:
    """Supervised warm-up on the full episodes, until greedy decoding surely writes every assistant token.

    Teacher forcing: once the gold token beats every other token's logit by ``min_margin`` at every written
    position, greedy decoding reproduces the episodes (with room for batching's numeric noise). Returns
    (steps, smallest margin); raises if the model has not learnt the episodes within ``max_steps``.
    """
    import torch

    batch = tokenizer(list(texts), return_tensors="pt", padding=True, add_special_tokens=False)
    written = assistant_targets(tokenizer, texts, batch["input_ids"].shape[1])
    # The loss is on what the model writes; the prompt and the tool replies only condition it.
    labels = batch["input_ids"].masked_fill(~written, -100)
    targets, gold = written[:, 1:], batch["input_ids"][:, 1:]
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr)
    margin = float("-inf")
    for step in range(1, max_steps + 1):
        model.train()
        output = model(**batch, labels=labels)
        output.loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        if step % check_every == 0:
            model.eval()
            with torch.no_grad():
                logits = model(**batch).logits[:, :-1]
            gold_logit = logits.gather(-1, gold.unsqueeze(-1)).squeeze(-1)
            other = logits.scatter(-1, gold.unsqueeze(-1), float("-inf")).amax(-1)
            margin = float((gold_logit - other)[targets].min())
            if margin >= min_margin:
                return step, margin
    model.eval()
    raise RuntimeError(f"the warm-up did not converge in {max_steps} steps (smallest margin {margin:.2f})")


if __name__ == "__main__":
    cli = argparse.ArgumentParser(description="The benchmark's lookup tool as a stdio MCP server.")
    cli.add_argument("--latency", type=float, default=0.2, help="seconds each call waits")
    make_mcp_server(cli.parse_args().latency).run("stdio")
