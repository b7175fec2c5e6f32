"""``ProcessGenerator``: the default generator in a second process, on its own copy of the weights.

A rollout that runs while the policy trains (``grpo.overlap``) must not generate with weights the optimizer
is changing under it, and on one machine it should not hold the trainer's interpreter either. This backend
runs ``CachedTransformersGenerator`` in a spawned process, over a replica of the policy whose every tensor
lives in shared memory: the worker's model *is* that replica, so a weight update is a copy into it
(``sync``, between rollouts) and only prompts, tokens and log-probabilities cross the pipe. The worker
records each sampled token's log-probability, which TRL's importance-sampling correction compares with the
policy's when the batch trains a step later.

Only one call is in flight at a time (the engine's), and ``sync`` must not run while a rollout is under
way (the trainer syncs before it starts one). A worker that dies fails the call in flight with a
``GeneratorProcessError`` naming its exit code instead of leaving it waiting.
"""

from __future__ import annotations

import copy
import os
import shutil
import threading
import traceback
from collections.abc import Sequence
from multiprocessing.connection import Connection
from typing import Any

import torch
import torch.multiprocessing

from mcp_rl.errors import ConfigError
from mcp_rl.generation.base import Generation, SamplingParams

__all__ = ["GeneratorProcessError", "ProcessGenerator"]


class GeneratorProcessError(RuntimeError):
    """The generator process failed a call or died."""


def serve(connection: Connection, replica: Any, tokenizer: Any, options: dict[str, Any]) -> None:
    """The worker's loop: one request in, one reply out, until ``close`` or the pipe ends."""
    from mcp_rl.generation.cached import CachedTransformersGenerator

    if options["threads"]:
        torch.set_num_threads(options["threads"])
    torch.manual_seed(options["seed"])
    generator = CachedTransformersGenerator(replica, tokenizer, options["batch_size"], logprobs=True)
    connection.send(("ok", None))  # started
    while True:
        try:
            kind, payload = connection.recv()
        except EOFError:
            return
        if kind == "close":
            return
        try:
            if kind == "generate":
                prompts, sampling = payload
                generations = generator.generate(prompts, sampling)
                reply: Any = [(g.token_ids, g.finish_reason, g.logprobs) for g in generations]
            elif kind == "hold":
                reply = generator.hold(payload)
            elif kind == "weights":  # written in place from the other process: the held state is stale
                generator.drop()
                reply = payload
            else:
                raise ValueError(f"unknown request {kind!r}")
        except Exception:
            connection.send(("error", traceback.format_exc()))
            continue
        connection.send(("ok", reply))


def check_shared_memory(model: Any, folder: str = "/dev/shm") -> None:
    """``ConfigError`` when the shared-memory file system cannot hold a copy of ``model`` (a container's
    default is 64 MB; a write past it would kill the process instead of failing)."""
    if not os.path.isdir(folder):
        return
    needed = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
    free = shutil.disk_usage(folder).free
    if free < needed * 1.1:
        raise ConfigError(
            f"rollout.backend: process keeps a {needed / 2**20:,.0f} MB copy of the model in shared memory, "
            f"but {folder} has {free / 2**20:,.0f} MB free: give the container more (docker run "
            "--shm-size=2g) or set rollout.backend: transformers"
        )


class ProcessGenerator:
    """Generation in a second process (see module doc); a ``Generator`` with its own copy of the weights.

    Args:
        model: the policy. A replica of it (LoRA adapters included) is made in shared memory at once, so
            build this before any training changes the policy's structure.
        tokenizer: the policy's tokenizer (stop strings are decoded in the worker).
        batch_size: episodes generated at once (None = every ready one).
        threads: the worker's torch threads (None = torch's default, every core).
        seed: the worker's sampling seed.
        start_timeout: seconds the worker may take to start (importing torch and transformers).
    """

    lockstep = False
    own_weights = True  # it may generate while the policy trains (grpo.overlap)

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        batch_size: int | None = None,
        threads: int | None = None,
        seed: int = 0,
        start_timeout: float = 300.0,
    ) -> None:
        check_shared_memory(model)
        self.replica = copy.deepcopy(model).eval().requires_grad_(False).share_memory()
        self.source: Any = None  # the model last synced from
        self.lock = threading.Lock()
        context = torch.multiprocessing.get_context("spawn")
        self.connection, child = context.Pipe()
        options = {"threads": threads, "seed": seed, "batch_size": batch_size}
        self.process = context.Process(
            target=serve, args=(child, self.replica, tokenizer, options), name="mcp-rl-generator", daemon=True
        )
        self.process.start()
        child.close()
        self.reply("start", timeout=start_timeout)

    def request(self, kind: str, payload: Any) -> Any:
        """Send one request and wait for its reply, failing at once if the worker dies meanwhile."""
        with self.lock:
            if not self.process.is_alive():
                raise self.died()
            try:
                self.connection.send((kind, payload))
            except OSError:  # the pipe broke: the worker is gone or going
                raise self.died() from None
            return self.reply(kind)

    def reply(self, kind: str, *, timeout: float | None = None) -> Any:
        """The worker's answer to ``kind``, polled so that its death ends the wait."""
        waited = 0.0
        try:
            while not self.connection.poll(1.0):
                waited += 1.0
                if not self.process.is_alive():
                    raise self.died()
                if timeout is not None and waited >= timeout:
                    raise GeneratorProcessError(
                        f"the generator process did not answer {kind!r} in {timeout:g} s"
                    )
            status, reply = self.connection.recv()
        except (EOFError, OSError):  # the pipe broke: the worker is gone or going
            raise self.died() from None
        if status == "error":
            raise GeneratorProcessError(f"the generator process failed {kind!r}:\n{reply}")
        return reply

    def died(self) -> GeneratorProcessError:
        self.process.join(timeout=5)
        return GeneratorProcessError(
            f"the generator process (pid {self.process.pid}) exited with code {self.process.exitcode}; "
            "its stderr is this run's"
        )

    def sync(self, model: Any, step: int) -> None:
        """Copy the policy's weights into the replica: every tensor the first time (or from another model),
        then the trained ones, at every call. Not only when ``step`` is new, and not by tensor version
        counters: the fused AdamW transformers picks by default updates weights in place without
        advancing them. A copy of SmolLM2-135M's 42.5M trained weights is a fraction of a second."""
        first = model is not self.source
        replica = dict(self.replica.named_parameters())
        with torch.no_grad():
            for name, parameter in model.named_parameters():
                if first or parameter.requires_grad:
                    replica[name].copy_(parameter)
            if first:
                buffers = dict(self.replica.named_buffers())
                for name, buffer in model.named_buffers():
                    if name in buffers:
                        buffers[name].copy_(buffer)
        self.request("weights", step)
        self.source = model

    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        replies = self.request("generate", ([list(p) for p in prompts], sampling))
        return [Generation(list(ids), reason, logprobs) for ids, reason, logprobs in replies]

    def hold(self, sequences: Sequence[Sequence[int]]) -> None:
        self.request("hold", [list(s) for s in sequences])

    def close(self) -> None:
        """Stop the worker (idempotent)."""
        if self.process.is_alive():
            try:
                with self.lock:
                    self.connection.send(("close", None))
            except (OSError, ValueError):
                pass
            self.process.join(timeout=10)
            if self.process.is_alive():
                self.process.kill()
                self.process.join(timeout=5)
        self.connection.close()
