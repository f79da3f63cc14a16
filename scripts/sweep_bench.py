"""Sweep timings (issue: sweeps): a batched sweep against separate renders of its jobs.

    python3 scripts/sweep_bench.py [--alone 16] [--two-gpus] [--out sweeps.json]

1. sweeps/bench64.yaml (64 jobs of 256x256, 65,536 agents, 600 steps, GIF + MP4 + PNG) as one
   batched sweep on cuda:0;
2. --alone of its jobs as separate `physarum render --from` processes, each timed, their files
   compared byte for byte with the sweep's; the time of all 64 is extrapolated from their mean
   (and reported as extrapolated) when fewer than 64 run;
3. with --two-gpus (kind nvidia-h200-x2): each of --two-gpu-sweeps (bench128: encoder-bound;
   bench128-long: GPU-bound) on cuda:0, then on all GPUs.
Run where `python3 -m physarum.render.cli` works (scripts/gpu_env.sh on the GPU machine).
"""

from __future__ import annotations

import argparse
import filecmp
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from sweep_timeline import batches, describe  # scripts/ is on the path of a script run from it

CLI = [sys.executable, "-m", "physarum.render.cli"]


def timed(*args: str) -> float:
    began = time.perf_counter()
    subprocess.run([*CLI, *args, "--quiet"], check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


def batched_against_alone(args, work: Path) -> dict:
    """The sweep in one batch against --alone of its jobs rendered one process each."""
    report: dict = {
        "sweep": args.sweep,
        "devices": args.devices,
        "sweep_s": timed("sweep", args.sweep, "--out", str(work / "sweep"), "--devices", args.devices),
    }
    every = sorted((work / "sweep").glob("*/*/*.json"))
    print(f"sweep of {len(every)} jobs on {args.devices}: {report['sweep_s']:.1f} s", flush=True)
    alone, identical, different = [], 0, []
    for sidecar in every[: args.alone]:
        device = [] if args.devices == "cuda:0" else ["--device", args.devices]
        alone.append(timed("render", "--from", str(sidecar), "--out", str(work / "alone"), *device))
        for produced in sidecar.parent.glob("*.*"):
            if produced.suffix not in (".gif", ".mp4", ".png"):
                continue
            twin = next((work / "alone").glob(f"*/{produced.name}"), None)
            if twin is not None and filecmp.cmp(produced, twin, shallow=False):
                identical += 1
            else:
                different.append(produced.name)
    mean, total = sum(alone) / len(alone), len(every)
    report.update(
        jobs=total,
        alone_n=len(alone),
        alone_s=alone,
        alone_mean_s=mean,
        alone_all_s=total * mean,
        extrapolated=len(alone) < total,
        speedup=total * mean / report["sweep_s"],
        identical_files=identical,
        different_files=different,
    )
    print(
        f"{len(alone)} separate renders: mean {mean:.2f} s; all {total} "
        f"{'would take' if len(alone) < total else 'took'} {total * mean:.1f} s; the sweep is "
        f"{report['speedup']:.2f}x faster (target 8x); files identical {identical}, "
        f"different {len(different)}",
        flush=True,
    )
    return report


def one_against_all_gpus(sweep: str, work: Path) -> dict:
    name = Path(sweep).stem
    report = {}
    for label, devices in (("one_gpu", "cuda:0"), ("all_gpus", "all")):
        shutil.rmtree(work / label, ignore_errors=True)  # a finished sweep there would skip its jobs
        began = time.time()
        report[f"{label}_s"] = timed("sweep", sweep, "--out", str(work / label), "--devices", devices)
        rows = batches(next((work / label).glob("*/manifest.jsonl")).parent)
        report[f"{label}_batches"] = [dict(row, start=row["start"] - began) for row in rows]
        for row in rows:
            print(f"  {devices}: {describe(row, began)}", flush=True)
    one, two = report["one_gpu_s"], report["all_gpus_s"]
    report["speedup"] = one / two
    print(f"{name}: cuda:0 {one:.1f} s, all GPUs {two:.1f} s, {one / two:.2f}x (target 1.8x)", flush=True)
    return report


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sweep", default="sweeps/bench64.yaml")
    parser.add_argument("--devices", default="cuda:0")
    parser.add_argument("--alone", type=int, default=16, help="separate renders to time; 0: none")
    parser.add_argument("--two-gpus", action="store_true")
    parser.add_argument(
        "--two-gpu-sweeps", nargs="+", default=["sweeps/bench128.yaml", "sweeps/bench128-long.yaml"]
    )
    parser.add_argument("--work", default="/tmp/sweep-bench")
    parser.add_argument("--out", default="sweeps.json")
    args = parser.parse_args()
    work = Path(args.work)
    report = batched_against_alone(args, work) if args.alone else {}
    if args.two_gpus:
        for sweep in args.two_gpu_sweeps:
            report[Path(sweep).stem] = one_against_all_gpus(sweep, work)
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
