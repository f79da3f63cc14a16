"""Novelty (render/explore/novelty.py): robust scaling, the k nearest, farthest-point selection."""

from __future__ import annotations

import numpy as np

from physarum.render.explore.novelty import MAD_SCALE, farthest_points, novelty, robust_scale


def test_robust_scaling_uses_median_and_mad_and_drops_constant_columns():
    matrix = np.array([[1.0, 5.0, 0.0], [2.0, 5.0, 1.0], [3.0, 5.0, 2.0], [100.0, 5.0, 3.0]])
    scaled = robust_scale(matrix)
    assert scaled.shape == (4, 2)  # the constant column says nothing
    # column 0: median 2.5, MAD 1 (|x - 2.5| = 1.5, .5, .5, 97.5): the outlier does not set the scale
    assert np.allclose(scaled[:, 0], (matrix[:, 0] - 2.5) / MAD_SCALE)


def test_novelty_is_the_mean_distance_to_the_nearest_others():
    points = np.array([[0.0], [1.0], [2.0], [10.0]])
    assert np.allclose(novelty(points, nearest=1), [1, 1, 1, 8])
    assert np.allclose(novelty(points, nearest=2), [1.5, 1, 1.5, 8.5])
    assert np.allclose(novelty(points, nearest=5), novelty(points, nearest=3))  # fewer others than asked
    assert novelty(points[:1]).tolist() == [0.0]


def test_farthest_points_start_from_the_most_novel_and_spread():
    points = np.array([[0.0], [0.1], [5.0], [10.0], [9.9]])
    scores = novelty(points, nearest=1)
    chosen = farthest_points(points, scores, 3)
    assert chosen[0] == 2  # alone in the middle: the most novel
    assert sorted(chosen[1:]) in ([0, 3], [0, 4], [1, 3], [1, 4])  # one from each end, not two from one
    assert farthest_points(points, scores, 9) == farthest_points(points, scores, 5)
    assert len(farthest_points(points, scores, 9)) == 5
