"""The warm start's supervised loss, mixed back into every GRPO step (``grpo.sft_coef``).

GRPO after a warm start learns from the problems the warm-started policy still fails, and in doing so can
unlearn those it solved: on the calculator, GRPO on problems phrased anew raised them and lowered the
shipped phrasing's held-out score a little (docs/grpo-protocol.md). InstructGPT's PPO-ptx (OpenRLHF's
``ptx_coef``) keeps what was taught by adding a supervised term to the policy loss. Here the term is the
mean next-token loss on a few of the warm start's own demonstrations (played again through the real tools,
the same token layout as the warm start trained on), drawn afresh for each micro-batch:

    loss = GRPO's loss + sft_coef × mean token loss of the drawn demonstrations

Each draw is a function of the seed, the optimizer step and the micro-batch's place in it, so a resumed
run draws what the killed one would have.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import torch

from mcp_rl.env.trajectory import Trajectory
from mcp_rl.errors import ConfigError
from mcp_rl.training.lean_forward import supervised_loss


class DemonstrationLoss:
    """Draws ``batch_size`` of ``episodes`` per micro-batch and gives their mean token loss."""

    def __init__(self, episodes: Sequence[Trajectory], *, batch_size: int, pad_id: int, seed: int) -> None:
        if not episodes:
            raise ConfigError("grpo.sft_coef: the warm start kept no demonstration to mix in")
        self.episodes = list(episodes)
        self.batch_size = min(batch_size, len(self.episodes))
        self.pad_id = pad_id
        self.seed = seed
        self.step = -1
        self.draws = 0  # micro-batches drawn for this step so far

    def draw(self, step: int) -> list[Trajectory]:
        """The demonstrations for the next micro-batch of optimizer step ``step``."""
        if step != self.step:
            self.step, self.draws = step, 0
        chooser = random.Random(f"{self.seed}:{step}:{self.draws}")
        self.draws += 1
        return chooser.sample(self.episodes, self.batch_size)

    def __call__(self, model: Any, step: int) -> torch.Tensor:
        return supervised_loss(model, self.draw(step), self.pad_id)
