# Session 10 H200 final call: nebula/tangle loop variants (the chosen ones written as presets),
# the five 3D presets timed alone, full-size identity of the four 128^3 presets (CPU in the
# background), cosmos at --reduce 16 compared, 3D GPU tests, the renderer's bench, README GIF
set -u
cd "$(dirname "$0")/.."
S=$SECONDS
source scripts/gpu_env.sh > $OUT/env.txt 2>&1
mkdir -p $OUT/e/png
timeout 150 python3 .gpujob/variants.py $OUT/e /tmp/chosen > $OUT/e/variants.log 2>&1
echo "variants rc=$? at $((SECONDS-S)) s"; cat $OUT/e/seams.txt; cp /tmp/chosen/*.yaml $OUT/e/ 2>/dev/null
for p in /tmp/chosen/nebula.yaml /tmp/chosen/tangle.yaml cocoon coral cosmos; do
  [ $((SECONDS-S)) -lt 280 ] || break
  n=$(basename $p .yaml); s=$(date +%s.%N); timeout 100 python3 -m physarum.render.cli render $p --quiet --out /tmp/full > /tmp/r.log 2>&1; rc=$?; e=$(date +%s.%N)
  echo "$n rc=$rc wall=$(python3 -c "print(round($e-$s,1))") s $(ls -l /tmp/full/$n/ 2>/dev/null | awk '/s[0-9]+\.(gif|mp4|png)$/ {printf "%s=%.2fMB ", $9, $5/1e6}')" | tee -a $OUT/e/times.txt
  tail -2 /tmp/r.log >> $OUT/e/times.txt; cp /tmp/full/$n/*.png /tmp/full/$n/*.json $OUT/e/png/ 2>/dev/null
done
echo "timed renders at $((SECONDS-S)) s"
WAIT=$((500 - (SECONDS-S))); [ $WAIT -gt 330 ] && WAIT=330
( timeout $((WAIT+60)) python3 scripts/gpu_evidence.py check --parts renders --presets /tmp/chosen/nebula.yaml /tmp/chosen/tangle.yaml cocoon coral \
   --formats gif,png --cpu-jobs 4 --cpu-threads 4 --cpu-wait-s $WAIT --out $OUT/e/ident > $OUT/e/ident.log 2>&1 ) &
IDENT=$!
( for side in "triton cuda" "torch cpu"; do set -- $side
    timeout 150 python3 -m physarum.render.cli render cosmos --reduce 16 --backend $1 --device $2 --out /tmp/red-$1 --quiet > /dev/null 2>&1
  done
  for ext in gif mp4 png; do a=$(sha256sum /tmp/red-triton/cosmos/*.$ext | cut -c1-16); b=$(sha256sum /tmp/red-torch/cosmos/*.$ext | cut -c1-16)
    echo "cosmos reduce16 $ext triton/cuda $a torch/cpu $b $([ "$a" = "$b" ] && echo SAME || echo DIFFERENT)"; done > $OUT/e/cosmos-reduced.txt 2>&1 ) &
timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider --durations=5 tests/test_kernels_triton3d.py \
  tests/test_look_volume.py tests/test_look_volume_kernel.py tests/test_look_volume_look.py > $OUT/e/tests.txt 2>&1
echo "tests rc=$? at $((SECONDS-S)) s: $(tail -1 $OUT/e/tests.txt)"
/usr/bin/time -f "%e s wall" timeout 90 python3 -m physarum.render.cli render cosmos --out /tmp/readme --gif-max-bytes 6MB \
    --set camera.width=320 --set camera.height=320 --set run.steps=150 --set 'output.formats=[gif]' > $OUT/e/readme-gif.log 2>&1
echo "readme gif rc=$? at $((SECONDS-S)) s: $(tail -3 $OUT/e/readme-gif.log)"; cp /tmp/readme/cosmos/*.gif $OUT/e/cosmos-readme.gif
timeout 60 python3 scripts/bench_volume.py --device cuda --paths kernel --frames 5 --identity 0 --out $OUT/e/volume.json > $OUT/e/bench_volume.log 2>&1
echo "bench_volume rc=$? at $((SECONDS-S)) s"; cat $OUT/e/bench_volume.log
wait; cat $OUT/e/cosmos-reduced.txt; cat $OUT/e/ident/*identical.log; cat $OUT/e/ident/*times.log
cd $OUT && tar czf e.tgz e 2>/dev/null; rm -rf e; echo "all done at $((SECONDS-S)) s"
