"""Parameter planes: two model parameters' axes, one preset per grid point, and each point's
measured exponent against the 2x2 model's verdict."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..base.errors import did_you_mean
from ..preset import Model, Preset, PresetError, build_preset
from .errors import AnalysisError
from .fit import analyse_point, mean_and_error, perturbed
from .linear import preset_linear_model
from .metrics import TwinSeries

GROWTH_THRESHOLD = 0.0  # per step: a plane point above it counts as unstable (--threshold)
PLANE_KEYS = tuple(f"model.{name}" for name in Model.model_fields)


@dataclass(frozen=True)
class PlaneAxis:
    """One axis of a plane: a model parameter and its values, in order."""

    key: str  # model.<name>
    values: tuple[float, ...]

    @property
    def name(self) -> str:
        """The parameter's name in the model section (the key without "model.")."""
        return self.key.split(".", 1)[1]


def parse_plane_axis(spec: str) -> PlaneAxis:
    """KEY=LO:HI:N (N >= 1 evenly spaced values from LO to HI) into an axis; AnalysisError
    naming the problem otherwise."""
    key, sep, span = spec.partition("=")
    key = key.strip()
    parts = span.split(":")
    if not sep or len(parts) != 3:
        raise AnalysisError(f"--plane {spec!r}: expected KEY=LO:HI:N, e.g. model.decay=0.01:0.3:16")
    if key not in PLANE_KEYS:
        hint = did_you_mean(key, PLANE_KEYS)
        raise AnalysisError(
            f"--plane {spec!r}: {key!r} is not a model parameter; {hint}choose one of {', '.join(PLANE_KEYS)}"
        )
    try:
        low, high = float(parts[0]), float(parts[1])
        count = int(parts[2])
    except ValueError:
        raise AnalysisError(
            f"--plane {spec!r}: LO and HI must be numbers and N a whole number, e.g. model.decay=0.01:0.3:16"
        ) from None
    if not (math.isfinite(low) and math.isfinite(high)):
        raise AnalysisError(f"--plane {spec!r}: LO and HI must be finite numbers")
    if not 1 <= count <= 1024:
        raise AnalysisError(f"--plane {spec!r}: N must be from 1 to 1024, got {count}")
    values = np.linspace(low, high, count) if count > 1 else np.array([low])
    return PlaneAxis(key, tuple(float(v) for v in values))


def plane_presets(preset: Preset, axes: Sequence[PlaneAxis]) -> list[Preset]:
    """One preset per grid point, the first axis varying slowest; every value is validated
    first and all problems are reported at once (PresetError)."""
    if len(axes) != 2 or axes[0].key == axes[1].key:
        raise AnalysisError("--plane needs two different model parameters")
    data = preset.model_dump(mode="json")
    problems = []
    for axis in axes:
        for value in axis.values:
            try:
                _point(data, {axis.name: value}, f"--plane {axis.key}={value:g}")
            except PresetError as error:
                problems.extend(error.problems)
    if problems:
        raise PresetError(problems)
    return [
        _point(data, {axes[0].name: a, axes[1].name: b}, "--plane")
        for a in axes[0].values
        for b in axes[1].values
    ]


def _point(data: dict, values: dict, source: str) -> Preset:
    """The preset `data` with some model parameters replaced, validated (`source` names it in
    errors)."""
    point = {**data, "model": {**data["model"], **values}}
    return build_preset(point, source)


@dataclass
class PlaneResult:
    """Per point of a plane, [n1, n2] (first axis first): the measured exponent over the point's
    perturbed twins and the 2x2 model's leading eigenvalue, with the verdicts drawn from them."""

    axes: tuple[PlaneAxis, PlaneAxis]
    exponent: np.ndarray  # [n1, n2] mean over twins (NaN where none fitted)
    stderr: np.ndarray
    fitted: np.ndarray  # [n1, n2] twins with a finite exponent
    grew: np.ndarray  # [n1, n2] share of twins whose divergence reached the window's end level
    saturation: np.ndarray  # [n1, n2] mean saturation step (NaN where none saturated)
    leading: np.ndarray  # [n1, n2] the linear model's leading eigenvalue
    threshold: float

    @property
    def measured(self) -> np.ndarray:
        """[n1, n2] bool: the point has a measured exponent (some twin's exponent was fitted)."""
        return np.isfinite(self.exponent)

    @property
    def measured_unstable(self) -> np.ndarray:
        """[n1, n2] bool: the measured exponent is above the threshold (False where unmeasured)."""
        return self.exponent > self.threshold

    @property
    def model_unstable(self) -> np.ndarray:
        """[n1, n2] bool: the 2x2 model's leading eigenvalue is positive."""
        return self.leading > 0

    @property
    def confusion(self) -> dict[str, int]:
        """Points with a measured exponent, by (measured unstable, model unstable)."""
        valid = self.measured
        measured, model = self.measured_unstable[valid], self.model_unstable[valid]
        return {
            "both_unstable": int(np.sum(measured & model)),
            "both_stable": int(np.sum(~measured & ~model)),
            "model_only_unstable": int(np.sum(~measured & model)),
            "measured_only_unstable": int(np.sum(measured & ~model)),
        }

    @property
    def agreement(self) -> tuple[float, int]:
        """Share of points with a measured exponent where (exponent > threshold) equals the linear
        model's (leading eigenvalue > 0), and how many points that is."""
        valid = self.measured
        if not valid.any():
            return math.nan, 0
        agree = self.measured_unstable[valid] == self.model_unstable[valid]
        return float(agree.mean()), int(valid.sum())


def analyse_plane(
    presets: Sequence[Preset], axes: Sequence[PlaneAxis], series: TwinSeries, threshold: float
) -> PlaneResult:
    """The plane's result from the twins of every point (presets in plane_presets' order)."""
    shape = (len(axes[0].values), len(axes[1].values))
    exponent, stderr, fitted, grew, saturation, leading = (np.full(shape, np.nan) for _ in range(6))
    for point, preset in enumerate(presets):
        index = np.unravel_index(point, shape)
        results = perturbed(analyse_point(series, point))
        exponent[index], stderr[index], fitted[index] = mean_and_error([r.trail_fit.rate for r in results])
        grew[index] = np.mean([r.grew for r in results]) if results else np.nan
        saturation[index] = mean_and_error([r.saturation_step for r in results])[0]
        leading[index] = preset_linear_model(preset).eigenvalues()[0]
    return PlaneResult(tuple(axes), exponent, stderr, fitted, grew, saturation, leading, threshold)
