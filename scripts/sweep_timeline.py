"""Where a sweep's time goes: run it under cProfile and put its wall time beside its batches'.

    python3 scripts/sweep_timeline.py SWEEP --devices cuda:0 [--out DIR] [--work /tmp/timeline]

Prints, and writes to DIR/<sweep>-<devices>.txt: the wall time of the whole `physarum sweep`
process; when each batch started and how long it took (from the manifest, relative to the
process start) with its phases (spawn_s, open_s, frames_s, finish_s from a job's sidecar); and
the main process's 25 most expensive calls by cumulative time. What is left between the process
start and the first batch, and between the last batch's end and the process exit, is the
sweep's fixed cost: imports, expanding the jobs, starting workers, the gallery.
"""

from __future__ import annotations

import argparse
import io
import json
import pstats
import shutil
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path


def batches(sweep_dir: Path) -> list[dict]:
    """One row per batch: its start (epoch seconds), seconds, device, size and phase timings."""
    rows: dict[tuple, dict] = {}
    for line in (sweep_dir / "manifest.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("status") != "done":
            continue
        key = (record["pid"], record["started"])
        if key not in rows:
            sidecar = sweep_dir / record["outputs"]["json"]
            rows[key] = {
                "start": datetime.fromisoformat(record["started"]).timestamp(),
                "seconds": record["seconds"],
                "device": record["device"],
                "jobs": record["batch"],
                "phases": json.loads(sidecar.read_text())["timings"],
            }
    return sorted(rows.values(), key=lambda row: row["start"])


def describe(row: dict, began: float) -> str:
    """One batch row as a line: its size and device, when it ran (seconds after `began`, epoch
    seconds) and its phases."""
    phases = ", ".join(f"{k} {v:.1f}" for k, v in row["phases"].items() if not k.startswith("encode_"))
    start = row["start"] - began
    return (
        f"batch of {row['jobs']} on {row['device']} from {start:.1f} s to {start + row['seconds']:.1f} s "
        f"({phases})"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("sweep")
    parser.add_argument("--devices", default="cuda:0")
    parser.add_argument("--out", default=".")
    parser.add_argument("--work", default="/tmp/timeline")
    args = parser.parse_args()
    name = Path(args.sweep).stem
    tag = args.devices.replace(":", "").replace(",", "+")
    work = Path(args.work) / tag
    profile = work / "sweep.prof"
    shutil.rmtree(work, ignore_errors=True)  # a finished sweep there would skip its jobs
    work.mkdir(parents=True)
    began = time.time()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "cProfile",
            "-o",
            str(profile),
            "-m",
            "physarum.render.cli",
            "sweep",
            args.sweep,
            "--out",
            str(work),
            "--devices",
            args.devices,
            "--quiet",
        ],
        check=True,
    )
    wall = time.time() - began
    lines = [f"{name} on {args.devices}: {wall:.1f} s wall (process start to exit)"]
    rows = batches(next(work.glob("*/manifest.jsonl")).parent)
    lines.extend(f"  {describe(row, began)}" for row in rows)
    text = io.StringIO()
    pstats.Stats(str(profile), stream=text).sort_stats("cumulative").print_stats(25)
    lines.append(text.getvalue())
    report = "\n".join(lines)
    print(report, flush=True)
    (Path(args.out) / f"{name}-{tag}.txt").write_text(report + "\n")


if __name__ == "__main__":
    main()
