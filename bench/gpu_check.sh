#!/usr/bin/env bash
# One prepared device check for a CUDA machine with torch + transformers and no network (the H200 image:
# Python 3.12, torch 2.11, transformers 5.17, accelerate 1.15): a few MCPGRPOTrainer steps with the tiny
# model and a real stdio search server, on CUDA and then on CPU; prints one JSON line
# ({"ok": ..., "cuda": {...}, "cpu": {...}, "ratio_cuda_over_cpu": {...}}) and exits non-zero on any
# device-placement error. Runs in about a minute; hard limit 7 minutes.
#
#   bash bench/gpu_check.sh                       # both devices, 5 steps
#   bash bench/gpu_check.sh --device cpu --steps 2
#   PYTHON=.venv/bin/python bash bench/gpu_check.sh --device cpu   # here, with the project's venv
#
# Wheels to carry: what mcp-rl, the search server and TRL import that such an image lacks (read off the
# modules loaded by this check and by the search server, less the image's package list in
# /work/.library/device/KINDS.md). anyio, idna and typing-extensions are there but may be older than
# httpx2 and pydantic need; pyarrow is there (datasets 5.2 asks for >= 24 but only warns). 31 wheels, 12 MB.
# Once, in the repo root of a machine with pip and an index (versions as in .venv):
#
#   echo /.whl/ >> .git/info/exclude
#   python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
#     --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
#     trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 \
#     mcp==2.3.0 mcp-types==2.3.0 httpx2==2.16.2 httpcore2==2.16.2 truststore==0.10.5 \
#     pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 \
#     typing-extensions==4.16.0 anyio==4.16.0 idna==3.20 \
#     starlette==1.10.0 sse-starlette==3.7.0 uvicorn==0.54.0 python-multipart==0.0.34 \
#     opentelemetry-api==1.45.2 cryptography==50.0.2 cffi==2.1.1 pycparser==3.12 \
#     jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1 \
#     json-repair==0.64.6 bm25s==0.3.16
#
# (cryptography and cffi: `mcp.server` imports cryptography. pydantic-core, rpds-py and cffi are the
# compiled ones, hence --python-version 3.12.) Then the device call carries ".whl" and runs
#   bash bench/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if compgen -G ".whl/*.whl" >/dev/null; then
    # --target keeps the image's own site-packages untouched; PYTHONPATH puts the carried versions first.
    "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
    export PYTHONPATH=/tmp/site:$PWD/src:$PWD
else
    export PYTHONPATH=$PWD/src:$PWD${PYTHONPATH:+:$PYTHONPATH}
fi
# Nothing may be fetched: everything is built in code.
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1 WANDB_MODE=disabled
export TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

# What the check runs on, to stderr (stdout is the JSON line alone).
{
    command -v nvidia-smi >/dev/null && nvidia-smi -L || echo "no nvidia-smi"
    "$PYTHON" - <<'EOF'
import importlib.metadata as md
names = ["torch", "transformers", "accelerate", "trl", "datasets", "pyarrow", "mcp", "pydantic", "anyio"]
versions = []
for name in names:
    try:
        versions.append(f"{name} {md.version(name)}")
    except md.PackageNotFoundError:
        versions.append(f"{name} MISSING")
print("; ".join(versions))
EOF
} >&2

exec timeout 420 "$PYTHON" bench/gpu_check.py "$@"
