"""A candidate's descriptor from its per-frame metrics, and the rules that drop a world.

The metrics are render/out/metrics.py's METRIC_COLUMNS, one row per frame. The descriptor holds,
for each metric, its mean and standard deviation over the frames and its drift: the mean of the
last third of the frames minus the mean of the first third (the last frame minus the first with
fewer than three frames). travel, which has no value on the first frame, is taken from the
second on. Every number is rounded to DIGITS significant digits, so that the last bits of a
device's sums (which may differ between devices) do not reach the novelty archive.

A world is dropped from the archive (its status says why) when, at the last frame:

- exploding: a metric is not finite, or the mass is above MAX_MASS;
- empty: the coverage is below MIN_COVERAGE (almost no trail above 1% of its peak);
- flat: the trail has no spectral power (the same value in every cell);
- haze: the coverage is at least HAZE_COVERAGE and the veins below HAZE_VEINS (trail everywhere,
  no structure).

Every other world is "valid".

Graph statistics (render/graph/) of the last frame's trail join the descriptor where cheap (a
canvas of at most GRAPH_MAX_CELLS cells; NaN otherwise, a column the scaling leaves out):
independent loops per short side squared, mean degree, the share of ends among the nodes, and
the mean edge length and width over the short side. They are computed on the host from the
trail, which is the same bits on every device, so they are the same everywhere.
"""

from __future__ import annotations

import math

import numpy as np

from ..graph.network import build_graph, graph_statistics
from ..graph.skeleton import skeletonise
from ..out.metrics import METRIC_COLUMNS

DIGITS = 6
STATISTICS = ("mean", "std", "drift")
GRAPH_COLUMNS = ("graph_loops", "graph_degree", "graph_ends", "graph_edge_length", "graph_width")
DESCRIPTOR_COLUMNS = (
    *(f"{metric}_{kind}" for metric in METRIC_COLUMNS for kind in STATISTICS),
    *GRAPH_COLUMNS,
)
GRAPH_MAX_CELLS = 1024 * 1024
MAX_MASS = 1e30
MIN_COVERAGE = 0.02
HAZE_COVERAGE = 0.999
HAZE_VEINS = 1e-4
COLUMN = {name: i for i, name in enumerate(METRIC_COLUMNS)}
BANDS = [COLUMN[f"band_{i}"] for i in range(1, 5)]


def significant(value: float) -> float:
    """`value` rounded to DIGITS significant digits (NaN and infinities as they are)."""
    return float(f"{value:.{DIGITS}g}") if math.isfinite(value) else value


def _drift(series: np.ndarray) -> float:
    count = len(series)
    if count < 3:
        return float(series[-1] - series[0]) if count else math.nan
    third = count // 3
    return float(series[-third:].mean() - series[:third].mean())


def graph_descriptor(trail: np.ndarray) -> dict[str, float]:
    """GRAPH_COLUMNS of a trail map [H, W] (the module's rules; NaN on a larger canvas)."""
    height, width = trail.shape
    if height * width > GRAPH_MAX_CELLS:
        return dict.fromkeys(GRAPH_COLUMNS, math.nan)
    found = skeletonise(np.asarray(trail, dtype=np.float32))
    stats = graph_statistics(build_graph(found, trail), found)
    short = min(height, width)
    return {
        "graph_loops": significant(stats["cycles"] * short * short / (height * width)),
        "graph_degree": significant(stats["mean_degree"]),
        "graph_ends": significant(stats["ends"] / stats["nodes"] if stats["nodes"] else 0.0),
        "graph_edge_length": significant(stats["mean_edge_length"] / short),
        "graph_width": significant(stats["mean_width"] / short),
    }


def describe(rows: np.ndarray, graph: dict | None = None) -> dict[str, float]:
    """The descriptor (DESCRIPTOR_COLUMNS) of one candidate's metrics rows [F, M] float64 and its
    graph descriptor (NaN where None)."""
    found = {}
    for metric, column in COLUMN.items():
        series = rows[1:, column] if metric == "travel" else rows[:, column]
        if series.size == 0:
            values = (math.nan, math.nan, math.nan)
        else:
            values = (float(series.mean()), float(series.std()), _drift(series))
        for kind, value in zip(STATISTICS, values):
            found[f"{metric}_{kind}"] = significant(value)
    for column in GRAPH_COLUMNS:
        value = (graph or {}).get(column)
        found[column] = float(value) if isinstance(value, (int, float)) else math.nan
    return found


def status(rows: np.ndarray) -> str:
    """valid, exploding, empty, flat or haze (the module's rules) of metrics rows [F, M]."""
    if rows.shape[0] == 0:
        return "empty"
    last = rows[-1]
    checked = np.delete(rows, COLUMN["travel"], axis=1)
    if not np.isfinite(checked).all() or not np.isfinite(rows[1:, COLUMN["travel"]]).all():
        return "exploding"
    if last[COLUMN["mass"]] > MAX_MASS:
        return "exploding"
    if last[COLUMN["coverage"]] < MIN_COVERAGE:
        return "empty"
    if last[BANDS].sum() <= 0:
        return "flat"
    if last[COLUMN["coverage"]] >= HAZE_COVERAGE and last[COLUMN["veins"]] < HAZE_VEINS:
        return "haze"
    return "valid"
