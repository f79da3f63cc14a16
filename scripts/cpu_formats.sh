#!/usr/bin/env bash
# The 2-core CPU's side of scripts/gpu_evidence.py check's formats part and of its quickstart renders: quickstart
# rendered with torch on the CPU in each MP4 setting with a WebP, and once with its own formats;
# the sha256 of every file into benchmarks/unreleased/formats-cpu-2core.txt (0.3.0's: benchmarks/0.3.0/outputs.txt),
# for the GPU host's
# renders to be compared with (docs/benchmarks.md).
set -eu
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
out=$(mktemp -d)
mkdir -p benchmarks/unreleased
evidence=benchmarks/unreleased/formats-cpu-2core.txt
{
  echo "# scripts/cpu_formats.sh on $(nproc) cores (torch, --device cpu), $(date -u +%F)"
  $PY -c "import av, PIL, PIL.features as f; print('# PyAV', av.__version__, 'Pillow', PIL.__version__, 'libwebp', f.version('webp'))"
  for setting in browser browser-sharp master; do
    $PY -m physarum.render.cli render quickstart --backend torch --device cpu --quiet \
      --out "$out/$setting" --set 'output.formats=[mp4, webp]' --set "output.mp4=$setting" > /dev/null
    for f in "$out/$setting"/quickstart/*.mp4 "$out/$setting"/quickstart/*.webp; do
      echo "$setting $(basename "$f") $(stat -c %s "$f") $(sha256sum < "$f" | cut -c1-64)"
    done
  done
  $PY -m physarum.render.cli render quickstart --backend torch --device cpu --quiet --out "$out/own" > /dev/null
  for f in "$out"/own/quickstart/*.gif "$out"/own/quickstart/*.mp4 "$out"/own/quickstart/*.png; do
    echo "own $(basename "$f") $(stat -c %s "$f") $(sha256sum < "$f" | cut -c1-64)"
  done
} > "$evidence"
cat "$evidence"
rm -rf "$out"
