#!/usr/bin/env bash
# The HDR look's GPU evidence (issue 26 item 1), on the H200 host, from the repository root:
#   bash scripts/gpu_look.sh [OUT]        (about 3-4 minutes; OUT defaults to /tmp/look-evidence)
# 1. tests/test_look_hdr.py: CPU and CUDA index frames of five looks (-m gpu), and a look preset's
#    GIF and PNG the same bytes from Triton on CUDA and torch on the CPU;
# 2. the harness's case look: colouring ms/frame, flat against the look, 1024^2 and 3840x2160
#    (rows in OUT/table-MACHINE.csv);
# 3. the four look presets at full size on the GPU (wall time each, the files' sha256), and each
#    reduced 8x on the CPU (torch) and on the GPU (Triton): the same GIF and PNG bytes.
set -euo pipefail
OUT=${1:-/tmp/look-evidence}
mkdir -p "$OUT"
source scripts/gpu_env.sh > /dev/null
python3 -m pytest tests/test_look_hdr.py tests/test_preset_look_section.py -q -p no:cacheprovider 2>&1 | tail -3
python3 -m physarum.render.tools.harness --out "$OUT" case look --device cuda
python3 -m physarum.render.tools.harness --out "$OUT" --repeats 3 case look --device cpu
for preset in veins-glow aurora-night filaments-static embers; do
  TIMEFORMAT="$preset full size on the GPU: %R s (process wall)"
  time physarum render "$preset" --quiet --out "$OUT/full" > /dev/null
  for where in "torch cpu" "triton cuda"; do
    set -- $where
    physarum render "$preset" --quiet --reduce 8 --backend "$1" --device "$2" \
      --set 'output.formats=[gif,png]' --out "$OUT/reduced-$1" > /dev/null
  done
  for ext in gif png; do
    a=$(sha256sum "$OUT/reduced-torch/$preset/"*."$ext" | cut -c1-16)
    b=$(sha256sum "$OUT/reduced-triton/$preset/"*."$ext" | cut -c1-16)
    echo "$preset reduced $ext: torch/cpu $a triton/cuda $b $([ "$a" = "$b" ] && echo SAME || echo DIFFERENT)"
  done
done
sha256sum "$OUT"/full/*/*.png
