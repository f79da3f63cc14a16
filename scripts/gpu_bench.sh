#!/usr/bin/env bash
# GPU tests, profiles and `physarum bench` on a GPU machine (through the device tool).
# Usage: scripts/gpu_bench.sh [CONFIGS [XL_CONFIGS]]; results go to $OUT (default gpu-bench).
# XL runs separately, without torch.compile (its compile of 256M-agent graphs alone would
# take most of a 10-minute device call).
set -u
OUT=${OUT:-gpu-bench}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
python3 -m pytest -q tests/test_kernels_gpu.py 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
physarum profile presets/veins.yaml --backend triton --steps 50 --trace "$OUT/triton.trace.json" 2>&1 | tee "$OUT/profile.log"
physarum profile presets/veins.yaml --backend torch --device cuda --steps 10 --trace /tmp/torch.trace.json 2>&1 | tee -a "$OUT/profile.log"
physarum bench --configs "${1:-S,L,X}" --out "$OUT/h200.json" 2>&1 | tee "$OUT/bench.log"
if [ -n "${2-XL}" ]; then
  physarum bench --configs "${2-XL}" --skip torch.compile --out "$OUT/h200-xl.json" 2>&1 | tee -a "$OUT/bench.log"
fi
