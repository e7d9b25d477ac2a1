#!/usr/bin/env bash
# The CUDA path on a machine with an NVIDIA GPU: parity on CUDA, the CUDA-capable model tests, the trace cost;
# and the same for smollm2 when this checkout registers it (bench/gpu_check.py --llm NAME for another registered model).
# Needs a CUDA build of torch in the environment (pip install torch==2.13.0 from the CUDA index).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python}"
"$PYTHON" bench/gpu_check.py "$@"
# the model's own tests with the CUDA build of torch installed (they run on the CPU; the script above ran CUDA)
"$PYTHON" -m pytest -q tests/model
