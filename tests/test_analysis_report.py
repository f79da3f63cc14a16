"""Reports (render/analysis/report.py): number formats, a plane's CSV and JSON verdicts where a
point has no measured exponent, output names and the printed lines of a plane."""

from __future__ import annotations

import csv
import math

import numpy as np

from physarum.render.analysis.plane import PlaneAxis, PlaneResult
from physarum.render.analysis.report import (
    json_number,
    output_paths,
    plane_record,
    plus_minus,
    summary_lines,
    write_plane_csv,
)
from support import tiny


def plane_of_four() -> PlaneResult:
    """2 x 2 points: one unmeasured (NaN); of the other three, both verdicts unstable at one, only
    the model's at one, only the measurement's at one."""
    exponent = np.array([[0.2, math.nan], [-0.1, 0.05]])
    leading = np.array([[0.3, 0.1], [0.2, -0.4]])
    ones = np.ones((2, 2))
    axes = (PlaneAxis("model.decay", (0.1, 0.2)), PlaneAxis("model.turn_angle", (0.0, 45.0)))
    return PlaneResult(axes, exponent, 0.01 * ones, 4 * ones, ones, math.nan * ones, leading, 0.0)


def test_numbers_in_json_and_in_words():
    assert json_number(0.123456789) == 0.123457
    assert json_number(math.nan) is None and json_number(None) is None and json_number(math.inf) is None
    assert plus_minus({"mean": 0.1, "stderr": 0.02}) == "0.1000 ± 0.0200"
    assert plus_minus({"mean": 0.1, "stderr": None}) == "0.1000"
    assert plus_minus({"mean": None, "stderr": None}) == "n/a"


def test_plane_verdicts_count_only_measured_points(tmp_path):
    plane = plane_of_four()
    record = plane_record(plane)
    assert record["points_compared"] == 3 and record["agreement"] == json_number(1 / 3)
    assert (record["measured_unstable"], record["linear_unstable"]) == (2, 3)
    assert record["confusion"] == {
        "both_unstable": 1,
        "both_stable": 0,
        "model_only_unstable": 1,
        "measured_only_unstable": 1,
    }
    write_plane_csv(tmp_path / "plane.csv", plane)
    with open(tmp_path / "plane.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [(r["model.decay"], r["model.turn_angle"]) for r in rows] == [
        ("0.1", "0"),
        ("0.1", "45"),
        ("0.2", "0"),
        ("0.2", "45"),
    ]
    assert [r["measured_unstable"] for r in rows] == ["1", "", "0", "1"]
    assert [r["linear_unstable"] for r in rows] == ["1", "1", "1", "0"]
    assert rows[1]["exponent"] == "nan"


def test_output_paths_name_the_preset_seed_and_command(tmp_path):
    paths = output_paths(tiny(), tmp_path, "plane-decay-deposit")
    assert {k: p.relative_to(tmp_path).as_posix() for k, p in paths.items()} == {
        "csv": "tiny/tiny-s3-plane-decay-deposit.csv",
        "png": "tiny/tiny-s3-plane-decay-deposit.png",
        "json": "tiny/tiny-s3-plane-decay-deposit.json",
    }


def test_summary_lines_of_a_plane():
    document = {
        "preset": "tiny",
        "seed": 3,
        "twins": ["agent", "trail", "agent"],
        "perturbed_at_step": 1,
        "steps": 20,
        "backend": "torch",
        "device": "cpu",
        **plane_record(plane_of_four()),
    }
    assert summary_lines(document) == [
        "tiny (seed 3): 3 twins (2 agent, 1 trail) perturbed at step 1, 20 steps, torch on cpu",
        "plane model.decay x model.turn_angle: 3 points measured; unstable (exponent > 0/step): 2, "
        "by the 2x2 model: 3",
        "2x2 model agrees on 33% of the points (both unstable 1, both stable 0, model only 1, "
        "measurement only 1)",
    ]
