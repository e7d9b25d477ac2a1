#!/usr/bin/env bash
# One lent-GPU session, as run through the device tool: the CUDA checks, then a training sweep of tiny-gpt v2.
#   bash bench/gpu_session.sh CORPUS OUTDIR [BUDGET_SECONDS]
# 1. bench/gpu_check.py: CUDA-vs-CPU parity and the trace cost on CUDA (on a quiet GPU, before training);
# 2. tests/model on that machine's torch, in the background (CPU), while
# 3. training.sweep trains its recipes side by side on the GPU and packs the best into OUTDIR.
# Everything printed goes to OUTDIR/device-log.txt as well.
set -uo pipefail
cd "$(dirname "$0")/.."
CORPUS="$1"; OUTDIR="$2"; BUDGET="${3:-350}"
PYTHON="${PYTHON:-python3}"
export PYTHONUNBUFFERED=1
mkdir -p "$OUTDIR"
LOG="$OUTDIR/device-log.txt"
{
  date -u; nvidia-smi -L; nproc; "$PYTHON" -c 'import torch; print("torch", torch.__version__, torch.version.cuda)'
  echo "== bench/gpu_check.py"
  timeout 90 "$PYTHON" bench/gpu_check.py --repeats 30; echo "gpu_check exit $?"
} 2>&1 | tee "$LOG"
( OMP_NUM_THREADS=4 timeout 420 "$PYTHON" -m pytest -q -p no:cacheprovider tests/model > /tmp/pytest-model.txt 2>&1; echo "pytest exit $?" >> /tmp/pytest-model.txt ) &
{
  echo "== training.sweep (budget $BUDGET s per recipe)"
  timeout $((BUDGET + 140)) "$PYTHON" -m training.sweep "$CORPUS" --out /tmp/sweep --budget "$BUDGET" --pack "$OUTDIR"
  echo "sweep exit $?"
  for f in /tmp/sweep/*.log; do echo "== $f"; grep -v "^$" "$f" | tail -40; done
} 2>&1 | tee -a "$LOG"
wait
{ echo "== tests/model"; tail -30 /tmp/pytest-model.txt; } 2>&1 | tee -a "$LOG"
