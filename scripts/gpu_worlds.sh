#!/usr/bin/env bash
# Worlds evidence on a GPU machine (run through the device tool, like gpu_check.sh), one call:
#   1. tests/test_kernels_gpu.py on CUDA (Triton and the reference on
#      CUDA against the reference on the CPU, byte for byte);
#   2. every world preset rendered with --backend triton on the GPU and with --backend torch on
#      the CPU (in the background, at the same time), the PNG still only (the final state, in
#      its colours), stills compared byte for byte; the GPU's stills are kept in $OUT/stills for
#      the README's thumbnails;
#      (CPU_RENDERS=0: the GPU's stills only, to compare with stills rendered on another machine);
#   3. scripts/resolution_check.py: presets/anywhere.yaml at 512x512 to 3840x2160, 6 seeds each;
#   4. with PIPELINE_FRAMES=N, the 4K pipeline check of scripts/pipeline_bench.py on N frames.
set -u
OUT=${OUT:-gpu-worlds}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
PRESETS=${PRESETS:-$(printf 'presets/%s.yaml ' maze lettering feast rivals tribes anywhere)}

# The GPU tests first, alone: with CPU renders beside them their CPU references crawled (an
# earlier call spent 400 s here). The naive-step tests are CPU-only and run in CI.
t0=$SECONDS
{ timeout "${TESTS_TIMEOUT_S:-360}" python3 -m pytest -q -p no:cacheprovider tests/test_kernels_gpu.py; } 2>&1 \
  | tail -n 20 | tee "$OUT/gpu-tests.log"
echo "tests: $((SECONDS - t0)) s" | tee -a "$OUT/gpu-tests.log"

[ "${CPU_RENDERS:-1}" = 0 ] || ( printf '%s\n' $PRESETS | OMP_NUM_THREADS=2 xargs -P 8 -I{} python3 -m physarum.render.cli render {} \
    --backend torch --device cpu --out /tmp/wcpu --quiet --set 'output.formats=[png]' ) > "$OUT/cpu-renders.log" 2>&1 &
cpu_job=$!
for p in $PRESETS; do
  t0=$SECONDS; physarum render "$p" --backend triton --device cuda --out /tmp/wgpu --quiet --set 'output.formats=[png]'
  echo "   $(basename "$p" .yaml): $((SECONDS - t0)) s"
done 2>&1 | tee "$OUT/gpu-renders.log"
mkdir -p "$OUT/stills" && cp /tmp/wgpu/*/*.png "$OUT/stills/"
python3 scripts/resolution_check.py presets/anywhere.yaml --sizes 512x512 1024x1024 2048x2048 3840x2160 --seeds 6 \
  --checkpoints 10 --out "$OUT/resolution.json" --figure "$OUT/resolution.png" 2>&1 | tee "$OUT/resolution.log"

if [ "${CPU_RENDERS:-1}" != 0 ]; then
  for _ in $(seq "${CPU_WAIT_S:-180}"); do kill -0 $cpu_job 2>/dev/null || break; sleep 1; done
  kill $cpu_job 2>/dev/null; pkill -f "device cpu" 2>/dev/null
  echo "== byte-identical check: triton on $(nvidia-smi --query-gpu=name --format=csv,noheader) vs torch on the CPU (PNG stills)" | tee "$OUT/identical.log"
  for f in /tmp/wgpu/*/*.png; do
    verdict "$f" "/tmp/wcpu/$(basename "$(dirname "$f")")" | tee -a "$OUT/identical.log"
  done
fi


if [ -n "${PIPELINE_FRAMES:-}" ]; then
  timeout "${PIPELINE_TIMEOUT_S:-200}" python3 scripts/pipeline_bench.py --frames "$PIPELINE_FRAMES" \
    --skip fps,8k --out "$OUT/pipeline.json" 2>&1 | tee "$OUT/pipeline.log"
fi
