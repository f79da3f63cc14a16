#!/usr/bin/env bash
# One device call of evidence for a release (docs/benchmarks.md): the byte-identical check
# (scripts/gpu_check.sh), GIF encoding on labyrinth's frames (scripts/bench_gif.py), then the
# GPU tests and the golden pins (Triton on CUDA) with what time is left. Logs under $OUT.
set -u
OUT=${OUT:-gpu-session}; mkdir -p "$OUT"
CPU_WAIT_S=${CPU_WAIT_S:-150} OUT="$OUT/check" bash scripts/gpu_check.sh > "$OUT/check.log" 2>&1
cat "$OUT/check/identical.log" "$OUT/check/formats.log" 2>/dev/null
source scripts/gpu_env.sh > /dev/null 2>&1
timeout 150 python3 scripts/bench_gif.py labyrinth --renders --out "$OUT/gif-h200-labyrinth.json" 2>&1 | tee "$OUT/gif.log"
timeout "${TEST_S:-150}" python3 -m pytest -q -p no:cacheprovider tests/test_kernels_gpu.py tests/test_golden.py 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
exit 0
