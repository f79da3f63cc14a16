"""The seed's linearised 2x2 model of trail and agent response (docs/sensitivity.md section 3)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..preset import Preset


@dataclass(frozen=True)
class LinearModel:
    """d/dt (trail perturbation tau, agent response a) = J (tau, a), per step:

        J = [[-decay, deposit],
             [response, -damping]]

    Eigenvalues, in closed form: (-(decay + damping) +- sqrt((decay - damping)^2 +
    4 * response * deposit)) / 2, real since response * deposit >= 0. The leading one is
    positive, perturbations grow, exactly when response * deposit > decay * damping.
    How a preset's parameters map onto these four is `linear_model`'s docstring.
    """

    decay: float
    deposit: float
    response: float
    damping: float

    def jacobian(self) -> np.ndarray:
        """J as a 2x2 array (the tests check the closed form against numpy's eigenvalues of it)."""
        return np.array([[-self.decay, self.deposit], [self.response, -self.damping]])

    def eigenvalues(self) -> tuple[float, float]:
        """(leading, other)."""
        return eigenvalues(self.decay, self.deposit, self.response, self.damping)

    @property
    def unstable(self) -> bool:
        return self.response * self.deposit > self.decay * self.damping


def eigenvalues(decay, deposit, response, damping):
    """The closed-form eigenvalues (leading, other) of J; works on numbers and numpy arrays."""
    mean = -(np.asarray(decay) + damping) / 2
    radius = np.sqrt(((np.asarray(decay) - damping) / 2) ** 2 + response * deposit)
    return mean + radius, mean - radius


def linear_model(model: Mapping[str, float], density: float) -> LinearModel:
    """The 2x2 model of a preset's model section and agent density (agents per cell).

    All rates are per step, on the scale the agents resolve: a trail mode of wavelength twice the
    sensor distance, k = pi / sensor_distance.
      decay    = -ln(1 - decay) - ln|1 - diffuse * (1 - (1 + 2 cos k) / 3)|: the trail kept per
                 step is (1 - decay) times the 3x3 blur's gain on that mode;
      deposit  = deposit, trail per agent per step (per unit of trail: the seed's units);
      response = density * sin(turn_angle) * step_size / sensor_distance: the agents in a cell,
                 turning by turn_angle, gather into a bump one sensor distance wide at the
                 sideways speed sin(turn_angle) * step_size, per unit of trail;
      damping  = step_size / sensor_distance: agents cross and leave that bump at step_size.
    """
    k = math.pi / model["sensor_distance"] if model["sensor_distance"] >= 1 else math.pi
    blur = abs(1 - model["diffuse"] * (1 - (1 + 2 * math.cos(k)) / 3))
    decay = -math.log1p(-model["decay"]) - math.log(max(blur, 1e-300))
    crossing = model["step_size"] / model["sensor_distance"]
    response = density * math.sin(math.radians(model["turn_angle"])) * crossing
    return LinearModel(decay=decay, deposit=model["deposit"], response=response, damping=crossing)


def agent_density(preset: Preset) -> float:
    """Agents per cell."""
    return preset.agents.count / (preset.canvas.width * preset.canvas.height)


def preset_linear_model(preset: Preset) -> LinearModel:
    """The 2x2 model of a preset (linear_model of its model section and agent density)."""
    return linear_model(preset.model.model_dump(), agent_density(preset))
