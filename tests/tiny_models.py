"""Tiny models built in code (no download) for tests, benchmarks and device checks: a byte-level BPE
trained on the fly with ChatML special tokens, and a ~100k-parameter Llama sized to it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

CHATML_TEMPLATE = (
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
TINY_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]  # pad, bos, eos
_TINY_CORPUS = [
    "<search> who founded the guild </search> <information> Doc 1(Title: Guild) text </information>",
    '<answer> Draskel </answer> <tool_call> {"name": "echo", "arguments": {"text": "hi"}} </tool_call>',
    "The quick brown fox jumps over the lazy dog. Questions and answers about towns, rivers and years.",
    "In which year was the town founded? It was founded in 1842 by a cartographer.",
    "system user assistant tool observation error timeout result search answer think",
    "0 1 2 3 4 5 6 7 8 9 + - * / ( ) = , . : ; ' ? ! { } [ ] < > _",
]


def tiny_tokenizer(corpus: Sequence[str], chat_template: str = CHATML_TEMPLATE, vocab_size: int = 512) -> Any:
    """A byte-level BPE trained on the fly on ``corpus``, with ChatML special tokens, left padding."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=TINY_SPECIALS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    backend.train_from_iterator(list(corpus) * 4, trainer=trainer)
    pad, bos, eos = TINY_SPECIALS
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token=bos, eos_token=eos, pad_token=pad)
    tokenizer.chat_template = chat_template
    tokenizer.padding_side = "left"
    return tokenizer


def tiny_llama(tokenizer: Any, seed: int = 0, hidden_size: int = 64, layers: int = 2) -> Any:
    """A small randomly initialised Llama (seeded) sized to ``tokenizer``'s vocabulary and special tokens."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        tie_word_embeddings=True,
    )
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def tiny_model_and_tokenizer(seed: int = 0, hidden_size: int = 64, layers: int = 2) -> tuple[Any, Any]:
    """A ~100k-parameter Llama with a byte-level BPE tokenizer trained on the fly (ChatML special tokens)."""
    tokenizer = tiny_tokenizer(_TINY_CORPUS)
    return tiny_llama(tokenizer, seed=seed, hidden_size=hidden_size, layers=layers), tokenizer
