"""The lean training forward (``mcp_rl.training.lean_forward``) against TRL's fused LM-head forward on a
real tiny Llama:
the same log-probabilities, entropies and gradients where the loss reads, with left padding, a shared
prompt prefix, rows without one, and through ``MCPGRPOTrainer.compute_loss``."""

from __future__ import annotations

from typing import Any

import pytest
import torch
from tiny import searching_trainer
from tiny_models import tiny_model_and_tokenizer
from trl.trainer.utils import add_fused_lm_head

from mcp_rl.env.trajectory import Trajectory
from mcp_rl.training.lean_forward import (
    MIN_SHARED_PREFIX,
    EpisodeForward,
    LeanScoring,
    shared_prefix_length,
)

TEMPERATURE = 0.7


def batch(
    prefix: int, prompts: list[int], completions: list[int], seed: int = 0, vocab: int = 200
) -> dict[str, torch.Tensor]:
    """Rows of [left padding][a prefix shared by all rows][own prompt tokens] + [completion][right padding],
    with an observation span (tool_mask 0) inside each completion."""
    generator = torch.Generator().manual_seed(seed)
    shared = torch.randint(3, vocab, (prefix,), generator=generator)
    prompt_rows = [torch.cat([shared, torch.randint(3, vocab, (n,), generator=generator)]) for n in prompts]
    prompt_width, completion_width = max(map(len, prompt_rows)), max(completions)
    rows = len(prompts)
    prompt_ids = torch.zeros(rows, prompt_width, dtype=torch.long)
    prompt_mask = torch.zeros_like(prompt_ids)
    completion_ids = torch.zeros(rows, completion_width, dtype=torch.long)
    completion_mask = torch.zeros_like(completion_ids)
    tool_mask = torch.ones_like(completion_ids)
    for row, (tokens, length) in enumerate(zip(prompt_rows, completions, strict=True)):
        prompt_ids[row, prompt_width - len(tokens) :] = tokens
        prompt_mask[row, prompt_width - len(tokens) :] = 1
        completion_ids[row, :length] = torch.randint(3, vocab, (length,), generator=generator)
        completion_mask[row, :length] = 1
        tool_mask[row, 2 : min(length - 1, 6)] = 0
    return {
        "prompt_ids": prompt_ids,
        "prompt_mask": prompt_mask,
        "completion_ids": completion_ids,
        "completion_mask": completion_mask,
        "tool_mask": tool_mask,
    }


