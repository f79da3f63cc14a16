"""The volume renderer (render/look/volume.py) against a naive per-ray Python reference, the
background of an empty volume, the opacity table, the GIF's exact palette, CPU against CUDA."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch

from physarum.render.base import interrupts
from physarum.render.look import volume
from physarum.render.look.camera import FIX, lens_views, view
from physarum.render.look.volume import (
    alpha_table,
    packed_corners,
    palette_frame,
    reduce_rgb,
    render_volume,
    sample_levels,
)
from physarum.render.preset.camera import Camera


def _levels(seed: int, shape=(6, 7, 5)) -> np.ndarray:
    rng = np.random.default_rng(seed)
    levels = rng.integers(0, 256, size=shape).astype(np.uint8)
    levels[rng.random(shape) < 0.4] = 0  # gaps the rays see through
    return levels


def _palette() -> np.ndarray:
    ramp = np.arange(256)
    return np.stack([ramp, (ramp * 7) % 256, 255 - ramp], 1).astype(np.uint8)


def _naive_level(levels: np.ndarray, point: tuple[int, int, int], mode: str) -> int:
    depth, height, width = levels.shape

    def at(x, y, z):
        inside = 0 <= x < width and 0 <= y < height and 0 <= z < depth
        return int(levels[z, y, x]) if inside else 0

    if mode == "nearest":
        return at(*(c >> FIX for c in point))
    total = 0
    shifted = [c - (1 << (FIX - 1)) for c in point]
    base = [c >> FIX for c in shifted]
    frac = [(c % (1 << FIX)) >> (FIX - 8) for c in shifted]
    for dx in (0, 1):
        for dy in (0, 1):
            for dz in (0, 1):
                w = 1
                for f, d in zip(frac, (dx, dy, dz)):
                    w *= f if d else 256 - f
                total += w * at(base[0] + dx, base[1] + dy, base[2] + dz)
    return (total + (1 << 23)) >> 24


def _naive_render(levels, v, colours, alpha, background, mode, gain=256) -> np.ndarray:
    """One ray at a time in Python integers: the contract of docs/3d.md, written out."""
    out_w, out_h = v.size
    image = np.zeros((out_h, out_w, 3), dtype=np.uint8)
    for j in range(out_h):
        for i in range(out_w):
            d = [
                (out_h * v.forward[a] + v.right[a] * (2 * i + 1 - out_w) + v.up[a] * (out_h - 1 - 2 * j))
                // out_h
                for a in range(3)
            ]
            light, total = 1 << 16, [0, 0, 0]
            for s in v.depths:
                point = tuple(v.origin[a] + ((s * d[a]) >> FIX) for a in range(3))
                level = _naive_level(levels, point, mode)
                weight = (int(alpha[level]) * light) >> 12
                light -= weight
                total = [t + int(c) * weight for t, c in zip(total, colours[level])]
            image[j, i] = [
                min(255, (((t * gain) >> 8) + b * light + (1 << 15)) >> 16) for t, b in zip(total, background)
            ]
    return image


@pytest.mark.parametrize("mode", ["nearest", "trilinear"])
@pytest.mark.parametrize("frame, gain", [(0, 256), (3, 700)])
def test_renderer_equals_the_naive_reference(mode, frame, gain):
    levels = _levels(frame)
    camera = Camera.model_validate(
        {"orbit": {"turns": 1, "elevation": 25}, "fov": 50, "samples": 9, "opacity": 0.6, "sample": mode}
    )
    v = view(camera, levels.shape, (6, 5), frame, 8)
    alpha = alpha_table(camera)
    image = render_volume(
        torch.from_numpy(levels),
        v,
        torch.from_numpy(_palette()),
        torch.from_numpy(alpha),
        (10, 20, 30),
        mode,
        gain,
    )
    expected = _naive_render(levels, v, _palette(), alpha, (10, 20, 30), mode, gain)
    assert image.dtype == torch.uint8 and image.shape == (5, 6, 3)
    assert np.array_equal(image.numpy(), expected)
    assert len(np.unique(expected.reshape(-1, 3), axis=0)) > 3  # the rays saw the volume


def test_an_empty_volume_shows_the_background():
    camera = Camera.model_validate({"orbit": {}, "background": "#123456"})
    v = view(camera, (8, 8, 8), (10, 6), 2, 5)
    image = render_volume(
        torch.zeros((8, 8, 8), dtype=torch.uint8),
        v,
        torch.from_numpy(_palette()),
        torch.from_numpy(alpha_table(camera)),
        (0x12, 0x34, 0x56),
    )
    assert (image.numpy() == [0x12, 0x34, 0x56]).all()


def test_an_opaque_wall_hides_the_background():
    camera = Camera.model_validate(
        {"position": [0, 0, 3], "fov": 20, "opacity": 1, "floor": 0, "sample": "nearest"}
    )
    levels = torch.full((8, 8, 8), 255, dtype=torch.uint8)
    image = render_volume(
        levels,
        view(camera, (8, 8, 8), (4, 4), 0, 1),
        torch.from_numpy(_palette()),
        torch.from_numpy(alpha_table(camera)),
        (9, 9, 9),
        "nearest",
    )
    assert (image.numpy() == _palette()[255]).all()  # the first sample absorbs all the light


def test_alpha_table_is_exact_and_starts_at_the_floor():
    camera = Camera.model_validate({"opacity": 0.5, "floor": 10, "curve": 2})
    table = alpha_table(camera)
    assert (table[:10] == 0).all()
    assert table[255] == 2048
    assert table[100] == round(4096 * Fraction(1, 2) * Fraction(100, 255) ** 2)
    assert (np.diff(table[10:]) >= 0).all()


def test_reduce_rgb_is_exact_for_few_distinct_colours():
    rng = np.random.default_rng(3)
    colours = np.array(
        [[8 * (k % 32), 8 * ((k * 5) % 32), 8 * ((k * 11) % 32)] for k in range(200)], np.uint8
    )
    rgb = colours[rng.integers(0, 200, size=(20, 30))]
    index, palette = reduce_rgb(torch.from_numpy(rgb))
    assert index.shape == (20, 30) and palette.shape == (256, 3)
    assert np.array_equal(palette[index.numpy()], rgb)


@pytest.mark.gpu
def test_cpu_and_cuda_render_the_same_bytes():
    rng = np.random.default_rng(5)
    levels = torch.from_numpy(rng.integers(0, 256, size=(40, 48, 56)).astype(np.uint8))
    camera = Camera.model_validate({"orbit": {"turns": 1, "elevation": 30}, "fov": 45, "opacity": 0.1})
    alpha = torch.from_numpy(alpha_table(camera))
    for frame in range(3):
        v = view(camera, tuple(levels.shape), (96, 64), frame, 3)
        cpu = render_volume(levels, v, torch.from_numpy(_palette()), alpha, (1, 2, 3))
        cuda = render_volume(levels.cuda(), v, torch.from_numpy(_palette()).cuda(), alpha.cuda(), (1, 2, 3))
        assert torch.equal(cpu, cuda.cpu())
        packed = render_volume(  # torch on the GPU (packed corners), not the Triton kernel
            levels.cuda(), v, torch.from_numpy(_palette()).cuda(), alpha.cuda(), (1, 2, 3), kernel=False
        )
        assert torch.equal(cpu, packed.cpu())
        assert all(torch.equal(a, b.cpu()) for a, b in zip(reduce_rgb(cpu)[:1], reduce_rgb(cuda)[:1]))
        assert np.array_equal(reduce_rgb(cpu)[1], reduce_rgb(cuda)[1])


def test_packed_trilinear_equals_the_eight_gathers():
    """The torch path's packed corners (two gathers) give the eight-gather sum exactly, also for
    points on the faces, just outside and far outside the grid (level 0 there)."""
    levels = torch.from_numpy(_levels(5, (5, 6, 7)))
    levels[:, :, -1] = 255  # a full face: its neighbours outside must still read it exactly
    grid = tuple(levels.shape)
    padded = torch.nn.functional.pad(levels, (1, 1, 1, 1, 1, 1)).reshape(-1)
    generator = torch.Generator().manual_seed(3)
    points = [
        torch.randint(-4 << FIX, (side + 4) << FIX, (4000,), generator=generator, dtype=torch.int64)
        for side in (grid[2], grid[1], grid[0])
    ]
    eight = sample_levels(padded, grid, points, "trilinear")
    packed = sample_levels(padded, grid, points, "trilinear", packed_corners(levels))
    assert torch.equal(eight, packed)
    assert 0 < int((eight == 0).sum()) < 4000 and int(eight.max()) > 200  # inside and outside


def test_small_chunks_render_the_naive_reference(monkeypatch):
    """Chunks of a few samples (the loop over CHUNK_ELEMENTS) give the same bytes."""
    monkeypatch.setattr(volume, "CPU_CHUNK_ELEMENTS", 61)
    levels = _levels(9)
    camera = Camera.model_validate(
        {"orbit": {"elevation": 10, "distance": 0.8}, "samples": 11, "opacity": 0.5}
    )
    v = view(camera, levels.shape, (7, 4), 2, 8)
    alpha = alpha_table(camera)
    image = render_volume(
        torch.from_numpy(levels), v, torch.from_numpy(_palette()), torch.from_numpy(alpha), (1, 2, 3)
    )
    expected = _naive_render(levels, v, _palette(), alpha, (1, 2, 3), "trilinear")
    assert np.array_equal(image.numpy(), expected)
    assert len(np.unique(expected.reshape(-1, 3), axis=0)) > 3


# ---------------------------------------------------------------------------------------------
# Depth of field: the mean of a thin lens's views


def test_lens_mean_is_the_rounded_mean():
    rng = np.random.default_rng(3)
    frames = [rng.integers(0, 256, size=(5, 4, 3)).astype(np.uint8) for _ in range(6)]
    got = volume.lens_mean([torch.from_numpy(f) for f in frames])
    total = sum(f.astype(np.int64) for f in frames)
    assert got.dtype == torch.uint8 and np.array_equal(got.numpy(), (total + 3) // 6)


def _blob_frames(focus: float | None) -> tuple[np.ndarray, np.ndarray]:
    """A bright 3^3 blob at the volume's centre seen from 2.5 half sides away: the pinhole frame
    and the mean of a lens's views focused at `focus` (None: on the target, the blob)."""
    levels = np.zeros((33, 33, 33), dtype=np.uint8)
    levels[15:18, 15:18, 15:18] = 255
    lens = {"aperture": 0.4, "rays": 12, **({} if focus is None else {"focus": focus})}
    camera = Camera.model_validate(
        {"position": [0, 0, 2.5], "fov": 30, "opacity": 1, "sample": "nearest", "depth_of_field": lens}
    )
    arguments = (torch.from_numpy(_palette()), torch.from_numpy(alpha_table(camera)), (0, 0, 0), "nearest")
    pinhole = render_volume(torch.from_numpy(levels), view(camera, levels.shape, (48, 48), 0, 1), *arguments)
    views = lens_views(camera, levels.shape, (48, 48), 0, 1)
    lens_frame = volume.lens_mean([render_volume(torch.from_numpy(levels), v, *arguments) for v in views])
    return pinhole.numpy().astype(int), lens_frame.numpy().astype(int)


