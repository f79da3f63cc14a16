"""sha256 of every curated preset's files, rendered small on the CPU: the before/after check of a
change that must alter no output byte (a move, a refactor).

    python scripts/preset_hashes.py OUT.txt [--size 128] [--steps 120] [--jobs 2]

Each preset is rendered with torch on the CPU at a reduced canvas (SIZE pixels wide, the same
aspect, agents scaled with the area), STEPS steps of 5 per frame, to GIF, MP4, WebP and PNG; one
line per file: preset, file name, bytes, sha256. Two runs of one commit give the same file; diff
the files of two commits (MP4 bytes also depend on the PyAV build, so compare on one machine).
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PRESETS = ROOT / "presets"
FORMATS = "[gif, mp4, webp, png]"


def overrides(preset: dict, size: int, steps: int) -> list[str]:
    """The --set values that shrink one preset: canvas, agents at the same density, a short run."""
    width, height = preset["canvas"]["width"], preset["canvas"]["height"]
    small_h = max(2, round(height * size / width / 2) * 2)
    shrink = [f"canvas.width={size}", f"canvas.height={small_h}"]
    if "count" in preset["agents"]:  # a density is per pixel already
        shrink.append(
            f"agents.count={max(64, preset['agents']['count'] * size * small_h // (width * height))}"
        )
    return shrink + [
        f"run.steps={steps}",
        "run.steps_per_frame=5",
        "run.warmup=0",
        f"output.formats={FORMATS}",
    ]


def render_one(name: str, out: Path, size: int, steps: int) -> list[str]:
    """Render one preset small; its files' lines, or one line naming the failure."""
    preset = yaml.safe_load((PRESETS / f"{name}.yaml").read_text())
    command = [sys.executable, "-m", "physarum.render.cli", "render", name, "--backend", "torch"]
    command += ["--device", "cpu", "--quiet", "--out", str(out)]
    for value in overrides(preset, size, steps):
        command += ["--set", value]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        return [f"{name} FAILED exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"]
    lines = []
    for path in sorted((out / name).iterdir()):
        if path.suffix in (".gif", ".mp4", ".webp", ".png"):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            lines.append(f"{name} {path.name} {path.stat().st_size} {digest}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", help="the text file of hashes to write")
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    names = sorted(p.stem for p in PRESETS.glob("*.yaml"))
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(args.jobs) as pool:
        results = pool.map(lambda n: render_one(n, Path(folder) / n, args.size, args.steps), names)
        lines = [line for result in results for line in result]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
