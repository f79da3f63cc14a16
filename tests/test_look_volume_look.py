"""The look of a 3D preset (render/look/volume_look.py): voxel levels and each frame effect
against naive per-voxel and per-pixel Python references, a frame without effects unchanged,
a 3D preset with a look rendered twice to the same bytes (and not to those without it), CPU
against CUDA."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from physarum.kernels.exact import lowbias32_int
from physarum.render.look import hdr
from physarum.render.look.colour import Colourist
from physarum.render.look.volume import VolumeColourist
from physarum.render.look.volume_look import VolumeLook
from physarum.render.preset import build_preset
from physarum.render.preset.look_section import Look
from physarum.render.preset.output_sections import Palette
from support import gif_png_and_loop_on_each_backend, render_cpu, tiny_3d

ONE, DISPLAY = hdr.ONE, hdr.DISPLAY


def _look(**fields) -> tuple[Colourist, VolumeLook]:
    colourist = Colourist(Palette(gamma=0.8), Look(**fields), seed=7)
    return colourist, VolumeLook(colourist.hdr)


def _trail(seed: int, shape=(3, 4, 5)) -> torch.Tensor:
    return torch.from_numpy(np.random.default_rng(seed).random(shape, dtype=np.float32) * 3)


@pytest.mark.parametrize("fields", [{"curve": "reinhard", "exposure": 2.5}, {"curve": "agx", "black": 0.3}])
def test_voxel_levels_equal_the_naive_reference(fields):
    colourist, look = _look(**fields)
    trail = _trail(1)
    low, high = colourist.bounds(trail)
    got = look.levels(trail, low, high, 0).numpy()
    table = hdr.tone_table(fields["curve"], 0.8)
    exposure = np.float32(hdr.float32_nearest(ONE * fields["exposure"]) if "exposure" in fields else ONE)
    scale = min(exposure / np.float32(high.item() - low.item()), np.float32(2.0**100))
    for index, value in np.ndenumerate(trail.numpy()):
        level = int(np.clip(np.floor((value - np.float32(low.item())) * scale), 0, hdr.LMAX))
        assert got[index] == (int(table[level]) * 255 + DISPLAY // 2) // DISPLAY, index
    assert got.max() > got.min()


def _naive_image(rgb: np.ndarray, frame: int, look: Look, seed_key: int) -> np.ndarray:
    """One pixel and channel at a time, the recipe of volume_look.py's docstring written out."""
    height, width = rgb.shape[:2]
    glow = None
    if look.bloom:
        channels = torch.from_numpy(rgb.astype(np.int32)).permute(2, 0, 1)
        levels = hdr.bloom_levels(width, height, look.bloom_radius)
        glow = [
            hdr.bloom(
                (channels[k] * ONE + 127) // 255,
                round(ONE * look.bloom_threshold),
                levels,
                round(256 * look.bloom),
            )
            for k in range(3)
        ]
    sy, sx = hdr.grain_shift(frame, seed_key, height, width)
    out = np.zeros_like(rgb)
    for (y, x, k), c in np.ndenumerate(rgb):
        display = 257 * int(c)
        if glow is not None:
            display = min(DISPLAY, display + int(glow[k][y, x]) * DISPLAY // ONE)
        if look.vignette:
            r2 = (2 * x + 1 - width) ** 2 + (2 * y + 1 - height) ** 2
            f = r2 * ONE // max(1, (width - 1) ** 2 + (height - 1) ** 2)
            display = display * (ONE - round(ONE * look.vignette) * (f * f // ONE) // ONE) >> 12
        if look.grain:
            pixel = ((y - sy) % height) * width + (x - sx) % width
            h = lowbias32_int(lowbias32_int(pixel ^ seed_key))
            noise = (h & 0xFFF) + ((h >> 12) & 0xFFF) - 4095
            display = min(DISPLAY, max(0, display + (noise * round(DISPLAY * look.grain) >> 12)))
        if look.dither:
            offset = (2 * int(hdr.bayer()[y % 8, x % 8]) + 1) * DISPLAY // 128
        else:
            offset = DISPLAY // 2
        out[y, x, k] = (display * 255 + offset) // DISPLAY
    return out


EFFECTS = [
    {"vignette": 0.7},
    {"grain": 0.1},
    {"grain": 0.05, "dither": False},
    {"bloom": 2.0, "bloom_threshold": 0.3, "bloom_radius": 0.2},
    {"bloom": 1.0, "vignette": 0.5, "grain": 0.08},
]


@pytest.mark.parametrize("fields", EFFECTS, ids=["vignette", "grain", "grain-round", "bloom", "all"])
def test_frame_effects_equal_the_naive_reference(fields):
    _, look = _look(**fields)
    rgb = np.random.default_rng(3).integers(0, 256, size=(18, 21, 3)).astype(np.uint8)
    rgb[4:9, 5:12] = 250  # a bright patch that blooms
    for frame in (0, 5):
        got = look.image(torch.from_numpy(rgb), frame).numpy()
        want = _naive_image(rgb, frame, look.hdr.look, look.hdr.seed_key)
        assert np.array_equal(got, want)
        assert not np.array_equal(got, rgb)


def test_a_frame_without_effects_comes_back_unchanged():
    rgb = torch.from_numpy(np.random.default_rng(4).integers(0, 256, size=(9, 10, 3)).astype(np.uint8))
    for dither in (True, False):
        assert torch.equal(_look(curve="log", dither=dither)[1].image(rgb, 3), rgb)


def _bytes(result) -> dict[str, bytes]:
    return {fmt: result.outputs[fmt].read_bytes() for fmt in ("gif", "png")}


def test_a_3d_preset_with_a_look_renders_the_same_bytes_twice(tmp_path):
    look = {"curve": "aces", "exposure": 1.5, "bloom": 1.0, "vignette": 0.4, "grain": 0.05}
    output = {"formats": ["gif", "png"], "fps": 10}
    preset = build_preset(tiny_3d(look=look, output=output), "tiny3d.yaml")
    first = _bytes(render_cpu(preset, tmp_path / "a"))
    assert first == _bytes(render_cpu(preset, tmp_path / "b"))
    plain = _bytes(render_cpu(build_preset(tiny_3d(output=output), "tiny3d.yaml"), tmp_path / "c"))
    assert first["png"] != plain["png"] and first["gif"] != plain["gif"]


@pytest.mark.gpu
def test_cpu_and_cuda_give_the_same_frames_with_a_look():
    look = {"curve": "agx", "black": 0.2, "bloom": 1.5, "vignette": 0.5, "grain": 0.1}
    colourist = VolumeColourist(build_preset(tiny_3d(look=look), "tiny3d.yaml"))
    trail = _trail(5, (10, 12, 16))
    for frame in (0, 1):
        cpu = colourist.render(trail, frame)
        assert torch.equal(cpu, colourist.render(trail.cuda(), frame).cpu())


@pytest.mark.gpu
def test_triton_on_cuda_renders_a_3d_preset_with_a_look_to_the_cpu_bytes(tmp_path):
    look = {"curve": "reinhard", "exposure": 2.0, "bloom": 1.0, "vignette": 0.3, "grain": 0.04}
    preset = build_preset(tiny_3d(look=look, output={"formats": ["gif", "png"], "fps": 10}), "tiny3d.yaml")
    found = gif_png_and_loop_on_each_backend(preset, tmp_path)
    assert found["torch"] == found["triton"]
