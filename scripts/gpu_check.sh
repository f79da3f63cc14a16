#!/usr/bin/env bash
# Exactness evidence on a GPU machine (run through the device tool; see docs/benchmarks.md):
#   1. GPU tests: Triton on CUDA and the reference on CUDA against the reference on the CPU;
#   2. every curated preset rendered with --backend triton on the GPU and with --backend torch
#      on the CPU (in the background, at the same time), files compared byte for byte;
#   3. quickstart's MP4 in every output.mp4 setting and its WebP, on the GPU and on the CPU,
#      compared, with their sha256 for the 2-core CPU's (benchmarks/evidence/formats-cpu-2core.txt);
# Writes its logs to $OUT (or ./gpu-check when OUT is unset).
set -u
OUT=${OUT:-gpu-check}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"

# The plain curated presets; the world presets have scripts/gpu_worlds.sh. panorama (5M agents at
# 3840x2160) takes over 10 minutes on the CPU side: it is left out by default and was checked
# across machines instead (benchmarks/evidence/identical-2026-11-29.txt).
PRESETS=${PRESETS:-$(ls presets/*.yaml | grep -v -E '/(panorama|maze|lettering|feast|rivals|tribes|anywhere)\.yaml$')}
# CPU renders in the background (8 at a time, 2 threads each), while the GPU works
( printf '%s\n' $PRESETS | OMP_NUM_THREADS=2 xargs -P 8 -I{} python3 -m physarum.render.cli render {} \
    --backend torch --device cpu --out /tmp/cpu --quiet ) > "$OUT/cpu-renders.log" 2>&1 &
cpu_job=$!

for p in $PRESETS; do
  physarum render "$p" --backend triton --device cuda --out /tmp/gpu --quiet
done 2>&1 | tee "$OUT/gpu-renders.log"

# wait for the CPU renders, at most CPU_WAIT_S seconds (what is missing then is reported)
for _ in $(seq "${CPU_WAIT_S:-1200}"); do kill -0 $cpu_job 2>/dev/null || break; sleep 1; done
kill $cpu_job 2>/dev/null; pkill -f "device cpu" 2>/dev/null
echo "== byte-identical check: triton on $(nvidia-smi --query-gpu=name --format=csv,noheader) vs torch on the CPU" | tee "$OUT/identical.log"
for p in $PRESETS; do
  name=$(basename "$p" .yaml)
  for f in $(ls /tmp/gpu/$name/*.gif /tmp/gpu/$name/*.mp4 /tmp/gpu/$name/*.webp /tmp/gpu/$name/*.png 2>/dev/null); do
    verdict "$f" "/tmp/cpu/$name" | tee -a "$OUT/identical.log"
  done
done
# 3. the MP4 settings and the WebP: x264 (16 threads) and libwebp on this host's cores against the
# same renders on the 2-core CPU (benchmarks/evidence/formats-cpu-2core.txt holds its sha256)
echo "== output settings: quickstart's MP4 settings and WebP, GPU vs CPU here, sha256 for the 2-core CPU" | tee "$OUT/formats.log"
for setting in browser browser-sharp master; do
  for side in "triton cuda gpu" "torch cpu cpu"; do
    set -- $side
    python3 -m physarum.render.cli render quickstart --backend "$1" --device "$2" --quiet \
      --out "/tmp/formats-$3/$setting" --set 'output.formats=[mp4, webp]' --set "output.mp4=$setting"
  done > /dev/null 2>&1
  for f in /tmp/formats-gpu/$setting/quickstart/*.mp4 /tmp/formats-gpu/$setting/quickstart/*.webp; do
    echo "$setting $(verdict "$f" "/tmp/formats-cpu/$setting/quickstart") $(sha256sum < "$f" | cut -c1-64)"
  done | tee -a "$OUT/formats.log"
done
grep -h '"frames_s"\|"total_s"' /tmp/gpu/*/*.json | head -40 > "$OUT/gpu-timings.txt"