def test_what_lies_on_the_focus_plane_stays_sharp_and_the_rest_blurs():
    """Focused on the blob (6x6 pixels through a pinhole), the lens keeps it within a pixel of
    its edges at full brightness (the lens sees a little round its sides); focused well in front
    of it, the blob spreads over many times the pixels, dimmer."""
    pinhole, sharp = _blob_frames(None)
    _, nearer = _blob_frames(2.0)
    _, blurred = _blob_frames(1.2)
    lit = lambda image: int((image.sum(axis=2) > 30).sum())  # noqa: E731
    assert lit(pinhole) == 36 and lit(sharp) <= 64 and sharp.max() == pinhole.max()
    assert lit(sharp) < lit(nearer) < lit(blurred) and lit(blurred) > 8 * lit(pinhole)
    assert blurred.max() < pinhole.max() // 2


def test_a_3d_preset_with_depth_of_field_renders_its_lens_frames(tmp_path):
    """Through the pipeline: the PNG of a preset with a lens is the lens's mean frame (it differs
    from the pinhole's), the same bytes twice."""
    from PIL import Image

    from physarum.render.preset import build_preset
    from support import render_cpu, tiny_3d

    lens = {**tiny_3d()["camera"], "depth_of_field": {"aperture": 0.3, "focus": 2.0, "rays": 4}}
    found = {}
    for name, camera in (("pinhole", tiny_3d()["camera"]), ("lens", lens), ("again", lens)):
        data = tiny_3d(camera=camera, output={"formats": ["png"]})
        result = render_cpu(build_preset(data, "tiny3d.yaml"), tmp_path / name)
        with Image.open(result.outputs["png"]) as image:
            found[name] = np.asarray(image.convert("RGB"))
    assert found["lens"].shape == found["pinhole"].shape
    assert not np.array_equal(found["lens"], found["pinhole"]) and np.array_equal(
        found["lens"], found["again"]
    )


