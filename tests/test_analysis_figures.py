"""Figures (render/analysis/figures.py): a plane's heat map is written even where no point has a
measured exponent."""

from __future__ import annotations

import math

import numpy as np

from physarum.render.analysis.figures import plot_plane
from physarum.render.analysis.plane import PlaneAxis, PlaneResult
from support import tiny


def test_plot_plane_without_a_measured_point(tmp_path):
    nothing = np.full((2, 3), math.nan)
    axes = (PlaneAxis("model.decay", (0.1, 0.2)), PlaneAxis("model.turn_angle", (0.0, 20.0, 40.0)))
    leading = np.array([[-0.1, 0.2, 0.3], [-0.2, 0.1, 0.2]])
    plane = PlaneResult(axes, nothing, nothing, np.zeros((2, 3)), nothing, nothing, leading, 0.0)
    plot_plane(tmp_path / "plane.png", tiny(), plane)
    assert (tmp_path / "plane.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert list(tmp_path.iterdir()) == [tmp_path / "plane.png"]  # no temporary left behind
