"""GIF bytes: the exact reductions keep every shown colour a palette entry, the header matches
the layout the writer always wrote, and a frame's block decodes to its indices."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from physarum.render.formats.gif_file import (
    TRAILER,
    Digits,
    Reduction,
    area_downscale,
    delay_ms,
    frame_block,
    header,
    kept_frames,
    level_palette,
    reduce_levels,
)
from physarum.render.look.colour import palette_table

RNG = np.random.default_rng(16)


def _decode(width: int, height: int, palette: bytes, block: bytes) -> Image.Image:
    data = header(width, height, palette, 0, "c") + block + TRAILER
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


@pytest.mark.parametrize("levels", [256, 128, 64, 32, 16])
def test_reduced_levels_show_exact_palette_colours(levels):
    palette = palette_table("magma").tobytes()
    index = RNG.integers(0, 256, (37, 53), dtype=np.uint8)
    reduced, table = reduce_levels(index, levels), level_palette(palette, levels)
    assert len(table) == 3 * levels and int(reduced.max()) < levels
    shown = np.frombuffer(table, dtype=np.uint8).reshape(-1, 3)[reduced]
    group = 256 // levels
    expected = palette_table("magma")[(index // group) * group + group // 2]
    assert np.array_equal(shown, expected)
    decoded = _decode(53, 37, table, frame_block(reduced, table, False, 40))
    assert np.array_equal(np.asarray(decoded.convert("RGB")), expected)


def test_area_downscale_is_the_rounded_block_mean_and_crops_the_rest():
    index = RNG.integers(0, 256, (31, 44), dtype=np.uint8)
    out = area_downscale(index, 3)
    assert out.shape == (10, 14)
    block = index[3:6, 6:9].astype(int)
    assert out[1, 2] == (block.sum() + 4) // 9


def test_area_downscale_of_species_digits_averages_each_digit():
    k = 16
    first, second = RNG.integers(0, k, (8, 8)), RNG.integers(0, k, (8, 8))
    index = (first + k * second).astype(np.uint8)
    out = area_downscale(index, 2, Digits(k, 2)).astype(int)
    mean = lambda d: (d.reshape(4, 2, 4, 2).sum(axis=(1, 3)) + 2) // 4  # noqa: E731
    assert np.array_equal(out % k, mean(first)) and np.array_equal(out // k, mean(second))


def test_header_is_the_writers_layout_for_a_full_palette():
    palette = palette_table("ice").tobytes()
    data = header(300, 200, palette, 3, "x" * 600)
    assert data[:13] == b"GIF89a" + (300).to_bytes(2, "little") + (200).to_bytes(2, "little") + b"\xf7\0\0"
    assert data[13 : 13 + 768] == palette
    assert header(8, 8, palette[:48], 0, "")[10] == 0xF3  # 16 entries


def test_stride_keeps_the_last_frame_and_lengthens_the_delay():
    assert kept_frames(10, 3) == [0, 3, 6, 9] and kept_frames(11, 3)[-1] == 10
    assert kept_frames(5, 1) == list(range(5))
    assert delay_ms(30, 2) == 2 * delay_ms(30)


def test_a_frames_block_is_downscaled_then_its_levels_reduced():
    from physarum.render.formats.gif_pool import FrameTask, compress

    index = RNG.integers(0, 256, (20, 20), dtype=np.uint8)
    palette = palette_table("magma").tobytes()
    block = compress(FrameTask(index, palette, Reduction(32, 2, 1), Digits(), False, 40))
    got = np.asarray(_decode(10, 10, level_palette(palette, 32), block))
    assert np.array_equal(got, area_downscale(index, 2) // 8)


def test_weighted_levels_show_each_group_by_its_pixels_colours():
    """A 3D frame's palette sorted by luma: black first, the background. At 16 levels the
    middle of the darkest group is a dark shade (level_palette); weighted by the pixels, the
    group is the rounded mean of what its pixels show: black where black is most of them, the
    middle entry where no pixel holds the group, and 256 levels are the palette itself."""
    from physarum.render.formats.gif_file import weighted_level_palette

    table = np.stack([np.arange(256), np.arange(256) // 2, np.arange(256) // 4], 1).astype(np.uint8)
    palette = table.tobytes()
    index = np.zeros((10, 10), dtype=np.uint8)
    index[0, :3] = 5  # 97 black pixels and 3 of entry 5 in group 0
    index[1, 0] = 40  # one pixel of group 2
    weighted = np.frombuffer(weighted_level_palette(palette, index, 16), dtype=np.uint8).reshape(16, 3)
    middle = np.frombuffer(level_palette(palette, 16), dtype=np.uint8).reshape(16, 3)
    assert middle[0].tolist() == [8, 4, 2]
    assert weighted[0].tolist() == [(2 * 15 + 100) // 200, (2 * 6 + 100) // 200, (2 * 3 + 100) // 200]
    assert weighted[2].tolist() == table[40].tolist() and weighted[1].tolist() == middle[1].tolist()
    assert weighted_level_palette(palette, index, 256) == palette
