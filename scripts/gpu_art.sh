#!/usr/bin/env bash
# The animation presets (issue 17 item 5: journey, tide, compass, crowd) on a GPU machine, in one
# device call (run through the device tool, like gpu_check.sh):
#   1. each preset rendered at full size with --backend triton on CUDA, one after another, to all
#      its formats (GIF, MP4, PNG, sidecar) in /tmp/agpu, timed, after an untimed warm-up render
#      that compiles the kernels; the GPU's PNG stills and sidecars are copied to $OUT/stills;
#   2. then the same presets, unchanged (full size, all formats), with --backend torch on the CPU,
#      all four at once with 4 threads each, in /tmp/acpu. They start after the timed GPU renders
#      (gpu_check.sh runs the two side by side) so that the GPU times, which go into the README,
#      are not slowed by sixteen busy CPU threads and their encoders;
#   3. every GPU file compared byte for byte with its CPU twin (verdict): $OUT/identical.log.
# $OUT/times.log: each preset's GPU render seconds (wall, and the sidecar's total_s) and each
# file's size; $OUT/cpu-times.log: each CPU render's seconds.
# Expected time: about 4 minutes. On the 2-core development machine (one torch thread, the other
# core for the encoders) the four full CPU renders took compass 81 s, crowd 154 s, tide 154 s and
# journey 193 s; on the 16-core host with 4 threads each they should take 2 to 3 minutes side by
# side. The GPU part is about a minute (start, warm-up, four renders of a few seconds each).
# CPU_WAIT_S (default 330) bounds the wait for the CPU renders, so the script ends within about 7
# minutes whatever happens; what is missing then is reported as NOT-RENDERED-ON-CPU.
# Writes its logs to $OUT (or ./gpu-art when OUT is unset).
set -u
OUT=${OUT:-gpu-art}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
PRESETS=${PRESETS:-journey tide compass crowd}

# warm-up: compile the Triton kernels (one species, wrapping edges, as in all four) untimed
physarum render quickstart --backend triton --device cuda --out /tmp/awarm --quiet \
  --set run.steps=20 --set run.steps_per_frame=10 > /dev/null 2>&1
echo "== GPU renders: triton on $(nvidia-smi --query-gpu=name --format=csv,noheader), full size, all formats" | tee "$OUT/times.log"
for p in $PRESETS; do
  t0=$(date +%s.%N)
  physarum render "$p" --backend triton --device cuda --out /tmp/agpu --quiet >> "$OUT/gpu-renders.log" 2>&1
  t1=$(date +%s.%N)
  total=$(python3 -c "import json,glob; print(json.load(open(glob.glob('/tmp/agpu/$p/$p-s*.json')[0]))['timings']['total_s'])" 2>/dev/null)
  echo "$p: $(python3 -c "print(round($t1 - $t0, 1))") s wall, ${total:-?} s total_s" | tee -a "$OUT/times.log"
done
echo "== file sizes (GPU), bytes" | tee -a "$OUT/times.log"
for p in $PRESETS; do
  for f in /tmp/agpu/$p/*; do echo "$(basename "$f") $(stat -c %s "$f")"; done
done | tee -a "$OUT/times.log"
mkdir -p "$OUT/stills" && cp /tmp/agpu/*/*.png /tmp/agpu/*/*.json "$OUT/stills/" 2>/dev/null

# CPU renders, all at once with 4 threads each, in a process group of their own so that they can
# be stopped together; each one's seconds to cpu-times.log
cpu_render() {
  local t0=$SECONDS
  OMP_NUM_THREADS=4 python3 -m physarum.render.cli render "$1" --backend torch --device cpu --out /tmp/acpu --quiet \
    && echo "$1: $((SECONDS - t0)) s" >> "$OUT/cpu-times.log"
}
export -f cpu_render; export OUT
setsid bash -c 'for p in $0; do cpu_render "$p" & done; wait' "$PRESETS" > "$OUT/cpu-renders.log" 2>&1 &
cpu_job=$!

# wait for the CPU renders, at most CPU_WAIT_S seconds (what is missing then is reported)
for _ in $(seq "${CPU_WAIT_S:-330}"); do kill -0 $cpu_job 2>/dev/null || break; sleep 1; done
kill -- -"$cpu_job" 2>/dev/null
cat "$OUT/cpu-times.log" 2>/dev/null
echo "== byte-identical check: triton on $(nvidia-smi --query-gpu=name --format=csv,noheader) vs torch on the CPU (full size, all formats)" | tee "$OUT/identical.log"
for p in $PRESETS; do
  for f in $(ls /tmp/agpu/$p/*.gif /tmp/agpu/$p/*.mp4 /tmp/agpu/$p/*.png 2>/dev/null); do
    verdict "$f" "/tmp/acpu/$p" | tee -a "$OUT/identical.log"
  done
done
