"""The time estimate said before a long render (render/run/estimate.py): the simulation's steps
and, for a 3D preset, the ray march of every shown frame (its pixels, samples and lens views)."""

from __future__ import annotations

from physarum.render.preset import build_preset
from physarum.render.run import estimate
from physarum.render.run.estimate import estimate_line, march_seconds, render_seconds
from support import TINY_3D, tiny_3d, tiny_data


def preset_3d(**camera):
    return build_preset(tiny_3d(camera={**TINY_3D["camera"], **camera}), "t.yaml")


def test_a_3d_renders_estimate_counts_its_ray_march():
    """Frames of 4x the pixels, 4x the samples or 4 lens views take about 4x the march; the
    simulation alone does not see them (a 272 s CPU render was once estimated at 0.08 s)."""
    small = preset_3d(width=100, height=100, samples=32)
    base = render_seconds(small, "cpu", "torch")
    for wider in (
        preset_3d(width=200, height=200, samples=32),
        preset_3d(width=100, height=100, samples=128),
        preset_3d(width=100, height=100, samples=32, depth_of_field={"focus": 0.5, "rays": 4}),
    ):
        assert render_seconds(wider, "cpu", "torch") > 3 * base
    frames = small.frames  # no loop: every frame is shown and marched once
    sample_s, pixel_s = estimate.MARCH["cpu"]
    assert march_seconds(small, "cpu") == frames * 100 * 100 * (32 * sample_s + pixel_s)
    assert march_seconds(build_preset(tiny_data(), "t.yaml"), "cpu") == 0.0


def test_a_long_3d_render_says_its_frames():
    preset = preset_3d(width=1024, height=1024, samples=512)
    line = estimate_line(preset, "cpu", "torch")
    assert line is not None and "16x12x10" in line and "frames of 1024x1024 ray-marched" in line
