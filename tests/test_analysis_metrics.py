"""Divergence metrics (render/analysis/metrics.py): identical twins stay at zero divergence, and
each metric of a hand-made pair."""

from __future__ import annotations

import math

import numpy as np
import torch

from physarum.render.analysis.batch import RunOptions, run_twins
from physarum.render.analysis.metrics import divergence
from support import tiny


def test_identical_twins_never_diverge():
    series = run_twins([tiny()], RunOptions(steps=40, twins=("none", "none", "none")))
    l1, correlation, distance = (series.metrics[0, :, :, i] for i in range(3))
    assert series.metrics.shape == (1, 3, 41, 3)
    assert np.all(l1 == 0) and np.all(distance == 0)
    assert np.allclose(correlation, 1.0, atol=1e-12)
    assert np.all(series.decorrelated[0, :, 0] > 0)  # the base itself is not empty


def test_divergence_of_a_hand_made_pair():
    """One base and one twin on an 8 x 4 canvas with two agents: the twin's trail has one cell
    raised by 1, and its agent 0 stands one pixel to the left of the base's across the seam."""
    base_trail = torch.ones(4, 8)
    twin_trail = base_trail.clone()
    twin_trail[2, 3] += 1.0
    base_position = torch.tensor([[0, 4 << 16], [0, 2 << 16]], dtype=torch.int32)  # [2, N]: x row, y row
    twin_position = base_position.clone()
    twin_position[0, 0] = 7 << 16  # x = 7 wraps to one pixel from x = 0
    metrics, decorrelated = divergence(
        torch.stack([base_trail, twin_trail]), torch.stack([base_position, twin_position]), group=2
    )
    l1, correlation, distance = metrics[0, 0].tolist()
    assert l1 == 1 / 32
    assert math.isnan(correlation)  # a flat base map has no correlation
    assert distance == 0.5  # agent 0 one pixel away across the seam, agent 1 in place
    assert decorrelated[0].tolist() == [0.0, math.hypot(4, 2)]  # a flat map shifted is itself
