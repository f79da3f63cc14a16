"""The Triton kernel of the volume renderer (render/look/volume_kernel.py) against the PyTorch
code, byte for byte, in Triton's CPU interpreter (tiny volumes) and on CUDA (gpu)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from physarum.render.look.camera import lens_views, view
from physarum.render.look.volume import alpha_table, render_volume
from physarum.render.preset.camera import Camera


def _case(seed: int, shape=(6, 7, 9)):
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 256, size=shape).astype(np.uint8)
    levels[rng.random(shape) < 0.5] = 0
    ramp = np.arange(256)
    colours = np.stack([ramp, (ramp * 5) % 256, 255 - ramp], 1).astype(np.uint8)
    return torch.from_numpy(levels), torch.from_numpy(colours)


@pytest.mark.interpreter(cpu=True)
@pytest.mark.parametrize("mode", ["nearest", "trilinear"])
def test_kernel_equals_the_torch_renderer_in_the_interpreter(mode):
    levels, colours = _case(1)
    camera = Camera.model_validate(
        {"orbit": {"turns": 1, "elevation": 30}, "fov": 55, "samples": 7, "opacity": 0.5, "sample": mode}
    )
    alpha = torch.from_numpy(alpha_table(camera))
    for frame in (0, 2):
        v = view(camera, tuple(levels.shape), (11, 6), frame, 5)  # 66 rays: a partly masked block
        plain = render_volume(levels, v, colours, alpha, (7, 8, 9), mode, 600, kernel=False)
        fused = render_volume(levels, v, colours, alpha, (7, 8, 9), mode, 600, kernel=True)
        assert torch.equal(plain, fused)
        assert len(torch.unique(plain.reshape(-1, 3), dim=0)) > 3


@pytest.mark.interpreter(cpu=True)
def test_kernel_equals_the_torch_renderer_for_a_lens_view():
    """A thin lens's views (render/look/camera.py, lens_views) move the origin off the orbit and
    tilt forward: the kernel takes them as any view."""
    levels, colours = _case(3)
    camera = Camera.model_validate(
        {
            "orbit": {"elevation": 10},
            "samples": 6,
            "opacity": 0.5,
            "depth_of_field": {"aperture": 0.4, "rays": 3},
        }
    )
    alpha = torch.from_numpy(alpha_table(camera))
    for v in lens_views(camera, tuple(levels.shape), (9, 7), 1, 4):
        plain = render_volume(levels, v, colours, alpha, (7, 8, 9), "trilinear", 400, kernel=False)
        assert torch.equal(
            plain, render_volume(levels, v, colours, alpha, (7, 8, 9), "trilinear", 400, kernel=True)
        )


@pytest.mark.interpreter(cpu=True)
@pytest.mark.parametrize("mode", ["nearest", "trilinear"])
def test_kernel_equals_the_torch_renderer_from_far_away_and_from_inside(mode):
    """A wide camera 1,000 half sides of a 300-voxel side away (its rays' 16.16 positions at the
    volume's depths reach past 2^31 sideways, which the kernel clamps before its 32-bit
    arithmetic), and a camera inside the volume, whose first samples lie behind it."""
    levels, colours = _case(4, (6, 40, 300))
    for place in ({"position": [0.3, -0.2, 1000.0], "fov": 150}, {"position": [0.1, 0.2, 0.3], "fov": 100}):
        camera = Camera.model_validate({**place, "samples": 9, "opacity": 0.7, "sample": mode})
        alpha = torch.from_numpy(alpha_table(camera))
        v = view(camera, tuple(levels.shape), (16, 12), 0, 1)
        plain = render_volume(levels, v, colours, alpha, (7, 8, 9), mode, 300, kernel=False)
        assert torch.equal(plain, render_volume(levels, v, colours, alpha, (7, 8, 9), mode, 300, kernel=True))
        if place["fov"] == 100:
            assert len(torch.unique(plain.reshape(-1, 3), dim=0)) > 2


@pytest.mark.gpu
@pytest.mark.parametrize("mode", ["nearest", "trilinear"])
def test_kernel_on_cuda_equals_the_torch_renderer_on_the_cpu(mode):
    levels, colours = _case(2, (40, 50, 60))
    camera = Camera.model_validate({"orbit": {"turns": 1, "elevation": 20}, "opacity": 0.1, "sample": mode})
    alpha = torch.from_numpy(alpha_table(camera))
    for frame in range(3):
        v = view(camera, tuple(levels.shape), (130, 70), frame, 3)
        cpu = render_volume(levels, v, colours, alpha, (1, 2, 3), mode, 300, kernel=False)
        cuda = render_volume(
            levels.cuda(), v, colours.cuda(), alpha.cuda(), (1, 2, 3), mode, 300, kernel=True
        )
        assert torch.equal(cpu, cuda.cpu())


@pytest.mark.slow
def test_the_kernel_compiles_for_sm90():
    """Ahead of time on the CPU, in a process without TRITON_INTERPRET (which replaces the compiler)."""
    pytest.importorskip("triton")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    code = "from physarum.render.look.volume_kernel import compile_for; print('compiled', compile_for(90))"
    result = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0 and "compiled 2" in result.stdout, result.stdout + result.stderr
