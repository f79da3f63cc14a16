"""sha256 of every curated preset's files, rendered small on the CPU: the record the README quotes
(benchmarks/unreleased/hashes-cpu-2core.txt) and the before/after check of a change that must alter
no output byte (a move, a refactor).

    python scripts/preset_hashes.py benchmarks/unreleased/hashes-cpu-2core.txt    # the record
    python scripts/preset_hashes.py OUT.txt [--size 128] [--steps 120] [--jobs 2]
        [--backend torch --device cpu] [--tree DIR]

Each preset is rendered (by default with torch on the CPU) at a reduced canvas (SIZE pixels wide, the same
aspect, agents scaled with the area), STEPS steps of 5 per frame, to GIF, MP4, WebP and PNG; one
line per file: preset, file name, bytes, sha256; and first, per preset, a line for the preset
itself, `NAME NAME.resolved.yaml BYTES SHA256`: the resolved preset text (Preset.to_yaml() of the
preset with these overrides, what its outputs embed) that the files were rendered from.
tests/test_hash_records.py compares those digests with HEAD's curated presets, so a changed preset
whose record was not regenerated fails. Two runs of one commit give the same file; diff
the files of two commits (MP4 bytes also depend on the PyAV build, so compare on one machine).
--tree DIR renders with the package of another checkout's render/, kernels/, presets/ and sweeps/
(e.g. `git archive OLD render kernels presets sweeps | tar -x -C DIR`), through a link tree, from
DIR (each render runs from its tree's root, so that its outputs name the shipped images alike).
"""

from __future__ import annotations

import argparse
import hashlib
import os
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
    """The --set values that shrink one preset: canvas, agents at the same density, a short run;
    a volume's depth and its camera's frame by the same factor (a 512^3 preset's 1024^2 frames
    would take the CPU a quarter of an hour)."""
    width, height = preset["canvas"]["width"], preset["canvas"]["height"]
    small_h = max(2, round(height * size / width / 2) * 2)
    shrink = [f"canvas.width={size}", f"canvas.height={small_h}"]
    cells, small = width * height, size * small_h
    depth = preset["canvas"].get("depth")
    if depth is not None:
        small_d = max(8, round(depth * size / width))
        shrink.append(f"canvas.depth={small_d}")
        cells, small = cells * depth, small * small_d
        camera = preset.get("camera") or {}
        for key in ("width", "height"):
            if camera.get(key):
                shrink.append(f"camera.{key}={max(8, round(camera[key] * size / width))}")
    if "count" in preset["agents"]:  # a density is per pixel already
        shrink.append(f"agents.count={max(64, preset['agents']['count'] * small // cells)}")
    return shrink + [
        f"run.steps={steps}",
        "run.steps_per_frame=5",
        "run.warmup=0",
        f"output.formats={FORMATS}",
    ]


def package_path(tree: Path, links: Path) -> dict[str, str]:
    """The environment that imports physarum from `tree` (a link tree under `links`)."""
    root = links / "physarum"
    root.mkdir(parents=True, exist_ok=True)
    for part in ("render", "kernels", "presets", "sweeps"):
        (root / part).unlink(missing_ok=True)
        (root / part).symlink_to(tree.resolve() / part)
    api = tree.resolve() / "physarum_api" / "__init__.py"  # physarum itself, where the tree has it
    if api.exists():
        (root / "__init__.py").unlink(missing_ok=True)
        (root / "__init__.py").symlink_to(api)
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(links), os.environ.get("PYTHONPATH", "")])}


RESOLVED = (
    "import hashlib, sys\n"
    "from physarum.render.preset import load_preset\n"
    "from physarum.render.preset.catalog import resolve_preset_path\n"
    "text = load_preset(resolve_preset_path(sys.argv[1]), sys.argv[2:]).to_yaml().encode()\n"
    "print(len(text), hashlib.sha256(text).hexdigest())\n"
)


def resolved_digest(name: str, settings: list[str]) -> tuple[int, str]:
    """The bytes and sha256 of the resolved preset text (this process's package)."""
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path

    text = load_preset(resolve_preset_path(name), settings).to_yaml().encode()
    return len(text), hashlib.sha256(text).hexdigest()


def render_one(name: str, out: Path, args: argparse.Namespace, env: dict | None) -> list[str]:
    """Render one preset small; its preset's line and its files' lines, or one line naming the
    failure."""
    preset = yaml.safe_load((PRESETS / f"{name}.yaml").read_text())
    command = [sys.executable, "-m", "physarum.render.cli", "render", name, "--backend", args.backend]
    command += ["--device", args.device, "--quiet", "--out", str(out)]
    for value in overrides(preset, args.size, args.steps):
        command += ["--set", value]
    # from the tree's root: outputs name a shipped image by its path from the working folder
    done = subprocess.run(command, capture_output=True, text=True, env=env, cwd=args.tree or ROOT)
    if done.returncode != 0:
        return [f"{name} FAILED exit {done.returncode}: {done.stderr.strip().splitlines()[-1:]}"]
    settings = overrides(preset, args.size, args.steps)
    digest = subprocess.run(
        [sys.executable, "-c", RESOLVED, name, *settings],
        capture_output=True, text=True, env=env, cwd=args.tree or ROOT,
    )  # fmt: skip
    if digest.returncode != 0:
        return [f"{name} FAILED resolving the preset: {digest.stderr.strip().splitlines()[-1:]}"]
    size, sha = digest.stdout.split()
    lines = [f"{name} {name}.resolved.yaml {size} {sha}"]
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
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--tree", type=Path, default=None, help="render with another checkout's package")
    parser.add_argument("--presets", nargs="*", default=None, help="these curated presets only")
    args = parser.parse_args()
    names = args.presets or sorted(p.stem for p in PRESETS.glob("*.yaml"))
    with tempfile.TemporaryDirectory() as folder, ThreadPoolExecutor(args.jobs) as pool:
        env = package_path(args.tree, Path(folder) / "links") if args.tree else None
        results = pool.map(lambda n: render_one(n, Path(folder) / n, args, env), names)
        lines = [line for result in results for line in result]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
