# Session 10 H200 call A: 3D identity at full size (+2 2D presets after count_cell), GPU tests,
# the renderer's bench, loop variants of nebula/tangle, 512^3 candidate stills
set -u
cd "$(dirname "$0")/.."
S=$SECONDS
source scripts/gpu_env.sh > $OUT/env.txt 2>&1
( timeout 540 python3 scripts/gpu_evidence.py check --parts renders --presets 3d quickstart rivals \
    --formats gif,png --cpu-jobs 4 --cpu-threads 4 --cpu-wait-s 420 --out $OUT/ident > $OUT/ident.log 2>&1; echo "ident rc=$? at $((SECONDS-S)) s" >> $OUT/ident.log ) &
IDENT=$!
timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_kernels_gpu.py tests/test_kernels_triton3d.py \
  tests/test_look_volume.py tests/test_look_volume_kernel.py tests/test_look_volume_look.py > $OUT/tests.txt 2>&1
echo "tests rc=$? at $((SECONDS-S)) s: $(tail -1 $OUT/tests.txt)"
timeout 90 python3 scripts/bench_volume.py --device cuda --paths kernel --frames 3 --identity 128 --out $OUT/volume.json > $OUT/bench_volume.log 2>&1
echo "bench_volume rc=$? at $((SECONDS-S)) s"; tail -12 $OUT/bench_volume.log
timeout 150 python3 .gpujob/variants.py $OUT/var loops > $OUT/var-loops.log 2>&1
echo "loops rc=$? at $((SECONDS-S)) s"
timeout 60 python3 scripts/loop_seams.py /tmp/variants/*/*/*.gif > $OUT/seams.txt 2>&1; cat $OUT/seams.txt
timeout 110 python3 .gpujob/variants.py $OUT/var stills > $OUT/var-stills.log 2>&1
echo "stills rc=$? at $((SECONDS-S)) s"; cat $OUT/var-stills.log | tail -8
wait $IDENT; tail -3 $OUT/ident.log; cat $OUT/ident/*identical.log 2>/dev/null | tail -20; cat $OUT/ident/*times.log | tail -20
cd $OUT && tar czf a.tgz ident var *.log *.txt *.json 2>/dev/null; rm -rf ident var; echo "all done at $((SECONDS-S)) s"
