"""The whole Preset: names, agent density, short-side units and what the kernels take, dumps."""

from __future__ import annotations

import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
import yaml

from physarum.render.preset import build_preset
from support import problems_of, tiny_data


@pytest.mark.parametrize("name", ["../escape", "a/b", "UPPER", "", ".hidden", "x" * 65, "veins\n"])
def test_names_that_would_leave_the_output_folder(name):
    problems = problems_of(tiny_data(name=name))
    assert len(problems) == 1 and problems[0].startswith("p.yaml: name: names become file names")


def test_density_gives_the_count_exactly_and_round_trips():
    canvas = {"width": 8, "height": 8}
    for density, count in [(0.5, 32), (1 / 128, 1), (3 / 128, 2), (5 / 128, 2), (7 / 128, 4)]:
        preset = build_preset(
            {**tiny_data(canvas=canvas, model={"sensor_distance": 3}), "agents": {"density": density}},
            "p.yaml",
        )
        assert preset.agents.count == count == max(1, round(Fraction(density) * 64))
        dumped = yaml.safe_load(preset.to_yaml())["agents"]
        assert "count" not in dumped and dumped["density"] == density
        assert build_preset(yaml.safe_load(preset.to_yaml()), "p.yaml") == preset
    assert build_preset({**tiny_data(), "agents": {"density": 0.5}}, "p").agents.count == 768  # 48 x 32 / 2
    too_many = problems_of(
        {**tiny_data(canvas={"width": 16384, "height": 16384}), "agents": {"density": 2.0}},
        source=str(Path(".") / "p.yaml"),
    )
    assert any("agents.density: gives 536870912 agents" in p for p in too_many)


def test_short_side_density_counts_agents_per_canvas_area_not_per_pixel():
    """With units: short_side a density is per pixel of a 512-pixel short side: the same count on
    every canvas of one shape, in proportion to the area in short sides squared on others."""

    def count(width, height, units="short_side"):
        data = {
            **tiny_data(
                canvas={"width": width, "height": height},
                model={"units": units, "sensor_distance": 0.01, "step_size": 0.001, "diffuse": 0.05},
            ),
            "agents": {"density": 0.5},
        }
        return build_preset(data, "p.yaml").agents.count

    assert count(512, 512) == count(1024, 1024) == count(2048, 2048) == 131072  # 0.5 * 512^2
    assert count(1024, 512) == count(2048, 1024) == count(512, 256) == 262144  # two squares
    assert count(3840, 2160) == round(Fraction(0.5) * 3840 * 2160 * Fraction(512, 2160) ** 2) == 233017
    assert count(1024, 1024, units="pixels") == 524288  # per pixel of this canvas


def test_short_side_units_convert_exactly():
    preset = build_preset(
        tiny_data(model={"units": "short_side", "sensor_distance": 0.25, "step_size": 0.1}), "p.yaml"
    )
    params = preset.model_params()
    assert params.sensor_distance == 8.0  # 0.25 of 32
    assert params.step_size == float(Fraction(0.1) * 32) == 3.2
    assert "units" not in yaml.safe_dump(build_preset(tiny_data(), "p").model_dump())
    species = build_preset(
        tiny_data(
            species=[{}, {"model": {"units": "short_side", "sensor_distance": 0.125, "step_size": 0.03125}}]
        ),
        "p.yaml",
    )
    assert species.model_params(0).sensor_distance == 5.0 and species.model_params(1).sensor_distance == 4.0


def test_short_side_units_scale_diffusion_with_the_canvas_area():
    """The 3x3 blend spreads trail a fixed number of pixels a step: k times the short side
    needs k^2 times the diffusion (given for a 512-pixel short side)."""

    def diffuse(short: int, value: float, units: str = "short_side") -> float:
        data = tiny_data(
            canvas={"width": short, "height": short},
            model={"units": units, "sensor_distance": 0.01, "step_size": 0.002, "diffuse": value},
        )
        return build_preset(data, "p.yaml").model_params().diffuse

    assert diffuse(512, 0.05) == 0.05 and diffuse(1024, 0.05) == 0.2 and diffuse(256, 0.4) == 0.1
    assert diffuse(2160, 0.05) == float(Fraction(0.05) * Fraction(2160, 512) ** 2)
    assert diffuse(1024, 0.05, units="pixels") == 0.05


def test_plain_presets_dump_as_before(tiny_preset):
    assert set(tiny_preset.model_dump()) == {
        "name",
        "description",
        "seed",
        "canvas",
        "agents",
        "model",
        "run",
        "palette",
        "output",
    }
    assert set(tiny_preset.model_dump()["agents"]) == {"count", "spawn", "radius"}


def test_the_preset_stage_imports_no_torch_until_a_simulation_is_made():
    code = (
        "import sys\nfrom physarum.render.preset import load_preset\n"
        "from physarum.render.preset.catalog import resolve_preset_path\n"
        "preset = load_preset(resolve_preset_path('rivals'))\n"
        "print('torch' in sys.modules)\n"
        "params = preset.model_params(1)\n"
        "from physarum.kernels.api import ModelParams\n"
        "print('torch' in sys.modules, isinstance(params, ModelParams), params.seed != preset.seed)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True", "True", "True"], done.stderr
