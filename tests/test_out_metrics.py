"""Per-frame metrics (render/out/metrics.py): each column on hand-made maps, and `render --metrics`
(one row per frame, the PNG the same bytes as without the flag)."""

from __future__ import annotations

import csv
import math

import torch

from physarum.render.cli.main import main
from physarum.render.out.metrics import METRIC_COLUMNS, band_weights, combined_trail, frame_metrics
from support import tiny_data, write_preset

COLUMN = {name: i for i, name in enumerate(METRIC_COLUMNS)}


def metrics_of(maps: torch.Tensor, previous: torch.Tensor | None = None) -> dict:
    weights = band_weights(maps.shape[-2], maps.shape[-1], maps.device)
    row = frame_metrics(maps[None].double(), None if previous is None else previous[None].double(), weights)
    return dict(zip(METRIC_COLUMNS, row[0].tolist()))


def test_mass_coverage_veins_and_travel_of_hand_made_maps():
    maps = torch.zeros(32, 32)
    maps[0, :4] = 8.0  # 4 hot cells of 1024: mean 1/32
    found = metrics_of(maps)
    assert found["mass"] == 32 / 1024
    assert found["coverage"] == 4 / 1024
    assert found["veins"] == 4 / 1024  # 8 > 4 * mean
    assert math.isnan(found["travel"])
    moved = torch.roll(maps, 1, dims=1)  # one of the four cells moved: |diff| = 16 of 32
    assert metrics_of(moved, maps)["travel"] == 0.5
    empty = metrics_of(torch.zeros(32, 32), torch.zeros(32, 32))
    assert (empty["mass"], empty["coverage"], empty["veins"], empty["travel"]) == (0, 0, 0, 0)
    assert [empty[f"band_{i}"] for i in range(1, 5)] == [0, 0, 0, 0]


def test_a_sinusoid_lies_in_its_band():
    _, x = torch.meshgrid(torch.arange(128.0), torch.arange(128.0), indexing="ij")
    for cycles, band in ((2, 1), (8, 2), (32, 3), (50, 3), (64, 4)):
        maps = 1 + torch.cos(2 * math.pi * cycles * x / 128)  # ring `cycles`, whatever y
        assert metrics_of(maps.T)[f"band_{band}"] > 0.999  # the same across
        found = metrics_of(maps)
        assert found[f"band_{band}"] > 0.999, (cycles, found)
        assert abs(sum(found[f"band_{i}"] for i in range(1, 5)) - 1) < 1e-9


def test_species_maps_are_summed_per_simulation():
    trail = torch.arange(4 * 2 * 3, dtype=torch.float32).reshape(4, 2, 3)  # 2 simulations of 2 species
    combined = combined_trail(trail, 2)
    assert combined.shape == (2, 2, 3)
    assert torch.equal(combined[1], (trail[2] + trail[3]).double())


def test_render_metrics_writes_a_row_per_frame_and_leaves_the_png(tmp_path):
    path = write_preset(tmp_path, tiny_data(output={"formats": ["png"]}))
    common = ["render", str(path), "--quiet", "--backend", "torch", "--device", "cpu"]
    assert main([*common, "--out", str(tmp_path / "a")]) == 0
    assert main([*common, "--out", str(tmp_path / "b"), "--metrics"]) == 0
    png = "tiny/tiny-s3.png"
    assert (tmp_path / "a" / png).read_bytes() == (tmp_path / "b" / png).read_bytes()
    assert not (tmp_path / "a" / "tiny" / "tiny-s3.metrics.csv").exists()
    with open(tmp_path / "b" / "tiny" / "tiny-s3.metrics.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["step"]) for r in rows] == list(range(3, 25, 3))  # 8 frames of 3 steps
    assert [int(r["frame"]) for r in rows] == list(range(8))
    assert all(float(r["mass"]) > 0 for r in rows) and rows[0]["travel"] == "nan"


def test_a_volume_counts_cell_by_cell_and_its_bands_are_its_projections():
    volume = torch.zeros(4, 32, 32)
    volume[1, 0, :4] = 8.0
    found = metrics_of(volume)
    assert found["mass"] == 32 / 4096 and found["coverage"] == 4 / 4096
    _, x = torch.meshgrid(torch.arange(32.0), torch.arange(32.0), indexing="ij")
    waves = (1 + torch.cos(2 * torch.pi * 8 * x / 32)).expand(4, 32, 32)
    assert metrics_of(waves)["band_2"] > 0.999
    assert combined_trail(torch.ones(6, 2, 3, 5), 3).shape == (2, 2, 3, 5)
