"""Colouring: levels and gamma through thresholds, palettes, alternation, preview scaling."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from physarum.render.colour import Colourist, downscale, gamma_levels
from physarum.render.palette import palette_table, parse_hex
from physarum.render.preset import Palette


def test_index_matches_the_levels_and_gamma_formula():
    palette = Palette(names=["gray"], gamma=0.5, levels={"low": 1.0, "high": 5.0})
    trail = torch.linspace(0.0, 6.0, 4001, dtype=torch.float32)
    index = Colourist(palette).index_frame(trail.reshape(1, -1)).reshape(-1).numpy().astype(int)
    level = np.clip((trail.numpy().astype(np.float64) - 1.0) / 4.0, 0, 1)
    expected = np.floor(255 * level**0.5 + 0.5).astype(int)
    # thresholds are float32, so cells within rounding of a boundary may land one step apart
    assert np.abs(index - expected).max() <= 1 and (index == expected).mean() > 0.99
    assert index[0] == 0 and index[-1] == 255 and np.all(np.diff(index) >= 0)


def test_auto_high_puts_the_quantile_at_full_brightness():
    trail = torch.arange(1000, dtype=torch.float32).reshape(20, 50)
    palette = Palette(names=["gray"], levels={"low": 0.0, "high": "auto", "quantile": 0.9})
    index = Colourist(palette).index_frame(trail)
    # high is the 900th smallest value (899); index 255 starts half a step below it, at
    # 899 * 254.5 / 255 = 897.2
    flat = index.flatten()
    assert flat[899] == 255 and flat[898] == 255 and flat[897] == 254
    assert (index == 255).sum() == 102


def test_empty_trail_is_black_not_an_error():
    index = Colourist(Palette()).index_frame(torch.zeros(8, 8))
    assert int(index.max()) == 0


def test_gamma_levels_are_ascending_in_unit_interval():
    levels = gamma_levels(0.7)
    assert levels.shape == (255,) and np.all(np.diff(levels) > 0) and 0 < levels[0] < levels[-1] < 1


def test_palettes_alternate_every_n_frames():
    colourist = Colourist(Palette(names=["magma", "ice", ["#000", "#fff"]], every=2))
    assert [colourist.palette_index(f) for f in range(7)] == [0, 0, 1, 1, 2, 2, 0]
    index = torch.tensor([[0, 255]], dtype=torch.uint8)
    assert colourist.rgb(index, 4).tolist() == [[[0, 0, 0], [255, 255, 255]]]
    np.testing.assert_array_equal(colourist.table(2), palette_table("ice"))


def test_named_and_hex_palettes():
    magma = palette_table("magma")
    assert magma.shape == (256, 3) and magma.dtype == np.uint8
    assert tuple(magma[0]) == parse_hex("#000004") and tuple(magma[255]) == parse_hex("fcfdbf")
    cave = palette_table("cave")
    assert len({tuple(c) for c in cave}) == 8  # qualitative: flat bands
    with pytest.raises(ValueError, match="not a hex colour"):
        parse_hex("#12345")


def test_downscale_is_exact_nearest_sampling():
    index = torch.arange(12 * 10, dtype=torch.int64).reshape(12, 10).to(torch.uint8)
    small = downscale(index, (5, 6))
    assert small.shape == (6, 5)
    assert small.tolist() == index[1::2, 1::2].tolist()
    assert downscale(index, (10, 12)) is index
