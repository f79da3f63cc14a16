"""Fits (render/analysis/fit.py): the exponent of synthetic series, its window, saturation, and
the mean and standard error over twins."""

from __future__ import annotations

import math

import numpy as np
import pytest

from physarum.render.analysis.fit import fit_exponent, mean_and_error, saturation_index


def test_fit_recovers_the_rate_of_a_synthetic_exponential_with_a_plateau():
    steps = np.arange(200)
    rate = 0.137
    growth = 1e-7 * np.exp(rate * (steps - 5))
    series = np.where(steps < 5, 0.0, np.minimum(growth, 0.8))  # latency, growth, plateau
    fit = fit_exponent(series, reference=1.0)
    assert fit.rate == pytest.approx(rate, rel=1e-9)
    assert fit.start == 5
    assert series[fit.end - 1] >= 1e-2 > series[fit.end - 2]  # closes at 1e-2 of the reference
    assert fit.r2 == pytest.approx(1.0)
    assert saturation_index(series) == int(np.flatnonzero(series >= 0.72)[0])


def test_fit_skips_the_initial_perturbation_and_stops_where_a_twin_heals():
    series = np.array([1e-9, 1e-9, 2e-6, 4e-6, 8e-6, 1.6e-5, 0.0, 0.0])
    fit = fit_exponent(series, reference=1.0)
    assert (fit.start, fit.end) == (2, 6)
    assert fit.rate == pytest.approx(math.log(2))
    assert math.isnan(fit_exponent(np.zeros(10), reference=1.0).rate)
    assert math.isnan(fit_exponent([0, 1e-3, 1.0, 1.0], reference=1.0).rate)  # too short


def test_saturation_needs_a_plateau():
    steps = np.arange(100)
    assert saturation_index(1e-3 * np.exp(0.05 * steps)) is None  # still growing
    assert saturation_index(np.exp(-0.1 * steps), floor=1e-3) is None  # died out
    assert saturation_index(np.zeros(100)) is None


def test_mean_and_standard_error():
    mean, error, count = mean_and_error([1.0, 2.0, 3.0, math.nan, None])
    assert (mean, count) == (2.0, 3) and error == pytest.approx(1 / math.sqrt(3))
