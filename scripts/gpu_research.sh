#!/usr/bin/env bash
# Issue 18's evidence in one device call: the checkpoint evidence (scripts/gpu_checkpoint.sh,
# CPU resumes included) beside the full-size graphs of the curated presets (scripts/gpu_graphs.sh),
# the two at once (the graphs are host work, one core a preset). What comes back, under $OUT
# (at most 8 files): checkpoint.log, identical.log, the GPU's checkpoints under 16 MB (to resume
# on another machine's CPU), research.tar.gz (the runs' logs; each preset's graph statistics
# CSV, figure, log and last GraphML, panorama's GraphML left out for its size).
set -u
OUT=${OUT:-gpu-research}; mkdir -p "$OUT"
CPU_RESUME=1 OUT=/tmp/research/checkpoint bash scripts/gpu_checkpoint.sh > /tmp/checkpoint-run.log 2>&1 &
OUT=/tmp/research/graphs JOBS=${JOBS:-5} bash scripts/gpu_graphs.sh > /tmp/graphs-run.log 2>&1
wait
mv /tmp/checkpoint-run.log /tmp/graphs-run.log /tmp/research/
cp /tmp/research/checkpoint/checkpoint.log /tmp/research/checkpoint/identical.log "$OUT/"
find /tmp/research/checkpoint/checkpoints -name '*.npz' -size -16000000c | head -n 5 | xargs -r cp -t "$OUT/"
rm -f /tmp/research/graphs/*panorama*.graphml
tar czf "$OUT/research.tar.gz" -C /tmp research/graphs research/checkpoint-run.log research/graphs-run.log
ls -la "$OUT"; cat "$OUT/checkpoint.log" "$OUT/identical.log"
