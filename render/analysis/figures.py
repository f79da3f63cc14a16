"""Figures: the divergence plot of a run's twins and the heat map of a plane."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..base.files import PartialFile
from ..preset import Preset
from .fit import WINDOW_FRACTION, TwinResult
from .linear import agent_density, linear_model
from .metrics import TwinSeries
from .plane import PlaneAxis, PlaneResult
from .report import plus_minus


def _pyplot():
    """pyplot on the Agg backend (files only, no display). Imported here, on the first figure,
    not at the top: matplotlib takes a while to import, and only these figures need it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_divergence(
    path: Path, preset: Preset, series: TwinSeries, results: Sequence[TwinResult], summary: dict
) -> None:
    """Three panels of point 0's twins against the step: L1 (log, with each fitted line and the
    window's end level), 1 - correlation (log), agent distance (log); `summary` (summarise's) gives
    the title's exponent."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.6), constrained_layout=True)
    colours = {"agent": "tab:red", "trail": "tab:blue", "none": "tab:grey"}
    steps = series.steps
    for k, result in enumerate(results):
        metrics, colour = series.metrics[0, k], colours[result.twin.kind]
        label = result.twin.kind if k < 2 else None  # kinds take turns: one legend entry each
        with np.errstate(divide="ignore", invalid="ignore"):
            for axis, values in zip(axes, (metrics[:, 0], 1 - metrics[:, 1], metrics[:, 2])):
                axis.plot(
                    steps, np.where(values > 0, values, np.nan), color=colour, lw=1, alpha=0.8, label=label
                )
        fit = result.trail_fit
        if math.isfinite(fit.rate):
            x = steps[fit.start : fit.end]
            axes[0].plot(x, np.exp(fit.intercept + fit.rate * x), color="black", lw=1.5, ls="--")
    axes[0].plot(steps, series.decorrelated[0, :, 0], color="black", lw=1, ls=":", label="decorrelated level")
    axes[0].plot(
        steps,
        WINDOW_FRACTION * series.decorrelated[0, :, 0],
        color="grey",
        lw=1,
        ls=":",
        label=f"{WINDOW_FRACTION:g} x decorrelated (window end)",
    )
    axes[2].plot(steps, series.decorrelated[0, :, 1], color="black", lw=1, ls=":", label="decorrelated level")
    titles = (
        "trail: sum|T_twin - T_base| / sum T_base",
        "trail: 1 - Pearson correlation",
        "agents: mean torus distance (px)",
    )
    for axis, title in zip(axes, titles):
        axis.set_yscale("log")
        axis.set_xlabel("step")
        axis.set_title(title, fontsize=10)
        axis.grid(True, which="major", alpha=0.3)
    axes[0].legend(fontsize=8, loc="lower right")
    overall = summary["all"]["exponent"]
    figure.suptitle(
        f"{preset.name} (seed {preset.seed}): finite-time Lyapunov exponent "
        f"{plus_minus(overall)} per step over {overall['n']} twins (dashed: fits)",
        fontsize=11,
    )
    _save_figure(figure, path)


def _save_figure(figure, path: Path) -> None:
    """The figure as a PNG at `path`, written whole or not at all (PartialFile), then closed."""
    plt = _pyplot()
    partial = PartialFile(path)
    try:
        figure.savefig(partial.temporary, dpi=110, format="png")
    finally:
        plt.close(figure)
    partial.commit()


def plot_plane(path: Path, preset: Preset, plane: PlaneResult) -> None:
    """The measured exponent as a heat map over the plane, the linear model's boundary (leading
    eigenvalue 0) as a black line, and a cross on every point where the two disagree."""
    plt = _pyplot()
    from matplotlib.colors import TwoSlopeNorm  # lazy, like _pyplot: only this figure needs it

    first, second = plane.axes
    x, y = np.asarray(first.values), np.asarray(second.values)
    figure, axis = plt.subplots(figsize=(7.5, 6), constrained_layout=True)
    data = plane.exponent.T  # rows: second axis
    finite = data[np.isfinite(data)]
    low = min(finite.min(), plane.threshold - 1e-6) if finite.size else plane.threshold - 1
    high = max(finite.max(), plane.threshold + 1e-6) if finite.size else plane.threshold + 1
    norm = TwoSlopeNorm(vcenter=plane.threshold, vmin=low, vmax=high)
    mesh = axis.pcolormesh(
        _edges(x), _edges(y), np.ma.masked_invalid(data), cmap="coolwarm", norm=norm, shading="flat"
    )
    figure.colorbar(mesh, ax=axis, label="finite-time Lyapunov exponent (per step)")
    fine_x, fine_y, fine = _linear_surface(preset, plane.axes)
    if np.nanmin(fine) < 0 < np.nanmax(fine):
        axis.contour(fine_x, fine_y, fine, levels=[0.0], colors="black", linewidths=2)
    axis.plot([], [], color="black", lw=2, label="2x2 model: leading eigenvalue = 0")
    disagree = plane.measured & (plane.measured_unstable != plane.model_unstable)
    ii, jj = np.nonzero(disagree)
    axis.scatter(x[ii], y[jj], marker="x", color="black", s=30, label="model and measurement disagree")
    share, count = plane.agreement
    axis.set_xlabel(first.key)
    axis.set_ylabel(second.key)
    axis.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2)
    axis.set_title(
        f"{preset.name}: measured exponent; 2x2 model agrees on {share:.0%} of {count} points", fontsize=10
    )
    _save_figure(figure, path)


def _edges(values: np.ndarray) -> np.ndarray:
    """The cell edges of a heat map whose cells are centred on `values` (evenly spaced, or one)."""
    if len(values) == 1:
        return np.array([values[0] - 0.5, values[0] + 0.5])
    middle = (values[1:] + values[:-1]) / 2
    return np.concatenate([[2 * values[0] - middle[0]], middle, [2 * values[-1] - middle[-1]]])


def _linear_surface(preset: Preset, axes: Sequence[PlaneAxis], size: int = 200):
    """The leading eigenvalue on a fine grid over the plane (for the boundary line)."""
    first, second = axes
    xs = np.linspace(min(first.values), max(first.values), size)
    ys = np.linspace(min(second.values), max(second.values), size)
    density = agent_density(preset)
    model = preset.model.model_dump()
    surface = np.array(
        [
            [linear_model({**model, first.name: a, second.name: b}, density).eigenvalues()[0] for a in xs]
            for b in ys
        ]
    )
    return xs, ys, surface
