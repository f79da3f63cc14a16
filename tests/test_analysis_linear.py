"""The 2x2 model (render/analysis/linear.py): eigenvalues against the closed form and numpy, and
how a preset's parameters map onto it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from physarum.render.analysis.linear import LinearModel, linear_model


@pytest.mark.parametrize(
    "decay, deposit, response, damping",
    [(0.1, 5.0, 0.02, 0.11), (0.3, 1.0, 0.01, 0.5), (0.05, 0.0, 0.3, 0.2), (0.2, 2.0, 0.1, 0.2)],
)
def test_linear_model_eigenvalues_match_the_closed_form_and_numpy(decay, deposit, response, damping):
    model = LinearModel(decay, deposit, response, damping)
    leading, other = model.eigenvalues()
    trace, determinant = -(decay + damping), decay * damping - response * deposit
    closed = (
        (trace + math.sqrt(trace**2 - 4 * determinant)) / 2,
        (trace - math.sqrt(trace**2 - 4 * determinant)) / 2,
    )
    assert (leading, other) == pytest.approx(closed, abs=1e-12)
    assert sorted(np.linalg.eigvals(model.jacobian()).real) == pytest.approx([other, leading], abs=1e-12)
    assert model.unstable == (leading > 0) == (response * deposit > decay * damping)


def test_linear_model_mapping():
    model = {
        "sensor_angle": 22.5,
        "sensor_distance": 9.0,
        "turn_angle": 45.0,
        "step_size": 1.0,
        "deposit": 3.0,
        "diffuse": 0.0,
        "decay": 0.12,
    }
    mapped = linear_model(model, density=0.5)
    assert mapped.decay == pytest.approx(-math.log(0.88))  # no diffusion: decay alone
    assert mapped.deposit == 3.0 and mapped.damping == pytest.approx(1 / 9)
    assert mapped.response == pytest.approx(0.5 * math.sin(math.pi / 4) / 9)
    assert not linear_model({**model, "turn_angle": 0.0}, density=0.5).unstable  # no steering
    blurred = linear_model({**model, "diffuse": 1.0}, density=0.5)
    assert blurred.decay > mapped.decay  # the blur damps the sensor-scale mode too
