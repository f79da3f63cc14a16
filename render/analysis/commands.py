"""The two commands: `physarum sensitivity` on one preset and on a parameter plane; each runs the
twins, analyses them and writes CSV, PNG and JSON."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from physarum.render.analysis.batch import RunOptions, run_twins
from physarum.render.analysis.figures import plot_divergence, plot_plane
from physarum.render.analysis.fit import SATURATION_LEVEL, WINDOW_FRACTION, analyse_point
from physarum.render.analysis.linear import preset_linear_model
from physarum.render.analysis.metrics import METRICS
from physarum.render.analysis.plane import GROWTH_THRESHOLD, PlaneAxis, analyse_plane, plane_presets
from physarum.render.analysis.report import (
    json_number,
    output_stem,
    summarise,
    write_plane_csv,
    write_twin_csv,
)
from physarum.render.files import write_json
from physarum.render.preset import Preset
from physarum.render.runner import embedded_text, version


def _run_header(preset: Preset, options: RunOptions, device_name: str) -> dict:
    return {
        "physarum_version": version(),
        "preset": preset.name,
        "seed": preset.seed,
        "preset_yaml": embedded_text(preset),
        "backend": options.backend,
        "device": device_name,
        "perturbed_at_step": options.at,
        "steps": options.steps,
        "twins": list(options.twins),
        "window_fraction": WINDOW_FRACTION,
        "saturation_level": SATURATION_LEVEL,
    }


def sensitivity(preset: Preset, options: RunOptions, out_dir: Path, device_name: str = "") -> dict:
    """Twins of one preset: CSV, plot and JSON summary under out_dir/<name>/; returns the summary."""
    series = run_twins([preset], options)
    results = analyse_point(series)
    summary = summarise(results)
    stem = output_stem(preset, out_dir, "sensitivity")
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {
        "csv": stem.with_suffix(".csv"),
        "png": stem.with_suffix(".png"),
        "json": stem.with_suffix(".json"),
    }
    write_twin_csv(paths["csv"], series, preset.canvas.width)
    plot_divergence(paths["png"], preset, series, results, summary)
    linear = preset_linear_model(preset)
    document = {
        **_run_header(preset, options, device_name),
        "summary": summary,
        "twins_detail": [
            {
                "kind": r.twin.kind,
                "target": r.twin.describe(preset.canvas.width),
                "found": r.twin.found,
                "exponent": json_number(r.trail_fit.rate),
                "r2": json_number(r.trail_fit.r2),
                "window": [int(series.steps[r.trail_fit.start]), int(series.steps[r.trail_fit.end - 1])]
                if r.trail_fit.end > r.trail_fit.start >= 0
                else None,
                "agent_exponent": json_number(r.agent_fit.rate),
                "grew": r.grew,
                "saturation_step": r.saturation_step,
                "final": dict(zip(METRICS, (json_number(v) for v in r.final))),
                "plateau_ratio": json_number(r.plateau_ratio),
            }
            for r in results
        ],
        "linear_model": {
            **{k: json_number(v) for k, v in linear.__dict__.items()},
            "leading_eigenvalue": json_number(linear.eigenvalues()[0]),
            "unstable": linear.unstable,
        },
        "outputs": {k: p.name for k, p in paths.items()},
    }
    write_json(paths["json"], document)
    return document


def sensitivity_plane(
    preset: Preset,
    axes: Sequence[PlaneAxis],
    options: RunOptions,
    out_dir: Path,
    threshold: float = GROWTH_THRESHOLD,
    device_name: str = "",
) -> dict:
    """Twins of every point of a parameter plane: heat map, CSV and JSON; returns the summary."""
    presets = plane_presets(preset, axes)
    series = run_twins(presets, options)
    plane = analyse_plane(presets, axes, series, threshold)
    stem = output_stem(preset, out_dir, f"plane-{axes[0].name}-{axes[1].name}")
    stem.parent.mkdir(parents=True, exist_ok=True)
    paths = {
        "csv": stem.with_suffix(".csv"),
        "png": stem.with_suffix(".png"),
        "json": stem.with_suffix(".json"),
    }
    write_plane_csv(paths["csv"], plane)
    plot_plane(paths["png"], preset, plane)
    share, count = plane.agreement
    document = {
        **_run_header(preset, options, device_name),
        "plane": {axis.key: list(axis.values) for axis in axes},
        "threshold": threshold,
        "agreement": json_number(share),
        "points_compared": count,
        "measured_unstable": int(np.sum(plane.exponent > threshold)),
        "linear_unstable": int(np.sum(plane.leading > 0)),
        "confusion": plane.confusion,
        "outputs": {k: p.name for k, p in paths.items()},
    }
    write_json(paths["json"], document)
    return document
