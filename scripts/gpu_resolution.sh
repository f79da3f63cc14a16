#!/usr/bin/env bash
# Resolution independence on a GPU (run through the device tool, after scripts/gpu_env.sh):
# presets/anywhere.yaml and variants of its model at 512x512, 1024x1024, 2048x2048 and
# 3840x2160, each with scripts/resolution_check.py (dominant wavelength as a fraction of the
# short side, 10 late checkpoints). Writes JSON and contact sheets to $RES (or ./gpu-resolution).
set -u
RES=${RES:-gpu-resolution}; mkdir -p "$RES"
SIZES=${SIZES:-512x512 1024x1024 2048x2048 3840x2160}
variant() {  # NAME KEY=VALUE...
  local name=$1; shift; local sets=(); for s in "$@"; do sets+=(--set "$s"); done
  echo "== $name: $*"
  timeout "${VARIANT_TIMEOUT_S:-120}" python3 scripts/resolution_check.py presets/anywhere.yaml --sizes $SIZES \
    --checkpoints 10 --seeds "${SEEDS:-1}" "${sets[@]}" --out "$RES/$name.json" --figure "$RES/$name.png"
}
variant as-written
variant slow model.decay=0.02 model.sensor_distance=0.03 model.step_size=0.002
variant slow-b model.decay=0.03 model.sensor_distance=0.025 model.step_size=0.002
variant mid model.decay=0.03 model.sensor_distance=0.02 model.step_size=0.0015
variant slow-d model.decay=0.015 model.sensor_distance=0.04 model.step_size=0.003
variant slow-e model.decay=0.015 model.sensor_distance=0.04 model.step_size=0.003 model.sensor_angle=45
