"""What tests share: the repository root, a tiny preset that renders in a fraction of a second
on a CPU, a world preset over small images, renders and problems of presets, sweeps of the tiny
preset, and the kernel tests' model parameters, test worlds and exact state comparison. Fixtures
live in conftest.py; plain helpers here, imported as `from support import ...`."""

from __future__ import annotations

import copy
import json
import os
import random
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml
from PIL import Image

from physarum.kernels import api, exact
from physarum.kernels.api import FRAC_BITS as FRAC
from physarum.kernels.spawn import spawn, species_seed
from physarum.render import sweep as sweeps
from physarum.render.preset import PresetError, build_preset
from physarum.render.run import runner

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


TINY_3D = {
    "name": "tiny3d",
    "seed": 2,
    "canvas": {"width": 16, "height": 12, "depth": 10},
    "agents": {"count": 600, "spawn": "random"},
    "model": {"sensor_distance": 3, "deposit": 5, "diffuse": 0.5, "decay": 0.1},
    "run": {"steps": 6, "steps_per_frame": 3},
    "camera": {"orbit": {"turns": 1, "elevation": 20}, "width": 24, "height": 20, "samples": 12},
    "output": {"formats": ["gif", "mp4", "png"], "fps": 10},
}


def tiny_3d(**sections) -> dict:
    """TINY_3D (a 16x12x10 volume) with whole sections replaced by `sections`."""
    data = json.loads(json.dumps(TINY_3D))
    data.update(sections)
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


def gif_png_and_loop_on_each_backend(preset, out: Path) -> dict[str, dict]:
    """By backend (torch on the CPU; Triton on CUDA where present, else in the interpreter): the
    GIF's and PNG's bytes of a render of `preset`, and its sidecar's `loop` (None without one)."""
    found = {}
    for backend in ("torch", "triton"):
        device = "cuda" if backend == "triton" and torch.cuda.is_available() else "cpu"
        result = runner.render(preset, backend=backend, device=device, out_dir=out / backend, quiet=True)
        found[backend] = {fmt: result.outputs[fmt].read_bytes() for fmt in ("gif", "png")}
        found[backend]["loop"] = json.loads(result.outputs["json"].read_text()).get("loop")
    return found


def render_tiny(out, **sections):
    """render_cpu of TINY with some sections replaced (tiny_data)."""
    return render_cpu(build_preset(tiny_data(**sections), "tiny.yaml"), out)


# ---------------------------------------------------------------------------------------------
# Kernel tests: model parameters, test worlds, byte-for-byte state comparison.


def params(**changes) -> api.ModelParams:
    base = dict(
        sensor_angle=22.5,
        sensor_distance=2.0,
        turn_angle=45.0,
        step_size=1.0,
        deposit=5.0,
        diffuse=1.0,
        decay=0.1,
        seed=7,
    )
    base.update(changes)
    return api.ModelParams(**base)


def assert_same_state(got: api.State, expected: api.State, where: str = "") -> None:
    """got is expected byte for byte, in the contract's dtypes: integer state by value, the trail
    by bit pattern, simulation by simulation."""
    assert got.position.dtype == torch.int32 and got.heading.dtype == torch.int16
    assert got.trail.dtype == torch.float32 and got.step.dtype == torch.int64
    assert got.step.shape == ()
    assert int(got.step) == int(expected.step), f"step differs {where}"
    assert got.trail.shape == expected.trail.shape and got.heading.shape == expected.heading.shape
    for b in range(expected.batch):
        assert torch.equal(got.position[b], expected.position[b]), (
            f"positions differ in simulation {b} {where}"
        )
        assert torch.equal(got.heading[b], expected.heading[b]), f"headings differ in simulation {b} {where}"
        mismatch = (got.trail[b].view(torch.int32) != expected.trail[b].view(torch.int32)).nonzero()
        first = mismatch[:5].tolist()
        assert mismatch.numel() == 0, (
            f"trail differs in simulation {b} {where}: {len(mismatch)} cells, first {first}"
        )


def world_params(seed: int, **changes) -> api.ModelParams:
    base = dict(
        sensor_angle=30.0,
        sensor_distance=3.0,
        turn_angle=45.0,
        step_size=1.7,
        deposit=4.0,
        diffuse=0.8,
        decay=0.1,
        seed=seed,
    )
    base.update(changes)
    return api.ModelParams(**base)


