#!/usr/bin/env bash
# Exactness evidence on a GPU machine (run through the device tool; see docs/benchmarks.md):
#   1. GPU tests: Triton on CUDA and the reference on CUDA against the reference on the CPU;
#   2. every curated preset rendered with --backend triton on the GPU and with --backend torch
#      on the CPU (in the background, at the same time), files compared byte for byte;
#   3. `physarum profile` of both backends.
# Writes its logs to $OUT (or ./gpu-check when OUT is unset).
set -u
OUT=${OUT:-gpu-check}; mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD/.pyroot
fi
# The package maps render/ and kernels/ to physarum.*; a link tree stands in for an install.
mkdir -p .pyroot/physarum && ln -sfn "$PWD/render" .pyroot/physarum/render && ln -sfn "$PWD/kernels" .pyroot/physarum/kernels
export PYTHONPATH=${PYTHONPATH:-$PWD/.pyroot}
export PYTHONUNBUFFERED=1
physarum() { python3 -m physarum.render.cli "$@"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" | tee -a "$OUT/gpu.txt"

PRESETS=${PRESETS:-$(ls presets/*.yaml)}
# CPU renders in the background, while the GPU works
( for p in $PRESETS; do physarum render "$p" --backend torch --device cpu --out /tmp/cpu --quiet; done ) > "$OUT/cpu-renders.log" 2>&1 &
cpu_job=$!

python3 -m pytest -q tests/test_gpu.py 2>&1 | tail -15 | tee "$OUT/gpu-tests.log"
for p in $PRESETS; do
  physarum render "$p" --backend triton --device cuda --out /tmp/gpu --quiet
done 2>&1 | tee "$OUT/gpu-renders.log"
profile_preset=${PROFILE_PRESET:-presets/veins.yaml}
physarum profile "$profile_preset" --backend triton --steps 50 --trace "$OUT/triton.trace.json" 2>&1 | tee "$OUT/profile.log"
physarum profile "$profile_preset" --backend torch --device cuda --steps 10 --trace /tmp/torch.trace.json 2>&1 | tee -a "$OUT/profile.log"

wait $cpu_job
echo "== byte-identical check: triton on $(nvidia-smi --query-gpu=name --format=csv,noheader) vs torch on the CPU" | tee "$OUT/identical.log"
for p in $PRESETS; do
  name=$(basename "$p" .yaml)
  for f in /tmp/gpu/$name/*.gif /tmp/gpu/$name/*.mp4 /tmp/gpu/$name/*.png; do
    other=/tmp/cpu/$name/$(basename "$f")
    if cmp -s "$f" "$other"; then verdict=identical; else verdict=DIFFERENT; fi
    echo "$verdict $(basename "$f") $(stat -c %s "$f") $(sha256sum < "$f" | cut -c1-16)" | tee -a "$OUT/identical.log"
  done
done
grep -h '"simulate_s"\|"total_s"' /tmp/gpu/*/*.json | head -40 > "$OUT/gpu-timings.txt"
