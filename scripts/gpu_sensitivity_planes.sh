#!/usr/bin/env bash
# The part of scripts/gpu_sensitivity.sh whose files the README and the closing note use: the
# two quickstart planes (16 x 16 points, 4 twins each), quickstart's 1500-step twins, and the
# cost of --stats; every CSV, PNG and JSON into $SENS (or ./gpu-sensitivity-planes).
set -u
SENS=${SENS:-gpu-sensitivity-planes}; mkdir -p "$SENS"
physarum() { python3 -m physarum.render.cli "$@"; }  # as scripts/gpu_env.sh defines it
step() { echo "== physarum $*"; local t0=$SECONDS rc; physarum "$@"; rc=$?; echo "   ($((SECONDS - t0)) s, exit $rc)"; }
step sensitivity quickstart --steps 1500 --quiet --out "$SENS"
step sensitivity quickstart --steps 300 --quiet --out "$SENS" --plane model.deposit=1:10:16 model.decay=0.01:0.3:16
step sensitivity quickstart --steps 300 --quiet --out "$SENS" --plane model.turn_angle=0:90:16 model.decay=0.01:0.3:16
for p in ${PRESETS:-starburst veins}; do step sensitivity "$p" --quiet --out "$SENS"; done
step render quickstart --quiet --out /tmp/render-plain
step render quickstart --quiet --out /tmp/render-stats --stats
cp /tmp/render-stats/quickstart/quickstart-s1.stats.csv "$SENS/"
for f in gif mp4 png; do cmp -s /tmp/render-plain/quickstart/quickstart-s1.$f \
  /tmp/render-stats/quickstart/quickstart-s1.$f && echo "identical with --stats: $f"; done
grep -h total_s /tmp/render-plain/quickstart/*.json /tmp/render-stats/quickstart/*.json
