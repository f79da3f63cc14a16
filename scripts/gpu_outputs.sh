#!/usr/bin/env bash
# Output-stage evidence on the GPU host (issue 16; run through the device tool, docs/benchmarks.md):
#   1. every curated preset but panorama: time to each file, split into simulation, colouring and
#      encoders, and each file's size (scripts/bench_outputs.py --label h200);
#   2. labyrinth and panorama: the same, plus MP4-only renders with output version 2's x264
#      threading (4 sliced threads) and this version's (16 frame threads): the MP4 goals;
#   3. GIF encoding, serial against parallel, and budgeted against unbudgeted renders, on
#      labyrinth's own frames (scripts/bench_gif.py).
# STEPS selects some (default "1 2 3"); results land in benchmarks/ and are copied to $OUT.
set -u
OUT=${OUT:-gpu-outputs}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
nproc | sed 's/^/cores: /'
STEPS=${STEPS:-1 2 3}
for step in $STEPS; do
  case $step in
    1) PRESETS=$(ls presets/*.yaml | xargs -n1 basename | sed 's/\.yaml$//' | grep -v '^panorama$')
       timeout "${STEP_S:-280}" python3 scripts/bench_outputs.py --label h200 --presets $PRESETS ;;
    2) timeout "${STEP_S:-420}" python3 scripts/bench_outputs.py --label h200-mp4-threads \
         --presets labyrinth panorama --x264 4:slice 16:frame ;;
    3) timeout "${STEP_S:-200}" python3 scripts/bench_gif.py labyrinth --renders \
         --out benchmarks/gif-h200-labyrinth.json ;;
  esac 2>&1 | tee "$OUT/step$step.log"
done
mkdir -p "$OUT/benchmarks"
cp -r benchmarks/outputs benchmarks/gif-h200-*.json "$OUT/benchmarks/" 2>/dev/null
cp benchmarks/figures/outputs-h200*.png "$OUT/benchmarks/" 2>/dev/null
exit 0
