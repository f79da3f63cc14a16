"""Raw fields: the trail and agent counts of chosen steps as .npz and 16-bit PNG, equal to the
simulation's own, committed with the render's other files."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch
from PIL import Image

from physarum.render.base import files
from physarum.render.base.errors import RenderError
from physarum.render.formats.png import EMBED_KEY
from physarum.render.out import fields
from physarum.render.preset import build_preset
from physarum.render.preset.provenance import embedded_text
from physarum.render.sim.simulation import make_simulation
from support import render_cpu, tiny_data

DATA = tiny_data(
    run={"steps": 12, "steps_per_frame": 3, "warmup": 1},
    output={"formats": ["png"], "fields": {"at": [4, 13], "every": 5, "formats": ["npz", "png"]}},
)


def simulated(preset, step: int):
    simulation = make_simulation(preset, "torch", torch.device("cpu"))
    simulation.advance(step)
    return simulation.state


def test_fields_hold_the_simulations_trail_and_counts_at_their_steps(tmp_path):
    preset = build_preset(DATA, "tiny.yaml")
    render_cpu(preset, tmp_path)
    folder = tmp_path / "tiny"
    written = sorted(p.name for p in folder.glob("*-fields-*.npz"))
    assert written == sorted(f"tiny-s3-fields-{s}.npz" for s in (4, 5, 10, 13))
    for step in (4, 10):
        state = simulated(preset, step)
        with np.load(folder / f"tiny-s3-fields-{step}.npz", allow_pickle=False) as loaded:
            assert loaded["trail"].dtype == np.float32 and loaded["trail"].shape == (32, 48)
            assert loaded["trail"].tobytes() == state.trail[0].numpy().tobytes()
            counts = loaded["counts"]
            assert counts.dtype == np.int32 and counts.shape == (32, 48)
            assert counts.sum() == preset.agents.count
            x, y = (state.position[0] >> 16).numpy()
            for agent in range(0, preset.agents.count, 37):
                assert counts[y[agent], x[agent]] >= 1
            assert int(loaded["step"]) == step and str(loaded["format"]) == fields.FORMAT
            assert str(loaded["preset"]) == embedded_text(preset)


def test_the_png_is_the_trail_scaled_to_its_maximum_in_16_bits(tmp_path):
    preset = build_preset(DATA, "tiny.yaml")
    render_cpu(preset, tmp_path)
    trail = simulated(preset, 10).trail[0].numpy()
    with Image.open(tmp_path / "tiny" / "tiny-s3-fields-10.png") as image:
        assert image.mode.startswith("I")  # 16-bit grey
        values = np.asarray(image).astype(np.int64)
        peak = np.float32(image.text[fields.MAX_KEY])
        assert image.text[EMBED_KEY] == embedded_text(preset)
    assert peak == trail.max() and values.max() == fields.PNG_LEVELS
    assert np.array_equal(values, fields.png16(trail)[0])
    assert np.abs(values / fields.PNG_LEVELS * peak - trail).max() <= peak / fields.PNG_LEVELS


def test_an_empty_map_is_black():
    values, peak = fields.png16(np.zeros((3, 4), np.float32))
    assert peak == 0 and values.dtype == np.uint16 and not values.any()


def test_species_fields_have_one_map_per_species(tmp_path):
    data = tiny_data(
        species=[{"colour": "#ff0000"}, {"colour": "#00ff00"}],
        output={"formats": ["png"], "fields": {"at": [6], "formats": ["npz", "png"]}},
    )
    preset = build_preset(data, "tiny.yaml")
    render_cpu(preset, tmp_path)
    state = simulated(preset, 6)
    with np.load(tmp_path / "tiny" / "tiny-s3-fields-6.npz", allow_pickle=False) as loaded:
        assert loaded["trail"].shape == (2, 32, 48) and loaded["counts"].shape == (2, 32, 48)
        assert loaded["trail"].tobytes() == state.trail.numpy().tobytes()
        assert loaded["counts"].sum(axis=(1, 2)).tolist() == [preset.agents_per_species] * 2
    assert sorted(p.name for p in (tmp_path / "tiny").glob("*.png") if "fields" in p.name) == [
        "tiny-s3-fields-6-species0.png",
        "tiny-s3-fields-6-species1.png",
    ]


def test_fields_of_a_failed_render_are_not_left(tmp_path, monkeypatch):
    from physarum.render.base.errors import RenderError
    from physarum.render.formats.png import PngWriter

    def broken(self):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(PngWriter, "complete", broken)
    with pytest.raises(RenderError):
        render_cpu(build_preset(DATA, "tiny.yaml"), tmp_path)
    assert not [p for p in (tmp_path / "tiny").iterdir()]


@pytest.mark.parametrize(
    "fields_section, problem",
    [
        ({"at": [0]}, "at least 1"),
        ({"at": [3, 3]}, "more than once"),
        ({"at": [99]}, "after the run's last step"),
        ({"formats": ["tiff"]}, "output.fields.formats"),
    ],
)
def test_bad_field_steps_are_named(fields_section, problem):
    from support import problems_of

    problems = problems_of(tiny_data(output={"fields": fields_section}))
    assert len(problems) == 1 and problem in problems[0], problems


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_during_a_fields_export_leaves_no_part_and_names_the_file(tmp_path, monkeypatch):
    """The step's .npz is staged before its PNG: when the PNG cannot be written (its writes go to
    /dev/full, the kernel's own ENOSPC), the .npz's temporary file goes too; one message names
    the PNG."""
    made = files.create_exclusive

    def full(path):
        descriptor = made(path)
        if path.name.startswith(".tiny-s3-fields-5.png"):
            os.close(descriptor)
            return os.open("/dev/full", os.O_WRONLY)
        return descriptor

    monkeypatch.setattr(files, "create_exclusive", full)
    with pytest.raises(RenderError) as raised:
        render_cpu(build_preset(DATA, "tiny.yaml"), tmp_path)
    assert (
        str(raised.value)
        == f"{tmp_path / 'tiny' / 'tiny-s3-fields-5.png'}: cannot write: No space left on device"
    )
    assert os.listdir(tmp_path / "tiny") == []
