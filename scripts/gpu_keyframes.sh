#!/usr/bin/env bash
# Issue 17's keyframe evidence in one device call: the keyframe tests on CUDA (Triton against the
# reference byte for byte, CUDA graphs kept across retunes), the GPU tests and golden pins, the
# cost of schedules on veins (scripts/bench_keyframes.py), then the new curated presets rendered
# by Triton on the GPU and by torch on the host's CPU and compared (scripts/gpu_art.sh).
# Logs under $OUT (the art script's folder as art.tar.gz).
set -u
OUT=${OUT:-gpu-keyframes}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
timeout "${TEST_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_keyframes.py tests/test_kernels_gpu.py \
  tests/test_golden.py 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
timeout 150 python3 scripts/bench_keyframes.py veins --steps 1000 --out "$OUT/keyframes-h200-veins.json" 2>&1 \
  | tee "$OUT/keyframes.log"
[ -f scripts/gpu_art.sh ] && OUT="$OUT/art" bash scripts/gpu_art.sh > "$OUT/art.log" 2>&1
cat "$OUT/art/identical.log" "$OUT/art/times.log" 2>/dev/null
# at most 8 files come back from a device call: the art folder travels as one archive
tar czf "$OUT/art.tar.gz" -C "$OUT" art && rm -rf "$OUT/art"
exit 0
