"""What tests share: the repository root and a tiny preset that renders in a fraction of a second
on a CPU. Fixtures live in conftest.py; plain helpers here, imported as `from support import ...`."""

from __future__ import annotations

import copy
from pathlib import Path

from physarum.render.preset import build_preset

ROOT = Path(__file__).resolve().parent.parent
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
