"""render/out/specs.py: the floor a GIF budget may not go below, before a render."""

from __future__ import annotations

from physarum.render.formats.gif_budget import reduced_bytes
from physarum.render.formats.gif_file import Digits, kept_frames
from physarum.render.out.specs import MIN_GIF_FRAMES, MIN_GIF_SIDE, floor_reduction


def test_the_floor_keeps_8_frames_and_64_pixels_or_all_there_are():
    floor = floor_reduction(512, 256, 80, Digits())
    assert 256 // floor.factor >= MIN_GIF_SIDE and 256 // (floor.factor + 1) < MIN_GIF_SIDE
    assert len(kept_frames(80, floor.stride)) >= MIN_GIF_FRAMES > len(kept_frames(80, floor.stride + 1))
    assert floor.levels == 16
    small = floor_reduction(48, 32, 5, Digits(6, 2))  # smaller than the floor: all of it, 256 levels
    assert (small.factor, small.stride, small.levels) == (1, 1, 256)


def test_reduced_bytes_grow_with_text_frames_and_size():
    palettes = [bytes(range(256)) * 3] * 20
    floor = floor_reduction(256, 256, 20, Digits())
    least = reduced_bytes(256, 256, palettes, 0, "x", floor)
    assert least < reduced_bytes(256, 256, palettes, 0, "x" * 100, floor)
    milder = floor_reduction(256, 256, 20, Digits()).__class__(16, 1, 1)
    assert least < reduced_bytes(256, 256, palettes, 0, "x", milder)
