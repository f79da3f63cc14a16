#!/usr/bin/env bash
# `physarum graph` of the curated presets at their full sizes, on a GPU host (docs/graph.md 6).
# It made the figures in docs/figures/graph-*.png and the CSVs in benchmarks/graph/, at the
# presets' own canvases and agent counts: OUT/<preset>/<preset>-s<seed>-graph*.
# Usage: scripts/gpu_graphs.sh [PRESET ...]; results go to $OUT (default gpu-graphs). The skeleton
# and graph run on the host (numpy, scikit-image, one core): on the H200 host, 0.2 to 1.4 s a
# step at 1024x1024 and 1.5 to 4 s at 3840x2160; ten steps a preset, so panorama (4K) takes about
# 36 s and the others 13 to 19 s (docs/graph.md 6); the simulation is a small part of that.
# JOBS presets run at once (default 4).
set -u
OUT=${OUT:-gpu-graphs}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
# scikit-image, scipy and networkx must be importable there: carry their wheels in .whl if the
# machine's image lacks them (pip download scikit-image networkx scipy lazy-loader imageio
# tifffile -d .whl --only-binary :all:, on a host with the same Python)
python3 -c "import skimage, scipy, networkx" || { echo "graph: scikit-image, scipy and networkx are needed" >&2; exit 2; }
PRESETS=${*:-quickstart filaments cells veins anywhere spots labyrinth mosaic panorama}
# every file goes to $WORK (the per-step GraphML of a 4K preset runs to tens of MB); the
# statistics CSVs and figures, and each preset's last GraphML, are copied to $OUT as they are made
WORK=${WORK:-/tmp/gpu-graphs}; mkdir -p "$WORK"
one() {  # one preset's graph, its log in $OUT
  local preset=$1 t0=$SECONDS folder last
  physarum graph "$preset" --out "$WORK" > "$OUT/$preset.log" 2>&1
  echo "   ($((SECONDS - t0)) s, exit $?)" >> "$OUT/$preset.log"
  for folder in "$WORK/$preset"/*-graph; do
    [ -d "$folder" ] || continue
    cp "$folder.csv" "$folder.png" "$OUT/" 2>/dev/null
    last=$(ls "$folder"/*.graphml | tail -n 1); cp "$last" "$OUT/$(basename "$folder")-$(basename "$last")"
    du -sh "$folder" >> "$OUT/$preset.log"
  done
  echo "== physarum graph $preset"; cat "$OUT/$preset.log"
}
# the host's skeleton and graph work is one core's per preset: JOBS presets at a time (default 4)
running=0
for preset in $PRESETS; do
  one "$preset" &
  running=$((running + 1))
  if [ "$running" -ge "${JOBS:-4}" ]; then wait -n; running=$((running - 1)); fi
done
wait
ls -la "$OUT"