def test_a_signal_stops_the_march_between_chunks(monkeypatch):
    """SIGTERM during a frame is honoured at the next chunk of samples (interrupts.stop_if_requested),
    not after the whole ray march: a large frame on a CPU marches for tens of seconds."""
    monkeypatch.setattr(volume, "CPU_CHUNK_ELEMENTS", 40)  # a chunk of one or two samples
    levels = _levels(4)
    camera = Camera.model_validate({"orbit": {}, "samples": 12})
    v = view(camera, levels.shape, (6, 5), 0, 8)
    marched = []
    sample = volume.sample_levels

    def signalled(*args, **kwargs):
        marched.append(1)
        interrupts.stop_requested.append(signal.SIGTERM)  # arrives during the first chunk
        return sample(*args, **kwargs)

    monkeypatch.setattr(volume, "sample_levels", signalled)
    try:
        with pytest.raises(interrupts.Terminated):
            render_volume(
                torch.from_numpy(levels),
                v,
                torch.from_numpy(_palette()),
                torch.from_numpy(alpha_table(camera)),
                (0, 0, 0),
            )
    finally:
        interrupts.stop_requested.clear()
    assert len(marched) == 1  # of 12 samples in chunks of 1 (pixels 30: 40 // 30)


_PEAK = """
import sys, torch
from physarum.render.look.volume import VolumeColourist
from physarum.render.preset import build_preset
from support import tiny_3d
side = int(sys.argv[1])
torch.set_num_threads(1)
camera = {"orbit": {}, "width": side, "height": side, "samples": 16}
colourist = VolumeColourist(build_preset(tiny_3d(canvas={"width": 32, "height": 32, "depth": 32}, camera=camera), "t.yaml"))
trail = torch.rand((32, 32, 32), generator=torch.Generator().manual_seed(1)) * 5
def status(key):
    line = next(l for l in open("/proc/self/status") if l.startswith(key + ":"))
    return int(line.split()[1]) * 1024
open("/proc/self/clear_refs", "w").write("5")  # the peak (VmHWM) from now: not the imports'
before = status("VmRSS")
colourist.colour(trail, 0)
print(status("VmHWM") - before)
"""


