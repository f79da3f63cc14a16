#!/usr/bin/env bash
# Checkpoint evidence on a GPU machine (run through the device tool, like gpu_check.sh), one call.
# For each preset of PRESETS (default quickstart and rivals, two species on a world):
#   1. an uninterrupted render with --backend triton on the GPU, checkpoints at MID and END
#      (END = warmup + steps, the final state), raw fields at END;
#   2. a resume of its MID checkpoint on the GPU (triton): its END checkpoint, PNG still and
#      fields must be byte for byte the uninterrupted render's;
#   3. the same resume with --backend torch on the GPU (CUDA), compared the same way;
#   4. with CPU_RESUME=1, the same resume with --backend torch on the CPU, compared the same way
#      (the lead also resumes $OUT/checkpoints/*-checkpoint-MID.npz on another machine's CPU);
#   5. a branch (--set model.decay=0.2) of the MID checkpoint, which must differ.
# BACKEND, DEVICE and RUNS choose other backends (BACKEND=torch DEVICE=cpu RUNS=torch:cpu tries
# the script on a CPU). Every comparison is one line: identical or DIFFERENT, the file, its size
# and sha256 prefix.
# The GPU's checkpoints are kept in $OUT/checkpoints; sizes and times in $OUT/checkpoint.log; the
# comparisons in $OUT/identical.log. The evidence is kept in benchmarks/checkpoint/ (docs/checkpoints.md).
set -u
WORK=${WORK:-/tmp/physarum-checkpoint}; rm -rf "$WORK"
OUT=${OUT:-gpu-checkpoint}; mkdir -p "$OUT/checkpoints"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
PRESETS=${PRESETS:-"quickstart presets/rivals.yaml"}
FORMATS='output.formats=[png]'
BACKEND=${BACKEND:-triton}; DEVICE=${DEVICE:-cuda}  # of the uninterrupted render and the branch
RUNS=${RUNS:-"triton:cuda torch:cuda"}  # backend:device of each resume
[ "${CPU_RESUME:-0}" = 1 ] && RUNS="$RUNS torch:cpu"

compare() {  # compare FOLDER_A FOLDER_B STEM END: the END checkpoint, the PNG still and the fields
  local name
  for name in "$3-checkpoint-$4.npz" "$3.png" "$3-fields-$4.npz"; do
    verdict "$1/$name" "$2"
  done
}

for preset in $PRESETS; do
  name=$(basename "$preset" .yaml)
  read -r stem end <<< "$(python3 -c "
from physarum.render.preset.catalog import resolve_preset_path
from physarum.render.preset import load_preset
p = load_preset(resolve_preset_path('$preset'))
print(f'{p.name}-s{p.seed}', p.end_step)")"
  mid=$(( end / 2 + 1 ))  # off the frame grid: a checkpoint between two frames
  echo "== $name: $stem, checkpoint at $mid, end $end" | tee -a "$OUT/checkpoint.log"
  t0=$SECONDS
  physarum render "$preset" --backend "$BACKEND" --device "$DEVICE" --out $WORK/whole --quiet --set "$FORMATS" \
    --checkpoint-at "$mid,$end" --fields-at "$end" 2>&1 | tail -n 3
  echo "   uninterrupted ($BACKEND, $DEVICE): $((SECONDS - t0)) s" | tee -a "$OUT/checkpoint.log"
  whole=$WORK/whole/$name
  cp "$whole/$stem-checkpoint-$mid.npz" "$whole/$stem-checkpoint-$end.npz" "$OUT/checkpoints/"
  ls -l "$whole"/*checkpoint* | awk '{print "   " $5 " bytes " $9}' | tee -a "$OUT/checkpoint.log"
  start="$whole/$stem-checkpoint-$mid.npz"
  for run in $RUNS; do
    backend=${run%%:*}; device=${run##*:}
    t0=$SECONDS
    physarum render --resume "$start" --backend "$backend" --device "$device" --out "$WORK/$run" \
      --quiet --checkpoint-at "$end" --fields-at "$end" 2>&1 | tail -n 3
    echo "   resumed at $mid on $backend ($device): $((SECONDS - t0)) s" | tee -a "$OUT/checkpoint.log"
    compare "$WORK/$run/$name" "$whole" "$stem" "$end" | sed "s/^/   $run vs uninterrupted: /" \
      | tee -a "$OUT/identical.log"
  done
  physarum render --resume "$start" --backend "$BACKEND" --device "$DEVICE" --out $WORK/branch --quiet \
    --set model.decay=0.2 --checkpoint-at "$end" 2>&1 | tail -n 3
  verdict "$WORK/branch/$name/$stem-checkpoint-$end.npz" "$whole" \
    | sed "s/^/   branch decay=0.2 (must be DIFFERENT): /" | tee -a "$OUT/identical.log"
done
echo "== summary: $(grep -c ' identical ' "$OUT/identical.log") identical, $(grep -c DIFFERENT "$OUT/identical.log") DIFFERENT (the branches' should be)"
