#!/usr/bin/env bash
# Sensitivity evidence on a GPU machine (run through the device tool, like gpu_check.sh):
#   1. quickstart twins for 200 steps (the same numbers as on the CPU: the runs are exact;
#      SHORT_TWINS=0 leaves them out) and for 1500 steps (to the plateau);
#   2. two parameter planes of quickstart, 16 x 16 points with 4 twins each, batched;
#   3. each of $PRESETS (default: every curated 1024x1024 preset) twinned over its own run length;
#   4. quickstart rendered with and without --stats (the cost of per-step statistics).
# Every CSV, PNG and JSON goes to $OUT/results as it is written, so a step cut by a timeout keeps
# the files of the steps before it; logs and a tarball of the results go to $OUT (or
# ./gpu-sensitivity).
set -u
OUT=${OUT:-gpu-sensitivity}; R=$OUT/results; mkdir -p "$R"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
step() { echo "== physarum $*"; local t0=$SECONDS rc; physarum "$@"; rc=$?; echo "   ($((SECONDS - t0)) s, exit $rc)"; }
{
  [ "${SHORT_TWINS:-1}" = 0 ] || step sensitivity quickstart --steps 200 --quiet --out "$R/quickstart-200"
  step sensitivity quickstart --steps 1500 --quiet --out "$R"
  step sensitivity quickstart --steps 300 --quiet --out "$R" --plane model.deposit=1:10:16 model.decay=0.01:0.3:16
  step sensitivity quickstart --steps 300 --quiet --out "$R" --plane model.turn_angle=0:90:16 model.decay=0.01:0.3:16
  for p in ${PRESETS:-aurora bloom cave cells filaments labyrinth mosaic rings spots starburst veins}; do
    step sensitivity "$p" --quiet --out "$R"
  done
  step render quickstart --quiet --out /tmp/render-plain
  step render quickstart --quiet --out /tmp/render-stats --stats
  cp /tmp/render-stats/quickstart/quickstart-s1.stats.csv "$R/"
  for f in gif mp4 png; do cmp -s /tmp/render-plain/quickstart/quickstart-s1.$f \
    /tmp/render-stats/quickstart/quickstart-s1.$f && echo "identical with --stats: $f"; done
  grep -h total_s /tmp/render-plain/quickstart/*.json /tmp/render-stats/quickstart/*.json
} 2>&1 | tee "$OUT/sensitivity.log"
tar czf "$OUT/sensitivity.tgz" -C "$R" .
