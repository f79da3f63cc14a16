"""physarum.frames(): time to the first frame, wall to the last, peak memory and peak disk of a
long run, streamed (render/run/stream.py) against the frames folder it replaced (a render into a
temporary folder of PNGs, then read back: what frames() did up to 0.3.0).

    python scripts/bench_stream.py [--frames 2000] [--side 128] [--device cpu] [--out FILE.json]

Each variant runs in a process of its own (peak RSS from getrusage, so one cannot inherit the
other's), on the same preset: quickstart at SIDE x SIDE, one step a frame, FRAMES frames.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

VARIANTS = ("streamed", "folder")


def preset(frames: int, side: int, device: str):
    import physarum

    agents = max(1000, 120_000 * side * side // (512 * 512))
    settings = {
        "canvas.width": side,
        "canvas.height": side,
        "agents.count": agents,
        "run.steps": frames,
        "run.steps_per_frame": 1,
        "output.loop_frames": 1,  # quickstart crossfades; one frame keeps the count
        "output.formats": ["png"],
    }
    return physarum.load("quickstart", settings)


def folder_frames(chosen, device: str, disk: list[int]):
    """The frames as frames() gave them up to 0.3.0: the whole run rendered into a temporary
    folder of PNGs, then each read back."""
    import numpy as np
    from PIL import Image

    from physarum.render.run.runner import render

    with tempfile.TemporaryDirectory(prefix="physarum-bench-") as folder:
        render(chosen, device=device, out_dir=Path(folder) / "o", quiet=True, frames_dir=Path(folder) / "f")
        paths = sorted((Path(folder) / "f").glob("*.png"), key=lambda p: int(p.stem.rsplit("-", 1)[1]))
        disk.append(sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file()))
        for path in paths:
            with Image.open(path) as image:
                yield np.asarray(image.convert("RGB"))


def run_variant(variant: str, frames: int, side: int, device: str) -> dict:
    import physarum

    chosen = preset(frames, side, device)
    disk: list[int] = []
    started = time.perf_counter()
    made = (
        physarum.frames(chosen, device=device)
        if variant == "streamed"
        else folder_frames(chosen, device, disk)
    )
    first = None
    count = 0
    for _ in made:
        first = first if first is not None else time.perf_counter() - started
        count += 1
    return {
        "variant": variant,
        "frames": count,
        "first_frame_s": round(first, 3),
        "wall_s": round(time.perf_counter() - started, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "peak_disk_mb": round(max(disk, default=0) / 1e6, 1),
        "threads_left": threading.active_count() - 1,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000)
    parser.add_argument("--side", type=int, default=128)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--variant", choices=VARIANTS)  # the child's
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(run_variant(args.variant, args.frames, args.side, args.device)))
        return
    rows = []
    for variant in VARIANTS:
        command = [sys.executable, __file__, "--variant", variant, "--frames", str(args.frames)]
        command += ["--side", str(args.side), "--device", args.device]
        done = subprocess.run(command, capture_output=True, text=True, check=True)
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
        print(rows[-1], flush=True)
    record = {
        "machine": platform.node(),
        "cpu_count": shutil.os.cpu_count(),
        "python": platform.python_version(),
        "side": args.side,
        "rows": rows,
    }
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
