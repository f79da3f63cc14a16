"""Divergence metrics (render/analysis/metrics.py): identical twins stay at zero divergence."""

from __future__ import annotations

import numpy as np

from physarum.render.analysis.batch import RunOptions, run_twins
from support import tiny


def test_identical_twins_never_diverge():
    series = run_twins([tiny()], RunOptions(steps=40, twins=("none", "none", "none")))
    l1, correlation, distance = (series.metrics[0, :, :, i] for i in range(3))
    assert series.metrics.shape == (1, 3, 41, 3)
    assert np.all(l1 == 0) and np.all(distance == 0)
    assert np.allclose(correlation, 1.0, atol=1e-12)
    assert np.all(series.decorrelated[0, :, 0] > 0)  # the base itself is not empty
