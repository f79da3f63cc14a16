"""The two commands: `physarum sensitivity` on one preset and on a parameter plane; each runs the
twins, analyses them and writes CSV, PNG and JSON under out_dir/<preset name>/, and returns the
JSON document (report.summary_lines prints it)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ..base.files import write_json
from ..preset import Preset
from .batch import RunOptions, run_twins
from .errors import AnalysisError
from .figures import plot_divergence, plot_plane
from .fit import analyse_point
from .linear import preset_linear_model
from .plane import GROWTH_THRESHOLD, PlaneAxis, analyse_plane, plane_presets
from .report import (
    linear_record,
    output_paths,
    plane_record,
    run_header,
    summarise,
    twin_record,
    write_plane_csv,
    write_twin_csv,
)
from .verdict import plane_verdict, point_verdict


def sensitivity(preset: Preset, options: RunOptions, out_dir: Path, device_name: str = "") -> dict:
    """Twins of one preset: CSV, plot and JSON summary under out_dir/<name>/; returns the summary."""
    series = run_twins([preset], options)
    results = analyse_point(series)
    summary = summarise(results)
    paths = output_paths(preset, out_dir, "sensitivity")
    paths["json"].parent.mkdir(parents=True, exist_ok=True)
    write_twin_csv(paths["csv"], series, preset.canvas.width)
    plot_divergence(paths["png"], preset, series, results, summary)
    document = {
        **run_header(preset, options, device_name),
        "summary": summary,
        "twins_detail": [twin_record(r, series.steps, preset.canvas.width) for r in results],
        "linear_model": linear_record(preset_linear_model(preset)),
        "verdict": point_verdict(summary, options.at + options.steps),
        "outputs": {k: p.name for k, p in paths.items()},
    }
    write_json(paths["json"], document)
    return document


# --threshold's bounds, per step: a measured exponent lies well inside them (a twin's distance
# grows from its perturbation to the canvas's size at most); past them the heat map's colour
# scale cannot centre on the threshold (1e308 + a margin is 1e308), and a nonzero value nearer 0
# than MIN_THRESHOLD is below any exponent's precision (1e-320 is a subnormal number).
MAX_THRESHOLD = 100.0
MIN_THRESHOLD = 1e-9


def check_threshold(threshold: float) -> None:
    """--threshold is a growth rate per step: a finite number (NaN would mark no point, and
    neither it nor an infinity can be written as JSON) from -MAX_THRESHOLD to MAX_THRESHOLD, 0 or
    at least MIN_THRESHOLD from it; AnalysisError otherwise, before anything is run or written."""
    if not math.isfinite(threshold) or abs(threshold) > MAX_THRESHOLD or 0 < abs(threshold) < MIN_THRESHOLD:
        raise AnalysisError(
            f"--threshold {threshold:g}: give a finite growth rate per step from -{MAX_THRESHOLD:g} to "
            f"{MAX_THRESHOLD:g} (0, or at least {MIN_THRESHOLD:g} from 0), e.g. 0 (the default) or 0.01"
        )


def sensitivity_plane(
    preset: Preset,
    axes: Sequence[PlaneAxis],
    options: RunOptions,
    out_dir: Path,
    threshold: float = GROWTH_THRESHOLD,
    device_name: str = "",
) -> dict:
    """Twins of every point of a parameter plane: heat map, CSV and JSON; returns the summary.
    A threshold that is not a finite number is refused first (AnalysisError): no point is run."""
    check_threshold(threshold)
    presets = plane_presets(preset, axes)
    series = run_twins(presets, options)
    plane = analyse_plane(presets, axes, series, threshold)
    paths = output_paths(preset, out_dir, f"plane-{axes[0].name}-{axes[1].name}")
    paths["json"].parent.mkdir(parents=True, exist_ok=True)
    write_plane_csv(paths["csv"], plane)
    plot_plane(paths["png"], preset, plane)
    document = {
        **run_header(preset, options, device_name),
        **plane_record(plane),
        "outputs": {k: p.name for k, p in paths.items()},
    }
    document["verdict"] = plane_verdict(document)
    write_json(paths["json"], document)
    return document
