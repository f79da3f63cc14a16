"""Loop seams of GIFs: does the animation jump when it starts again?

    python scripts/loop_seams.py [NAME_OR_GIF ...] [--reduce K] [--keep DIR] [--jobs 2]

Each argument is a GIF file or the name of a curated preset (none: every curated preset). A
preset is rendered small on the CPU (`physarum render NAME --preview`, or `--reduce K` instead,
the GIF alone, with a budget large enough to keep every frame and level) into a temporary folder
(or DIR with --keep). Every frame is decoded to RGB (Pillow); the change between two frames is
the mean absolute difference per pixel and channel (0 .. 255). One line per GIF: the seam (the
change from the last frame to the first, shown when the GIF loops), the median and the largest
change between consecutive frames, seam / median, and the loop mode its sidecar names.

Exit status 1 if any seam is larger than its median frame change (a visible jump: issue 25's
"Done when"), 2 on bad input or a target that could not be measured (its line says why), else 0.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image, ImageSequence

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ROOT / "presets"
PHYSARUM = Path(sys.executable).parent / "physarum"
BUDGET = "200MB"  # every frame and level kept: the loop measured is the one the preset shows


def frame_change(a: np.ndarray, b: np.ndarray) -> float:
    """The mean absolute difference of two frames of one shape, per pixel and channel (0 .. 255)."""
    if a.shape != b.shape:
        raise ValueError(f"frames of different shapes: {a.shape} and {b.shape}")
    return float(np.abs(a.astype(np.int16) - b.astype(np.int16)).mean())


def consecutive_changes(frames: list[np.ndarray]) -> list[float]:
    """The change from each frame to the next, in order (len(frames) - 1 values)."""
    return [frame_change(a, b) for a, b in zip(frames, frames[1:])]


def seam_report(frames: list[np.ndarray]) -> dict:
    """A loop's numbers: `seam` (last frame -> first), `median` and `max` of the consecutive
    changes, `ratio` = seam / median (inf when the median is 0 and the seam is not), `jumps`:
    seam > median. Needs at least two frames."""
    if len(frames) < 2:
        raise ValueError(f"a loop needs at least 2 frames, got {len(frames)}")
    changes = consecutive_changes(frames)
    seam = frame_change(frames[-1], frames[0])
    median = statistics.median(changes)
    ratio = seam / median if median > 0 else (0.0 if seam == 0 else float("inf"))
    return {
        "frames": len(frames),
        "seam": seam,
        "median": median,
        "max": max(changes),
        "ratio": ratio,
        "jumps": seam > median,
    }


def read_frames(path: Path) -> list[np.ndarray]:
    """Every frame of an animated image, composited as shown, as RGB uint8 arrays."""
    with Image.open(path) as image:
        return [np.asarray(frame.convert("RGB")) for frame in ImageSequence.Iterator(image)]


def loop_mode(gif: Path) -> str:
    """The loop mode the GIF's sidecar (NAME.json beside it) names, or '?' without one."""
    sidecar = gif.with_suffix(".json")
    if not sidecar.is_file():
        return "?"
    output = json.loads(sidecar.read_text()).get("preset", {}).get("output", {})
    return output.get("loop_mode", "none")


def render_preset(name: str, out: Path, reduce: int | None) -> Path:
    """Render a curated preset small (GIF only) into `out`; the GIF's path."""
    size = ["--reduce", str(reduce)] if reduce else ["--preview"]
    command = [str(PHYSARUM), "render", name, *size, "--quiet", "--out", str(out)]
    command += ["--set", "output.formats=[gif]", "--gif-max-bytes", BUDGET]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{name}: render failed: {done.stderr.strip()}")
    gifs = sorted(out.rglob("*.gif"))
    if len(gifs) != 1:
        raise RuntimeError(f"{name}: expected one GIF under {out}, found {len(gifs)}")
    return gifs[0]


def measure(target: str, work: Path, reduce: int | None) -> tuple[str, dict | str, str]:
    """A GIF file's or a curated preset's (label, report, loop mode); the report is the error's
    message where the render or the GIF failed (the other targets are still measured)."""
    path = Path(target)
    label = path.name if path.suffix.lower() == ".gif" else target
    try:
        gif = path if path.suffix.lower() == ".gif" else render_preset(target, work / target, reduce)
        return label, seam_report(read_frames(gif)), loop_mode(gif)
    except (OSError, ValueError, RuntimeError) as error:
        return label, str(error).splitlines()[-1], "?"


def table_line(label: str, report: dict | str, mode: str) -> str:
    """One printed line of the table (or the target's error)."""
    if isinstance(report, str):
        return f"{label:<12} {mode:<10} failed: {report}"
    flag = "JUMP" if report["jumps"] else "ok"
    return (
        f"{label:<12} {mode:<10} {report['frames']:>6} {report['seam']:>7.2f} "
        f"{report['median']:>7.2f} {report['max']:>7.2f} {report['ratio']:>6.2f}  {flag}"
    )


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The command line, checked: every target a GIF file or a curated preset's name."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("targets", nargs="*", help="GIF files or curated preset names")
    parser.add_argument("--reduce", type=int, help="render with --reduce K instead of --preview")
    parser.add_argument("--keep", type=Path, help="render into DIR (kept) instead of a temp folder")
    parser.add_argument("--jobs", type=int, default=2, help="renders at a time (default 2)")
    args = parser.parse_args(argv)
    curated = sorted(p.stem for p in PRESETS.glob("*.yaml"))
    args.targets = args.targets or curated
    for target in args.targets:
        is_gif = target.lower().endswith(".gif") and Path(target).is_file()
        if not is_gif and target not in curated:
            parser.error(f"{target!r} is neither a GIF file nor a curated preset ({', '.join(curated)})")
    if args.reduce is not None and args.reduce < 1 or args.jobs < 1:
        parser.error("--reduce and --jobs must be at least 1")
    return args


def main(argv: list[str] | None = None) -> int:
    """Measure every target, print the table; 1 if any seam is above its median change."""
    args = parse(argv)
    with tempfile.TemporaryDirectory(prefix="loop-seams-") as temp:
        work = args.keep or Path(temp)
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            rows = list(pool.map(lambda t: measure(t, work, args.reduce), args.targets))
    print(f"{'preset/gif':<12} {'loop':<10} {'frames':>6} {'seam':>7} {'median':>7} {'max':>7} {'ratio':>6}")
    for label, report, mode in rows:
        print(table_line(label, report, mode))
    failed = [label for label, report, _ in rows if isinstance(report, str)]
    jumps = [label for label, report, _ in rows if label not in failed and report["jumps"]]
    if jumps:
        print(f"seam above the median frame change: {', '.join(jumps)}")
    if failed:
        print(f"not measured: {', '.join(failed)}", file=sys.stderr)
    return 2 if failed else 1 if jumps else 0


if __name__ == "__main__":
    sys.exit(main())