def joined(inputs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Input ids, attention mask and labels (completion tokens only) as TRL builds them for its forward."""
    input_ids = torch.cat([inputs["prompt_ids"], inputs["completion_ids"]], 1)
    attention_mask = torch.cat([inputs["prompt_mask"], inputs["completion_mask"]], 1)
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    labels[:, : inputs["prompt_ids"].size(1)] = -100
    return input_ids, attention_mask, labels


def fused_call(model: Any, inputs: dict[str, torch.Tensor], lean: LeanScoring | None) -> tuple[Any, Any]:
    """What TRL's ``_get_per_token_logps_and_entropies`` does, the loss mask set as our trainer sets it."""
    input_ids, attention_mask, labels = joined(inputs)
    keep = inputs["completion_ids"].size(1)
    loss_mask = inputs["completion_mask"] * inputs["tool_mask"]
    model.zero_grad()
    if lean is None:
        outputs = model(input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True)
    else:
        with lean.reading(loss_mask):
            outputs = model(
                input_ids=input_ids, attention_mask=attention_mask, labels=labels, fused_lm_head=True
            )
    log_probs, entropy = outputs.log_probs[:, -keep:], outputs.entropy[:, -keep:]
    if lean is not None and lean.enabled:  # tokens the loss does not read are not scored
        assert log_probs[loss_mask == 0].abs().sum() == 0 and entropy[loss_mask == 0].abs().sum() == 0
    else:
        assert (log_probs[(loss_mask == 0) & (inputs["completion_mask"] == 1)] != 0).all()
    (-(log_probs * loss_mask).sum() - 0.1 * (entropy * loss_mask).sum()).backward()
    gradient = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return (log_probs * loss_mask).detach(), (entropy * loss_mask).detach(), gradient


def trl_then_lean(model: Any, inputs: dict[str, torch.Tensor], lean: LeanScoring) -> tuple[Any, Any]:
    """``fused_call``'s results with TRL's forward, then with the lean one."""
    lean.enabled = False
    trls = fused_call(model, inputs, lean)
    lean.enabled = True
    return trls, fused_call(model, inputs, lean)


@pytest.fixture
def patched_model() -> tuple[Any, LeanScoring]:
    model, _ = tiny_model_and_tokenizer(seed=3)
    for parameter in model.model.embed_tokens.parameters():
        parameter.requires_grad_(False)  # as train_top_layers leaves it: the lean path must not need it
    add_fused_lm_head(model, temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    return model, LeanScoring(model, TEMPERATURE)


@pytest.mark.parametrize(
    ("prefix", "prompts", "completions"),
    [
        (MIN_SHARED_PREFIX + 24, [3, 7, 1, 5], [12, 9, 14, 6]),  # shared prefix, left and right padding
        (MIN_SHARED_PREFIX + 24, [4], [10]),  # one row: nothing to share
        (0, [9, 20, 14], [8, 8, 11]),  # rows differ from their first token
        (MIN_SHARED_PREFIX - 1, [2, 6], [7, 9]),  # a prefix too short to be worth a second call
    ],
)
def test_lean_scoring_matches_trls_fused_forward(
    patched_model: tuple[Any, LeanScoring], prefix: int, prompts: list[int], completions: list[int]
) -> None:
    """Equal where the loss reads; the prefix read once when there is one worth sharing."""
    model, lean = patched_model
    (trl_logps, trl_entropy, trl_gradient), (logps, entropy, gradient) = trl_then_lean(
        model, batch(prefix, prompts, completions), lean
    )
    assert trl_logps.abs().sum() > 0 and trl_gradient.norm() > 0
    torch.testing.assert_close(logps, trl_logps, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(entropy, trl_entropy, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(gradient, trl_gradient, rtol=1e-3, atol=1e-6)
    shares = len(prompts) > 1 and prefix >= MIN_SHARED_PREFIX
    assert lean.last_shared_prefix == (prefix if shares else 0)


@pytest.mark.parametrize(
    ("prefix", "prompts", "completions"),
    [
        (MIN_SHARED_PREFIX + 24, [3, 7, 1, 5], [12, 9, 14, 6]),  # shared prefix, left padding
        (MIN_SHARED_PREFIX - 1, [2, 6, 4], [7, 9, 8]),  # nothing shared: one plain forward
    ],
)
def test_tokens_scored_after_a_point_of_an_episode_equal_a_plain_forward_of_the_context(
    prefix: int, prompts: list[int], completions: list[int]
) -> None:
    """What the drift probes read from one forward over their episodes: each episode's own tokens, and
    tokens that did not happen, teacher-forced after a point inside it, from the kept cache."""
    model, _ = tiny_model_and_tokenizer(seed=5)
    model.eval()
    with torch.no_grad():  # peaked attention, so that a token run at the wrong position scores differently
        for layer in model.model.layers:
            layer.self_attn.q_proj.weight.mul_(8)
            layer.self_attn.k_proj.weight.mul_(8)
    inputs = batch(prefix, prompts, completions, seed=7)
    episodes = []
    for row in range(len(prompts)):
        prompt = inputs["prompt_ids"][row][inputs["prompt_mask"][row] == 1].tolist()
        completion = inputs["completion_ids"][row, : completions[row]].tolist()
        own = inputs["tool_mask"][row, : completions[row]].tolist()
        episodes.append(Trajectory(row, [], prompt, completion_ids=completion, completion_mask=own))
    points = [(row, cut) for row in range(len(prompts)) for cut in (1, completions[row] // 2 + 1)]
    tokens = [11, 42, 7]
    with torch.no_grad():
        forward = EpisodeForward(model, episodes, pad_id=0, keep_cache=True)
        logits, targets = forward.own_token_logits()
        continued = forward.continuation_log_probs(points, tokens)
        own_expected, continued_expected = [], []
        for episode in episodes:  # one row at a time: no padding, nothing shared
            ids = episode.prompt_ids + episode.completion_ids
            row_logits = model(input_ids=torch.tensor([ids])).logits[0]
            positions = [len(episode.prompt_ids) + i - 1 for i, o in enumerate(episode.completion_mask) if o]
            own_expected.append(row_logits[positions])
        for row, cut in points:
            episode = episodes[row]
            context = episode.prompt_ids + episode.completion_ids[:cut]
            row_logits = model(input_ids=torch.tensor([context + tokens])).logits[0].log_softmax(-1)
            picked = row_logits[len(context) - 1 : -1].gather(-1, torch.tensor(tokens)[:, None])
            continued_expected.append(picked.sum())
    assert forward.forward.shared == (prefix if prefix >= MIN_SHARED_PREFIX else 0)
    torch.testing.assert_close(logits, torch.cat(own_expected), rtol=1e-4, atol=1e-5)
    own_tokens = [t for e in episodes for t, o in zip(e.completion_ids, e.completion_mask, strict=True) if o]
    assert targets.tolist() == own_tokens
    torch.testing.assert_close(continued, torch.stack(continued_expected), rtol=1e-4, atol=1e-4)
    one_token = EpisodeForward(model, episodes, pad_id=0)  # the first token needs no cache
    torch.testing.assert_close(
        one_token.continuation_log_probs(points, tokens[:1]),
        forward.continuation_log_probs(points, tokens[:1]),
    )
    with pytest.raises(ValueError, match="keep_cache"):
        one_token.continuation_log_probs(points, tokens)


def test_shared_prefix_stops_before_the_first_scored_position() -> None:
    input_ids, attention_mask, labels = joined(batch(30, [3, 7], [5, 4]))
    assert shared_prefix_length(input_ids, attention_mask, labels) == 30
    # Rows that differ inside the prefix share only what comes before the difference.
    changed = input_ids.clone()
    changed[1, (attention_mask[1] == 1).nonzero()[0, 0] + 11] += 1
    assert shared_prefix_length(changed, attention_mask, labels) == 11
    # A row whose prompt is all shared tokens: the prefix ends one token before its first scored label.
    assert shared_prefix_length(*joined(batch(30, [0, 5], [5, 4]))) == 29


def test_other_calls_reach_the_models_own_forward(patched_model: tuple[Any, LeanScoring]) -> None:
    model, _ = patched_model
    ids = torch.randint(3, 200, (2, 9), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        logits = model(input_ids=ids).logits  # generation's call: plain logits, untouched
        greedy = model.generate(ids, max_new_tokens=4, do_sample=False)
    assert logits.shape == (2, 9, model.config.vocab_size)
    assert greedy.shape == (2, 13)


def test_an_all_masked_micro_batch_gives_a_zero_loss_backward_accepts(
    patched_model: tuple[Any, LeanScoring],
) -> None:
    model, lean = patched_model
    inputs = batch(MIN_SHARED_PREFIX + 4, [2, 3], [5, 6])
    inputs["tool_mask"] = torch.zeros_like(inputs["tool_mask"])
    logps, entropy, _ = fused_call(model, inputs, lean)
    assert logps.abs().sum() == 0 and entropy.abs().sum() == 0


def test_trainer_loss_is_trls_loss_with_and_without_lean_scoring(
    searching_tiny_model: Any, search_entry: dict[str, Any], tmp_path: Any
) -> None:
    model, tokenizer = searching_tiny_model
    with searching_trainer(model, tokenizer, search_entry, tmp_path / "out") as trainer:
        assert trainer.lean_scoring is not None
        inputs = batch(
            MIN_SHARED_PREFIX + 20, [4, 9, 2, 6], [11, 7, 13, 5], seed=5, vocab=model.config.vocab_size
        )
        inputs["advantages"] = torch.tensor([1.0, -0.5, 0.25, -0.75])
        inputs["num_items_in_batch"] = (inputs["completion_mask"] * inputs["tool_mask"]).sum()
        lean = trainer.compute_loss(model, inputs)
        trainer.lean_scoring.enabled = False
        plain = trainer.compute_loss(model, inputs)
        trainer.lean_scoring.enabled = True
        assert torch.isfinite(lean) and plain.item() != 0.0
        assert lean.item() == pytest.approx(plain.item(), rel=1e-4, abs=1e-6)


def test_lean_scoring_under_lora_adapters() -> None:
    """TRL patches the PEFT model's base model; so does the trainer: gradients reach the adapters alike."""
    peft = pytest.importorskip("peft")
    LoraConfig, get_peft_model = peft.LoraConfig, peft.get_peft_model

    base, _ = tiny_model_and_tokenizer(seed=4)
    adapters = LoraConfig(r=4, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
    model = get_peft_model(base, adapters)
    add_fused_lm_head(model.get_base_model(), temperature=TEMPERATURE, outputs=("log_probs", "entropy"))
    lean = LeanScoring(model.get_base_model(), TEMPERATURE)
    (trl_logps, _, trl_gradient), (logps, _, gradient) = trl_then_lean(
        model, batch(MIN_SHARED_PREFIX + 8, [3, 6, 2], [9, 7, 10], seed=2), lean
    )
    assert lean.last_shared_prefix == MIN_SHARED_PREFIX + 8
    assert len(gradient) == len(trl_gradient) == sum(p.numel() for p in model.parameters() if p.requires_grad)
    torch.testing.assert_close(logps, trl_logps, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(gradient, trl_gradient, rtol=1e-3, atol=1e-6)
