"""Fitting: finite-time Lyapunov exponents, saturation, and mean and standard error over twins
(docs/sensitivity.md section 2.2)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .metrics import TwinSeries
from .twins import Twin

WINDOW_FRACTION = 1e-2  # the exponential window closes at this share of the decorrelated level
SATURATION_LEVEL = 0.9  # saturation: the first step at this share of the plateau
PLATEAU_GROWTH = 1.05  # a plateau grows less than this factor across the run's last fifth
MIN_FIT_POINTS = 3  # a window of fewer points gives no exponent (NaN)


@dataclass(frozen=True)
class ExponentFit:
    """ln(divergence) = intercept + rate * step over the series indices [start, end)."""

    rate: float  # per step; NaN where no window of MIN_FIT_POINTS points exists
    intercept: float = math.nan
    start: int = -1
    end: int = -1
    r2: float = math.nan


def fit_exponent(
    divergence: Sequence[float],
    reference: float | Sequence[float],
    steps: Sequence[float] | None = None,
    fraction: float = WINDOW_FRACTION,
) -> ExponentFit:
    """The finite-time Lyapunov exponent of one divergence series (docs/sensitivity.md section 2.2).

    The window opens at the first point above the series' initial value (the perturbation
    itself) and closes at the first point at or above `fraction` of `reference` (the
    decorrelated level, a number or one per point), that point included, or before the first
    zero after it (a twin that healed), or at the end of the series. ln(divergence) is fitted
    by least squares against the step over the window.
    """
    d = np.asarray(divergence, dtype=np.float64)
    steps = np.arange(len(d), dtype=np.float64) if steps is None else np.asarray(steps, np.float64)
    ceiling = fraction * np.broadcast_to(np.asarray(reference, dtype=np.float64), d.shape)
    above = np.flatnonzero((d > d[0]) & (d > 0))
    if len(above) == 0:
        return ExponentFit(math.nan)
    start = int(above[0])
    end = len(d)
    reached = np.flatnonzero(d[start:] >= ceiling[start:])
    if len(reached):
        end = start + int(reached[0]) + 1
    zeros = np.flatnonzero(d[start:end] <= 0)
    if len(zeros):
        end = start + int(zeros[0])
    if end - start < MIN_FIT_POINTS:
        return ExponentFit(math.nan, start=start, end=end)
    x, y = steps[start:end], np.log(d[start:end])
    rate, intercept = np.polyfit(x, y, 1)
    residual = y - (intercept + rate * x)
    spread = np.sum((y - y.mean()) ** 2)
    r2 = 1 - np.sum(residual**2) / spread if spread > 0 else 1.0
    return ExponentFit(float(rate), float(intercept), start, end, float(r2))


def saturation_index(
    divergence: Sequence[float],
    floor: float = 0.0,
    level: float = SATURATION_LEVEL,
    growth: float = PLATEAU_GROWTH,
) -> int | None:
    """The first index at which the series reaches `level` of its plateau, or None where it has
    none. The plateau is the mean of the last fifth (at least 4 points); the series has one when
    the mean of that window's second half is below `growth` times its first half's, and the
    plateau is above `floor` (a series that levels off low, or dies out, has not saturated)."""
    d = np.asarray(divergence, dtype=np.float64)
    window = max(4, len(d) // 5)
    if len(d) < window:
        return None
    tail = d[-window:]
    first, second = tail[: window // 2].mean(), tail[window // 2 :].mean()
    plateau = tail.mean()
    if not plateau > max(floor, 0.0) or second >= growth * first:
        return None
    return int(np.flatnonzero(d >= level * plateau)[0])


def mean_and_error(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean, standard error of the mean and count of the finite values (NaN where too few)."""
    finite = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    if len(finite) == 0:
        return math.nan, math.nan, 0
    error = float(finite.std(ddof=1) / math.sqrt(len(finite))) if len(finite) > 1 else math.nan
    return float(finite.mean()), error, len(finite)


@dataclass
class TwinResult:
    """What one twin's series says."""

    twin: Twin
    trail_fit: ExponentFit
    agent_fit: ExponentFit
    saturation_step: int | None
    grew: bool  # the L1 divergence reached WINDOW_FRACTION of the decorrelated level
    final: tuple[float, float, float]  # METRICS at the last step
    plateau_ratio: float  # final L1 over the decorrelated L1


def perturbed(results: Sequence[TwinResult]) -> list[TwinResult]:
    """The results of the twins that carry a perturbation (not the unperturbed controls)."""
    return [r for r in results if r.twin.kind != "none"]


def analyse_point(series: TwinSeries, point: int = 0) -> list[TwinResult]:
    """Fits, saturation and final values of each twin of one point, in the order of its twins:
    the exponents against the decorrelated levels (trail L1 and agent distance), saturation above
    WINDOW_FRACTION of the final decorrelated L1."""
    results = []
    steps, decorrelated = series.steps, series.decorrelated[point]
    for k, twin in enumerate(series.twins[point]):
        metrics = series.metrics[point, k]
        l1, distance = metrics[:, 0], metrics[:, 2]
        saturation = saturation_index(l1, floor=WINDOW_FRACTION * decorrelated[-1, 0])
        results.append(
            TwinResult(
                twin=twin,
                trail_fit=fit_exponent(l1, decorrelated[:, 0], steps),
                agent_fit=fit_exponent(distance, decorrelated[:, 1], steps),
                saturation_step=None if saturation is None else int(steps[saturation]),
                grew=bool(np.any(l1 >= WINDOW_FRACTION * decorrelated[:, 0])),
                final=tuple(float(v) for v in metrics[-1]),
                plateau_ratio=float(l1[-1] / decorrelated[-1, 0]) if decorrelated[-1, 0] > 0 else math.nan,
            )
        )
    return results
