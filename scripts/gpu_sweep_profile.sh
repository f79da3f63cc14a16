#!/usr/bin/env bash
# Where a batched sweep spends its time (run through the device tool, after scripts/gpu_env.sh):
# sweeps/bench64.yaml under cProfile (the main thread: simulation, colouring, hand-over), then
# the same sweep with PNG only and with GIF + PNG, timed, and one job's sidecar timings.
set -u
PROF=${PROF:-gpu-sweep-profile}; mkdir -p "$PROF"
only() {  # a copy of bench64 with other output formats
  sed "s/formats: \[gif, mp4, png\]/formats: [$1]/; s/^name: bench64/name: bench64-$2/" sweeps/bench64.yaml > "/tmp/bench64-$2.yaml"
}
t0=$SECONDS
python3 -m cProfile -o "$PROF/sweep.prof" -m physarum.render.cli sweep sweeps/bench64.yaml --devices cuda:0 \
  --out /tmp/sweep-profile --quiet
echo "full sweep under cProfile: $((SECONDS - t0)) s"
python3 - "$PROF/sweep.prof" <<'PY'
import pstats, sys
stats = pstats.Stats(sys.argv[1])
stats.sort_stats("tottime").print_stats(25)
stats.sort_stats("cumulative").print_stats(30)
PY
python3 -c "import json,glob; print(json.load(open(sorted(glob.glob('/tmp/sweep-profile/bench64/*/*.json'))[0]))['timings'])"
only png png; only "gif, png" gif
for v in png gif; do
  t0=$SECONDS
  python3 -m physarum.render.cli sweep "/tmp/bench64-$v.yaml" --devices cuda:0 --out /tmp/sweep-profile --quiet
  echo "bench64 with formats $v(+png): $((SECONDS - t0)) s"
done