def walls(height: int, width: int, seed: int) -> torch.Tensor:
    """A few wall blocks, an edge strip and single wall cells; most cells free."""
    rng = random.Random(seed)
    wall = torch.zeros((height, width), dtype=torch.uint8)
    wall[:, width // 2] = 1
    wall[height // 3, :] = 1
    wall[height // 2, width // 2] = 0  # a gap
    wall[0:2, 0:3] = 1
    for _ in range(6):
        wall[rng.randrange(height), rng.randrange(width)] = 1
    return wall


def world_case(name: str, boundary: str):
    """(state, tables, world) of a named test world on an odd canvas with agents on the edges."""
    height, width, agents = 11, 13, 300
    species = {"plain": 1, "walls": 1, "species2": 2, "species3": 3}[name]
    batch = 2 if name != "species3" else 1
    groups = batch * species
    wall = None
    if name in ("walls", "species3"):
        wall = torch.stack([walls(height, width, b) for b in range(batch)])
    group_params = [
        world_params(
            species_seed(10 + b, s),
            sensor_angle=20.0 + 15 * s,
            step_size=1.0 + 0.4 * s + 0.3 * b,
            decay=0.05 + 0.1 * s,
        )
        for b in range(batch)
        for s in range(species)
    ]
    tables = exact.build_tables(group_params)
    parts = []
    for g in range(groups):
        b, s = divmod(g, species)
        pattern = ("random", "disk", "ring")[s]
        parts.append(
            spawn(
                [species_seed(10 + b, s)],
                agents,
                width,
                height,
                pattern,
                0.45,
                wall=None if wall is None else wall[b],
            )
        )
    state = api.State.concat(parts)
    position = state.position
    # agents exactly on the edges and corners (where there is no wall)
    last_x, last_y = (width << FRAC) - 1, (height << FRAC) - 1
    for g in range(groups):
        for a, (x, y) in enumerate(
            [(last_x, last_y), (last_x, 5 << FRAC), (0, last_y), (7 << FRAC, 0), (last_x, 3 << FRAC)]
        ):
            free = wall is None or not wall[g // species, y >> FRAC, x >> FRAC]
            if free:
                position[g, 0, a], position[g, 1, a] = x, y
    gen = torch.Generator().manual_seed(3)
    trail = (torch.rand((groups, height, width), generator=gen) * 4).to(torch.float32)
    if wall is not None:
        trail = torch.where(wall.repeat_interleave(species, 0) != 0, 0.0, trail)
    state.trail, state.step = trail, torch.tensor(5, dtype=torch.int64)
    mix = None
    if species > 1:
        rows = [[1.0, -0.5, 0.25], [-0.75, 1.0, 0.5], [0.5, 0.5, -1.0]]
        mix = torch.tensor(
            [rows[s][:species] for _ in range(batch) for s in range(species)], dtype=torch.float32
        )
    food = None
    if name in ("walls", "species2"):
        food = torch.zeros((groups, height, width), dtype=torch.float32)
        food[:, 4:6, 2:4] = 0.75
        food[0, 8, 9] = 2.5
    world = api.World(species=species, boundary=boundary, mix=mix, wall=wall, food=food)
    return state, tables, world


WORLD_CASES = [
    (name, boundary) for name in ("plain", "walls", "species2", "species3") for boundary in api.BOUNDARIES
]


FIFO_POLL = 0.02  # seconds between a FIFO partner's looks for a reader
_FIFO_PARTNERS: list[tuple[threading.Thread, threading.Event]] = []


def fifo(path: Path) -> Path:
    """A FIFO at `path`, with a partner thread for the code under test: where that code opens it
    to read, the partner opens and closes the writing end, so the open returns and the read finds
    end of file instead of hanging the tests. The partner never blocks (a non-blocking open,
    which finds a reader or fails at once, every FIFO_POLL s): it runs until
    `end_fifo_partners`, which conftest.py calls after every test, so no thread outlives it."""
    os.mkfifo(path)
    ended = threading.Event()
    partner = threading.Thread(target=_stand_by, args=(path, ended), name=f"fifo {path.name}", daemon=True)
    _FIFO_PARTNERS.append((partner, ended))
    partner.start()
    return path


def _stand_by(path: Path, ended: threading.Event) -> None:
    """Until `ended`: each reader of the FIFO (blocked in its open) let through to end of file."""
    while not ended.wait(FIFO_POLL):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: no reader yet; ENOENT: the FIFO was removed
            continue


def end_fifo_partners() -> None:
    """End every FIFO partner thread `fifo` started, and wait for each to end."""
    while _FIFO_PARTNERS:
        partner, ended = _FIFO_PARTNERS.pop()
        ended.set()
        partner.join()
