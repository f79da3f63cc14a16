"""Session 10 final call: loop variants of nebula and tangle at full size (GIF only, every frame
kept), their seams, and the chosen variant of each written as a preset file for the identity
check. Usage: python3 variants.py OUT CHOSEN_DIR"""

import sys
import time
from pathlib import Path

import yaml

import physarum

sys.path.insert(0, "scripts")
from loop_seams import read_frames, seam_report

out, chosen_dir = Path(sys.argv[1]), Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
chosen_dir.mkdir(parents=True, exist_ok=True)
work = Path("/tmp/variants")
BIG = {"output.gif_max_bytes": "400MB", "output.formats": ["gif"]}
LOOPS = {  # in order of preference: the smallest change first
    "nebula": {
        "base": {},
        "w300": {"run.warmup": 300},
        "w400": {"run.warmup": 400},
        "w200spf2": {"run.warmup": 200, "run.steps": 160, "run.steps_per_frame": 2},
        "w200t2": {"run.warmup": 200, "camera.orbit.turns": 2},
        "w200spf1": {"run.warmup": 200, "run.steps": 80, "run.steps_per_frame": 1},
        "w120spf1": {"run.warmup": 120, "run.steps": 80, "run.steps_per_frame": 1},
        "w60spf1": {"run.steps": 80, "run.steps_per_frame": 1},
    },
    "tangle": {
        "base": {},
        "s144": {"camera.orbit.start": 144},
        "s180": {"camera.orbit.start": 180},
        "s60": {"camera.orbit.start": 60},
        "s0": {"camera.orbit.start": 0},
        "w40": {"run.warmup": 40},
        "spf1": {"run.steps_per_frame": 1},
        "spf1w40": {"run.steps_per_frame": 1, "run.warmup": 40},
        "t2": {"camera.orbit.turns": 2},
    },
}
log = open(out / "seams.txt", "a")
for name, variants in LOOPS.items():
    reports = {}
    for label, sets in variants.items():
        t = time.time()
        try:
            result = physarum.render(physarum.load(name, {**BIG, **sets}), out=work / f"{name}-{label}")
            reports[label] = seam_report(read_frames(result.outputs["gif"]))
        except Exception as error:  # one variant's failure is a line, not the end
            print(f"{name}-{label} FAILED {error!r}", file=log, flush=True)
            continue
        r = reports[label]
        print(
            f"{name}-{label} frames {r['frames']} seam {r['seam']:.2f} median {r['median']:.2f} "
            f"ratio {r['ratio']:.3f} ({time.time() - t:.1f} s) {sets}",
            file=log,
            flush=True,
        )
    passing = [label for label in variants if label in reports and reports[label]["ratio"] < 0.97]
    label = passing[0] if passing else min(reports, key=lambda k: reports[k]["ratio"])
    data = yaml.safe_load(Path(f"presets/{name}.yaml").read_text())
    for key, value in variants[label].items():
        *path, last = key.split(".")
        node = data
        for part in path:
            node = node.setdefault(part, {})
        node[last] = value
    (chosen_dir / f"{name}.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    print(
        f"CHOSEN {name} {label} ratio {reports[label]['ratio']:.3f} {variants[label]}", file=log, flush=True
    )
