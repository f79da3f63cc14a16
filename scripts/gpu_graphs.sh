#!/usr/bin/env bash
# `physarum graph` of the curated presets at their full sizes, on a GPU host (docs/graph.md 6).
# The figures in docs/figures/graph-*.png are reduced CPU runs (docs/graph.md says which); this
# makes the same at the presets' own canvases and agent counts: OUT/<preset>/<preset>-s<seed>-graph*.
# Usage: scripts/gpu_graphs.sh [PRESET ...]; results go to $OUT (default gpu-graphs). The skeleton
# and graph run on the host (numpy, scikit-image): about 1 s a step at 1024x1024 and 10 s at 4K
# with 2 cores; the simulation itself is a small part of that on an H200.
set -u
OUT=${OUT:-gpu-graphs}; mkdir -p "$OUT"
source scripts/gpu_env.sh > "$OUT/gpu.txt" 2>&1; cat "$OUT/gpu.txt"
# scikit-image, scipy and networkx must be importable there: carry their wheels in .whl if the
# machine's image lacks them (pip download scikit-image networkx scipy lazy-loader imageio
# tifffile -d .whl --only-binary :all:, on a host with the same Python)
python3 -c "import skimage, scipy, networkx" || { echo "graph: scikit-image, scipy and networkx are needed" >&2; exit 2; }
PRESETS=${*:-quickstart filaments cells veins anywhere spots}
for preset in $PRESETS; do
  echo "== $preset"
  /usr/bin/time -f "$preset: %e s, %M KiB" physarum graph "$preset" --out "$OUT" 2>&1 | tee "$OUT/$preset.log"
done
ls -la "$OUT"/*/*.png
