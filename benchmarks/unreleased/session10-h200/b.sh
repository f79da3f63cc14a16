# Session 10 H200 call B: cosmos (512^3, 600 frames) timed alone, warm and cold; 3D GPU tests;
# loop variants of nebula/tangle at full size; cosmos's README GIF (phone budget)
set -u
cd "$(dirname "$0")/.."
S=$SECONDS
source scripts/gpu_env.sh > $OUT/env.txt 2>&1
mkdir -p $OUT/cosmos
T() { /usr/bin/time -f "%e s wall, %M KB peak RSS" "$@"; }
T timeout 100 python3 -m physarum.render.cli render cosmos --out /tmp/warm --set run.steps=30 --set run.warmup=10 > $OUT/cosmos/cold.log 2>&1
echo "cold 30-step cosmos rc=$? at $((SECONDS-S)) s: $(tail -1 $OUT/cosmos/cold.log)"
T timeout 170 python3 -m physarum.render.cli render cosmos --out /tmp/cosmos > $OUT/cosmos/full.log 2>&1
echo "cosmos full rc=$? at $((SECONDS-S)) s: $(tail -1 $OUT/cosmos/full.log)"; ls -l /tmp/cosmos/cosmos/ | tee $OUT/cosmos/ls.txt
cp /tmp/cosmos/cosmos/*.png /tmp/cosmos/cosmos/*.json $OUT/cosmos/ 2>/dev/null
nvidia-smi --query-gpu=memory.used --format=csv >> $OUT/cosmos/ls.txt
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --durations=8 tests/test_kernels_triton3d.py \
  tests/test_look_volume.py tests/test_look_volume_kernel.py tests/test_look_volume_look.py > $OUT/tests.txt 2>&1
echo "tests rc=$? at $((SECONDS-S)) s: $(tail -1 $OUT/tests.txt)"
timeout 130 python3 .gpujob/variants.py $OUT/var loops > $OUT/var-loops.log 2>&1
echo "loops rc=$? at $((SECONDS-S)) s"
timeout 40 python3 scripts/loop_seams.py /tmp/variants/*/*/*.gif > $OUT/seams.txt 2>&1; cat $OUT/seams.txt
T timeout 110 python3 -m physarum.render.cli render cosmos --out /tmp/phone --gif-target phone --set 'output.formats=[gif]' > $OUT/cosmos/phone.log 2>&1
echo "phone rc=$? at $((SECONDS-S)) s: $(tail -2 $OUT/cosmos/phone.log)"; cp /tmp/phone/cosmos/*.gif $OUT/cosmos/phone.gif
cd $OUT && tar czf b.tgz cosmos var *.log *.txt 2>/dev/null; rm -rf var; echo "all done at $((SECONDS-S)) s"
