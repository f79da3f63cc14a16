"""Thresholds, cleaning, thinning and distances on the torus (render/graph/skeleton.py)."""

from __future__ import annotations

import numpy as np
import pytest

from physarum.render.graph.skeleton import (
    PERCENTILE,
    clean_mask,
    skeletonise,
    threshold_value,
    torus_distance,
)


def _band(shape=(40, 48), rows=slice(18, 23), cols=slice(None)) -> np.ndarray:
    trail = np.zeros(shape, dtype=np.float32)
    trail[rows, cols] = 1.0
    return trail


def test_fraction_threshold_is_a_share_of_the_percentile():
    trail = np.random.default_rng(1).random((30, 30)).astype(np.float32)
    assert threshold_value(trail, 0.5) == pytest.approx(0.5 * np.percentile(trail, PERCENTILE))


def test_otsu_does_not_depend_on_the_deposit_scale():
    trail = np.random.default_rng(2).gamma(0.5, size=(40, 40)).astype(np.float32)
    assert threshold_value(trail * 8, "otsu") == pytest.approx(8 * threshold_value(trail, "otsu"), rel=1e-5)


def test_an_empty_trail_has_no_network():
    found = skeletonise(np.zeros((20, 20), dtype=np.float32))
    assert found.threshold == float("inf") and not found.mask.any() and not found.skeleton.any()


def test_a_band_across_the_border_is_thinned_like_one_in_the_middle():
    # the same band, once in the middle and once split by the top edge: the same skeleton, moved
    middle = skeletonise(_band(), 0.5, 1).skeleton
    split = skeletonise(np.roll(_band(), 20, axis=0), 0.5, 1).skeleton
    assert middle.sum() == 48 and np.array_equal(np.roll(middle, 20, axis=0), split)


def test_distance_wraps_on_the_torus_and_stops_at_the_edge_otherwise():
    mask = _band(cols=slice(None)).astype(bool)  # rows 18..22
    wrapped = torus_distance(np.roll(mask, 20, axis=0), True)
    assert wrapped[0].max() == pytest.approx(3.0)  # the band's middle row, rolled to row 0
    edge = torus_distance(np.roll(mask, 20, axis=0), False)
    assert edge[0].max() == pytest.approx(1.0)  # next to the (background) edge


def test_specks_and_pinholes_are_removed_whole_across_the_border():
    mask = np.zeros((20, 20), dtype=bool)
    mask[0, 0] = mask[19, 0] = mask[0, 19] = mask[19, 19] = True  # one 4-cell speck over the corner
    mask[5:15, 5:15] = True
    mask[9, 9] = False  # a pinhole
    cleaned = clean_mask(mask, 5, True)
    assert not cleaned[0, 0] and cleaned[9, 9] and cleaned[5:15, 5:15].all()
    assert clean_mask(mask, 4, True)[0, 0]  # 4 cells stay when fewer than 4 are removed


@pytest.mark.parametrize("height, width", [(8, 8), (32, 48), (61, 997), (1024, 1024), (4096, 4096)])
def test_the_largest_min_area_bounds_the_cleanings_padded_copy(height, width):
    from physarum.render.graph.skeleton import MAX_CLEAN_CELLS, max_min_area

    room = max(MAX_CLEAN_CELLS, 9 * height * width)
    largest = max_min_area(height, width, wrap=True)
    assert 1 <= largest <= height * width
    assert (height + 2 * largest) * (width + 2 * largest) <= room
    assert largest == height * width or (height + 2 * largest + 2) * (width + 2 * largest + 2) > room
    assert max_min_area(height, width, wrap=False) == height * width
    with pytest.raises(ValueError, match="max_min_area"):
        clean_mask(np.zeros((height, width), bool), largest + 1, True)
