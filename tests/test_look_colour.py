"""Colouring: levels and gamma through thresholds, alternation, preview scaling, species."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from physarum.render.look.colour import (
    PRODUCT_LEVELS,
    Colourist,
    SpeciesColourist,
    blend_table,
    downscale,
    gamma_levels,
    gif_resample,
    make_colourist,
    product_palette,
    species_ramp,
)
from physarum.render.look.palette import palette_table
from physarum.render.preset import Palette, build_preset
from support import tiny_data


def test_index_matches_the_levels_and_gamma_formula():
    palette = Palette(names=["gray"], gamma=0.5, levels={"low": 1.0, "high": 5.0})
    trail = torch.linspace(0.0, 6.0, 4001, dtype=torch.float32)
    index = Colourist(palette).index_frame(trail.reshape(1, -1)).reshape(-1).numpy().astype(int)
    level = np.clip((trail.numpy().astype(np.float64) - 1.0) / 4.0, 0, 1)
    expected = np.floor(255 * level**0.5 + 0.5).astype(int)
    # thresholds are float32, so cells within rounding of a boundary may land one step apart
    assert np.abs(index - expected).max() <= 1 and (index == expected).mean() > 0.99
    assert index[0] == 0 and index[-1] == 255 and np.all(np.diff(index) >= 0)


def test_a_cell_exactly_at_a_threshold_takes_its_index():
    """A cell's index is the number of thresholds at or below it: one equal to a threshold
    counts it (the thresholds computed as the colourist does, in float32)."""
    palette = Palette(names=["gray"], gamma=0.7, levels={"low": 1.0, "high": 5.0})
    low, high = torch.tensor(1.0), torch.tensor(5.0)
    thresholds = (high - low) * torch.from_numpy(gamma_levels(0.7)) + low
    index = Colourist(palette).index_frame(thresholds.reshape(1, -1)).reshape(-1)
    at_or_below = (thresholds[None, :] <= thresholds[:, None]).sum(dim=1)
    assert index.tolist() == at_or_below.tolist() and index[0] == 1 and index[-1] == 255


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


def test_blend_tables_are_exact_integer_mixes_with_the_palettes_at_their_ends():
    before, after = palette_table("magma"), palette_table("ice")
    for steps in (1, 2, 5):
        np.testing.assert_array_equal(blend_table(before, after, 0, steps), before)
        np.testing.assert_array_equal(blend_table(before, after, steps + 1, steps), after)
        for k in range(1, steps + 1):
            mixed = (before.astype(np.float64) * (steps + 1 - k) + after.astype(np.float64) * k) / (steps + 1)
            got = blend_table(before, after, k, steps).astype(np.float64)
            assert np.abs(got - mixed).max() <= 0.5  # each entry rounded to nearest


def test_a_blend_crossfades_over_the_last_frames_of_each_block():
    colourist = Colourist(Palette(names=["magma", "ice"], every=4, blend=2))
    magma, ice = palette_table("magma"), palette_table("ice")
    assert [colourist.blend_step(f) for f in range(9)] == [0, 0, 1, 2, 0, 0, 1, 2, 0]
    np.testing.assert_array_equal(colourist.table(1), magma)
    np.testing.assert_array_equal(colourist.table(2), blend_table(magma, ice, 1, 2))
    np.testing.assert_array_equal(colourist.table(3), blend_table(magma, ice, 2, 2))
    np.testing.assert_array_equal(colourist.table(4), ice)
    np.testing.assert_array_equal(colourist.table(7), blend_table(ice, magma, 2, 2))  # back to magma
    index = torch.arange(256, dtype=torch.uint8)[None]
    for frame in range(9):  # the RGB frame is the GIF's table looked up: the same picture
        np.testing.assert_array_equal(colourist.rgb(index, frame)[0].numpy(), colourist.table(frame))


def test_no_blend_keeps_the_hard_cut():
    cut = Colourist(Palette(names=["magma", "ice"], every=3))
    assert {cut.blend_step(f) for f in range(12)} == {0}
    assert [cut.table(f) is cut.tables[cut.palette_index(f)] for f in range(6)] == [True] * 6


def test_downscale_is_exact_nearest_sampling():
    index = torch.arange(12 * 10, dtype=torch.int64).reshape(12, 10).to(torch.uint8)
    small = downscale(index, (5, 6))
    assert small.shape == (6, 5)
    assert small.tolist() == index[1::2, 1::2].tolist()
    assert downscale(index, (10, 12)) is index


def slow_area(index: np.ndarray, width: int, height: int, base: int = 256, digits: int = 1) -> np.ndarray:
    """The area mean, obviously: each output pixel's box [j * H / h, (j + 1) * H / h) x [...] in
    exact fractions, the covered share of every source pixel, digit by digit, rounded half up."""
    source_h, source_w = index.shape
    out = np.zeros((height, width), dtype=np.int64)
    for j in range(height):
        for i in range(width):
            y0, y1 = Fraction(j * source_h, height), Fraction((j + 1) * source_h, height)
            x0, x1 = Fraction(i * source_w, width), Fraction((i + 1) * source_w, width)
            for d in range(digits):
                total = Fraction(0)
                for y in range(source_h):
                    for x in range(source_w):
                        share = max(0, min(y1, y + 1) - max(y0, y)) * max(0, min(x1, x + 1) - max(x0, x))
                        total += share * (int(index[y, x]) // base**d % base)
                mean = total / ((y1 - y0) * (x1 - x0))
                out[j, i] += int(mean + Fraction(1, 2)) * base**d
    return out


@pytest.mark.parametrize(
    "shape, size", [((12, 10), (4, 5)), ((7, 9), (2, 3)), ((16, 16), (4, 4)), ((9, 5), (5, 9))]
)
def test_area_downscale_is_the_exact_area_mean(shape, size):
    index = torch.from_numpy(np.random.default_rng(sum(shape)).integers(0, 256, shape, dtype=np.uint8))
    small = downscale(index, size, "area")
    assert small.dtype == torch.uint8 and small.shape == (size[1], size[0])
    np.testing.assert_array_equal(small.numpy(), slow_area(index.numpy(), *size))


def test_area_downscale_averages_species_digits_apart():
    index = torch.from_numpy(np.random.default_rng(2).integers(0, 256, (10, 14), dtype=np.uint8))
    small = downscale(index, (5, 4), "area", (16, 2))
    np.testing.assert_array_equal(small.numpy(), slow_area(index.numpy(), 5, 4, 16, 2))
    flat = torch.full((8, 8), 37, dtype=torch.uint8)  # a flat frame stays itself, nearest or area
    assert downscale(flat, (3, 5), "area").unique().tolist() == [37]


def test_gif_resample_follows_the_output_key_but_never_averages_hues():
    plain = build_preset(tiny_data(), "t.yaml")
    assert gif_resample(plain) == ("nearest", (256, 1))
    area = build_preset(tiny_data(output={"gif_resample": "area"}), "t.yaml")
    assert gif_resample(area) == ("area", (256, 1))
    heading = build_preset(tiny_data(output={"gif_resample": "area"}, palette={"layer": "heading"}), "t.yaml")
    assert gif_resample(heading)[0] == "nearest"


def fixed_levels() -> Palette:
    """low 0, high 255, gamma 1: a trail value v (integer) shows at level v exactly."""
    return Palette(levels={"low": 0.0, "high": 255.0}, gamma=1.0)


def test_species_blend_and_product_index_by_hand():
    ramps = np.stack([species_ramp("#ff0000", None), species_ramp("#0080ff", None)])
    colourist = SpeciesColourist(fixed_levels(), ramps)
    maps = torch.tensor([[[100.0, 255.0, 0.0]], [[200.0, 255.0, 0.0]]])  # [S=2, H=1, W=3]
    assert colourist.level_frames(maps).tolist() == [[[100, 255, 0]], [[200, 255, 0]]]
    index, rgb = colourist.colour(maps, 0)
    # (100*255//255, 0, 0) + (0, 200*128//255, 200*255//255); saturating at 255; black
    assert rgb.tolist() == [[[100, 100, 200], [255, 128, 255], [0, 0, 0]]]
    # q = level * 16 // 256: (6, 12) -> 6 + 12 * 16; (15, 15) -> 255
    assert index.tolist() == [[6 + 12 * 16, 255, 0]]
    table = colourist.table(7)
    assert table[198].tolist() == [102, 102, 204]  # representative levels 6*255//15, 12*255//15
    assert table[255].tolist() == [255, 128, 255] and table[0].tolist() == [0, 0, 0]


def test_product_palettes_for_three_and_four_species():
    for species, k in ((1, 256), (2, 16), (3, 6), (4, 4)):
        assert PRODUCT_LEVELS[species] == k and k**species <= 256
    ramps = np.stack([species_ramp(c, None) for c in ("#ff0000", "#00ff00", "#0000ff")])
    table = product_palette(ramps)
    assert (
        table[1].tolist() == [51, 0, 0]
        and table[6].tolist() == [0, 51, 0]
        and table[36].tolist() == [0, 0, 51]
    )
    assert table[215].tolist() == [255, 255, 255] and not table[216:].any()
    one = SpeciesColourist(fixed_levels(), np.stack([species_ramp(None, "ice")]))
    trail = torch.tensor([[[3.0, 77.0, 255.0]]])
    index, rgb = one.colour(trail, 0)
    assert index.tolist() == [[3, 77, 255]] and (one.table(0) == species_ramp(None, "ice")).all()


def test_default_species_colours_and_palettes(images):
    preset = build_preset(tiny_data(species=[{}, {"palette": ["#000", "#0f0"]}]), "p.yaml")
    colourist = make_colourist(preset)
    assert colourist.ramps[0][255].tolist() == [255, 90, 31] and colourist.ramps[1][255].tolist() == [
        0,
        255,
        0,
    ]
