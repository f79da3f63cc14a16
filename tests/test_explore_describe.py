"""Descriptors (render/explore/describe.py): mean, std and drift of each metric, and the rules
that drop a world."""

from __future__ import annotations

import math

import numpy as np

from physarum.render.explore.describe import COLUMN, DESCRIPTOR_COLUMNS, describe, graph_descriptor, status
from physarum.render.out.metrics import METRIC_COLUMNS


def rows(frames: int = 6, **columns) -> np.ndarray:
    table = np.zeros((frames, len(METRIC_COLUMNS)))
    table[:, COLUMN["mass"]] = 1.0
    table[:, COLUMN["coverage"]] = 0.5
    table[:, COLUMN["veins"]] = 0.1
    table[:, COLUMN["band_2"]] = 1.0
    table[0, COLUMN["travel"]] = math.nan
    for name, value in columns.items():
        table[:, COLUMN[name]] = value
    return table


def test_descriptor_mean_std_and_drift():
    table = rows(mass=np.arange(6.0))
    found = describe(table)
    assert list(found) == list(DESCRIPTOR_COLUMNS)
    assert found["mass_mean"] == 2.5 and found["mass_drift"] == 4.0  # (4 + 5) / 2 - (0 + 1) / 2
    assert found["mass_std"] == float(f"{np.arange(6.0).std():.6g}")
    assert found["travel_mean"] == 0.0  # the first frame's NaN is left out
    assert found["coverage_std"] == 0.0


def test_inert_and_exploding_worlds_are_named():
    assert status(rows()) == "valid"
    assert status(rows(coverage=0.01)) == "empty"
    assert status(rows(band_2=0.0)) == "flat"
    assert status(rows(coverage=1.0, veins=0.0)) == "haze"
    assert status(rows(mass=math.inf)) == "exploding"
    assert status(rows(mass=1e31)) == "exploding"
    assert status(np.zeros((0, len(METRIC_COLUMNS)))) == "empty"


def test_graph_statistics_of_a_lattice_and_of_nothing():
    trail = np.zeros((64, 64), dtype=np.float32)
    trail[::16, :] = 10.0  # a lattice of 4 x 4 cells on the torus: 16 junctions, 32 edges
    trail[:, ::16] = 10.0
    found = graph_descriptor(trail)
    assert found["graph_degree"] == 4.0 and found["graph_ends"] == 0.0
    assert found["graph_loops"] == 17.0  # 32 edges - 16 nodes + 1 component
    assert found["graph_edge_length"] == 0.25  # 16 cells of a 64-cell side
    empty = graph_descriptor(np.zeros((32, 32), dtype=np.float32))
    assert empty["graph_degree"] == 0.0 and empty["graph_loops"] == 0.0
    assert math.isnan(describe(rows())["graph_loops"])  # no graph given
    assert describe(rows(), found)["graph_loops"] == 17.0