@pytest.mark.slow  # two fresh processes render a camera frame each
@pytest.mark.skipif(sys.platform != "linux", reason="/proc/self/status and clear_refs are Linux's")
def test_the_memory_check_counts_what_a_camera_pixel_takes():
    """The peak memory of one frame grows by at most volume.PIXEL_BYTES a camera pixel (measured
    in fresh processes on the CPU, where a chunk is one sample of every pixel: the largest share)."""
    tests = Path(__file__).parent

    def peak(side: int) -> int:
        run = [sys.executable, "-c", _PEAK, str(side)]
        done = subprocess.run(
            run,
            capture_output=True,
            text=True,
            check=True,
            cwd=tests,
            env={**os.environ, "PYTHONPATH": str(tests)},
        )
        return int(done.stdout.split()[-1])

    small, large = 512, 896
    slope = (peak(large) - peak(small)) / (large * large - small * small)
    assert 200 < slope <= volume.PIXEL_BYTES, slope


def _reduce_rgb_before(rgb):
    """reduce_rgb as it was before palette_frame (bincount, unique, int64 distances): the bytes the
    golden 3D renders were pinned with."""
    wide = rgb.reshape(-1, 3).to(torch.int64)
    bins = ((wide[:, 0] >> 3) << 10) | ((wide[:, 1] >> 3) << 5) | (wide[:, 2] >> 3)
    counts = torch.bincount(bins, minlength=1 << 15)
    sums = torch.zeros((1 << 15, 3), dtype=torch.int64).index_add_(0, bins, wide)
    key = counts * (1 << 15) + torch.arange(1 << 15)
    chosen = torch.topk(key, 256).values % (1 << 15)
    used = counts[chosen] > 0
    count = counts[chosen].clamp(min=1)[:, None]
    means = torch.where(used[:, None], (sums[chosen] * 2 + count) // (2 * count), 0)
    luma = means[:, 0] * 299 + means[:, 1] * 587 + means[:, 2] * 114
    order = torch.sort(torch.where(used, luma, 1 << 30) * (1 << 15) + chosen).indices
    means, used = means[order], used[order]
    present, inverse = torch.unique(bins, return_inverse=True)
    occupied = counts[present].clamp(min=1)[:, None]
    colour = (sums[present] * 2 + occupied) // (2 * occupied)
    distance = ((colour[:, None, :] - means[None, :, :]) ** 2).sum(-1)
    distance = torch.where(used[None, :], distance, 1 << 40) * 256 + torch.arange(256)
    lookup = distance.min(1).values % 256
    return lookup[inverse].to(torch.uint8).reshape(rgb.shape[:2]), means.to(torch.uint8).numpy()


@pytest.mark.parametrize("kind", ["smooth", "noise", "few", "one"])
def test_palette_frame_searches_every_bin_or_the_present_ones_alike(kind):
    """palette_frame without a wait (every bin: a GPU's path) and with unique (the bins present: a
    CPU's) give the index and palette reduce_rgb gave before it, for frames of many colours (more
    than 256 bins), of few, and of one."""
    rng = np.random.default_rng(11)
    if kind == "smooth":
        y, x = np.mgrid[0:90, 0:120]
        rgb = np.stack([x * 2, y * 2 + x // 3, (x * y) % 256], -1).astype(np.uint8)
    elif kind == "noise":
        rgb = rng.integers(0, 256, size=(64, 80, 3), dtype=np.uint8)
    elif kind == "few":
        rgb = rng.choice(np.array([[0, 0, 0], [250, 10, 30], [12, 200, 90]], np.uint8), size=(30, 40))
    else:
        rgb = np.full((16, 16, 3), 77, np.uint8)
    frame = torch.from_numpy(rgb)
    before_index, before_palette = _reduce_rgb_before(frame)
    for every_bin in (True, False):
        index, palette = palette_frame(frame, every_bin)
        assert torch.equal(index, before_index), (kind, every_bin)
        assert np.array_equal(palette.numpy(), before_palette), (kind, every_bin)
