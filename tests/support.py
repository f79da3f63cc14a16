"""What tests share: the repository root, a tiny preset that renders in a fraction of a second
on a CPU, a world preset over small images, renders and problems of presets, and sweeps of
the tiny preset. Fixtures live in conftest.py; plain helpers here, imported as
`from support import ...`."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
import yaml
from PIL import Image

from physarum.render import runner
from physarum.render import sweep as sweeps
from physarum.render.preset import PresetError, build_preset

ROOT = Path(__file__).resolve().parent.parent
CURATED = sorted((ROOT / "presets").glob("*.yaml"))  # the curated presets
TINY = {
    "name": "tiny",
    "description": "a test preset",
    "seed": 3,
    "canvas": {"width": 48, "height": 32},
    "agents": {"count": 400, "spawn": "random"},
    "model": {"sensor_distance": 5, "deposit": 5, "diffuse": 0.5, "decay": 0.1},
    "run": {"steps": 24, "steps_per_frame": 3},
    "palette": {"names": ["magma", "ice"], "every": 3, "gamma": 0.8},
    "output": {"formats": ["gif", "mp4", "png"], "fps": 20, "loop": 2},
}


def tiny_data(**sections) -> dict:
    """TINY with some sections replaced or updated (dicts merge one level deep)."""
    data = copy.deepcopy(TINY)
    for key, value in sections.items():
        if isinstance(value, dict) and isinstance(data.get(key), dict):
            data[key].update(value)
        else:
            data[key] = value
    return data


def tiny(**model):
    """The tiny preset, its model section updated by `model` (e.g. tiny(deposit=2.0))."""
    return build_preset(tiny_data(model={**tiny_data()["model"], **model}), "tiny.yaml")


# ---------------------------------------------------------------------------------------------
# Sweeps

SWEEP_BASE = tiny_data(
    canvas={"width": 32, "height": 32},
    agents={"count": 300},
    run={"steps": 12, "steps_per_frame": 3},
    output={"formats": ["gif", "png"]},
)
del SWEEP_BASE["name"]  # the sweep names its jobs


def write_sweep(folder: Path, name: str = "s", base: dict | None = None, **sections) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "base": base or SWEEP_BASE, **sections}, sort_keys=False))
    return path


def expand_inline(sections: dict, base: dict | None = None) -> sweeps.Sweep:
    """The sweep named s of these sections, with SWEEP_BASE (or `base`) inline."""
    return sweeps.expand_sweep({"name": "s", "base": copy.deepcopy(base or SWEEP_BASE), **sections}, "s.yaml")


def read_manifest(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "manifest.jsonl").read_text().splitlines() if line]


def block(path: Path) -> None:
    """Put a folder (with a file in it) where an output file will go: its encoder then fails when
    it moves the finished file into place, in whichever process it runs."""
    (path / "in-the-way").mkdir(parents=True)


def sweep_records(tmp_path: Path, failed: bool = False) -> tuple[Path, list[dict]]:
    """A 4-job sweep rendered on the CPU (no gallery): its folder and its jobs' records, with
    a failed job's record added if asked."""
    path = write_sweep(
        tmp_path, grid={"model.sensor_angle": [15, 45], "model.turn_angle": [10, 20]}, seeds=[1]
    )
    summary = sweeps.run_sweep(
        sweeps.load_sweep(path),
        sweeps.SweepOptions(devices="cpu", out_dir=tmp_path / "out", quiet=True, gallery=False),
        log=lambda line: None,
    )
    records = summary.records
    if failed:
        records = records + [
            {
                **records[0],
                "id": "f00000000f",
                "name": "s-9999",
                "status": "failed",
                "outputs": None,
                "error": "RenderError: <boom> & more",
            }
        ]
    return summary.sweep_dir, records


# World presets over the images of conftest's `images` fixture
WORLD = {
    "boundary": "reflect",
    "walls": {"path": "wall.png"},
    "trail_image": {"path": "gradient.png", "scale": 2.0},
    "food": {"points": [{"x": 0.75, "y": 0.5, "radius": 0.1, "amount": 2.0}]},
}
TWO_SPECIES = [
    {"name": "red", "colour": "#ff4030"},
    {
        "name": "ice",
        "palette": "ice",
        "model": {"sensor_angle": 40},
        "agents": {"spawn": "image", "image": "square.png"},
    },
]


def world_data(**sections) -> dict:
    data = tiny_data(
        name="world",
        world=WORLD,
        species=TWO_SPECIES,
        interaction=[[1.0, -0.5], [-0.5, 1.0]],
        run={"steps": 12, "steps_per_frame": 3},
    )
    data.update(sections)
    return data


def save_image(path: Path, pixels, mode: str = "L") -> Path:
    Image.fromarray(np.asarray(pixels, dtype=np.uint8), mode).save(path)
    return path


def write_preset(folder: Path, data: dict, name: str = "preset.yaml") -> Path:
    path = folder / name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def problems_of(data: dict, settings=(), source: str = "p.yaml") -> list[str]:
    """The problems build_preset reports for `data` read from `source` (it must refuse it)."""
    with pytest.raises(PresetError) as caught:
        build_preset(data, source, list(settings))
    return caught.value.problems


def render_cpu(preset, out: Path):
    """A quiet render with the reference backend on the CPU."""
    return runner.render(preset, backend="torch", device="cpu", out_dir=out, quiet=True)


def render_tiny(out, **sections):
    """render_cpu of TINY with some sections replaced (tiny_data)."""
    return render_cpu(build_preset(tiny_data(**sections), "tiny.yaml"), out)
