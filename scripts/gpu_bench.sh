#!/usr/bin/env bash
# GPU tests, profiles and `physarum bench` on a GPU machine (through the device tool).
# Usage: scripts/gpu_bench.sh [CONFIGS]   e.g. S,L,X,XL ; results go to $OUT and benchmarks/.
set -u
OUT=${OUT:-gpu-bench}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
python3 -m pytest -q tests/test_gpu.py 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
physarum profile presets/veins.yaml --backend triton --steps 50 --trace "$OUT/triton.trace.json" 2>&1 | tee "$OUT/profile.log"
physarum profile presets/veins.yaml --backend torch --device cuda --steps 10 --trace /tmp/torch.trace.json 2>&1 | tee -a "$OUT/profile.log"
physarum bench --configs "${1:-S,L,X,XL}" --out "$OUT/h200.json" ${BENCH_FLAGS:-} 2>&1 | tee "$OUT/bench.log"
