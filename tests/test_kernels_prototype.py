"""The seed-style prototype (kernels/prototype.py), the bench's speed baseline."""

from __future__ import annotations

from physarum.kernels.api import ModelParams
from physarum.kernels.prototype import PrototypeSimulation
from physarum.kernels.spawn import spawn


def test_prototype_deposits_and_decays_the_expected_mass():
    params = ModelParams(22.5, 5, 45, 1, 2.0, 0.5, 0.25, 1)
    state = spawn([1], 500, 40, 30, "random")
    prototype = PrototypeSimulation(state, [params])
    prototype.advance(1)
    # every agent deposits 2.0 once; the 3x3 mean keeps mass; decay keeps 75%
    assert abs(float(prototype.trail.sum()) - 500 * 2.0 * 0.75) < 1e-2
