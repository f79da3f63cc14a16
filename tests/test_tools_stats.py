"""Run statistics (render/tools/stats.py): every column on hand-made maps, and `render --stats`."""

from __future__ import annotations

import csv
import math

import pytest
import torch

from physarum.kernels import reference
from physarum.kernels.exact import build_tables
from physarum.kernels.spawn import spawn
from physarum.render.cli.main import main
from physarum.render.preset import build_preset
from physarum.render.tools.stats import STAT_COLUMNS, SpectrumRings, trail_statistics
from support import tiny_data

COLUMN = {name: i for i, name in enumerate(STAT_COLUMNS)}


def render_with_stats(path, out) -> list[str]:
    """The command line of a quiet --stats render of the preset at `path` into `out` (torch, CPU)."""
    return [
        "render",
        str(path),
        "--out",
        str(out),
        "--quiet",
        "--backend",
        "torch",
        "--device",
        "cpu",
        "--stats",
    ]


def stats_of(trail: torch.Tensor) -> dict:
    row = trail_statistics(trail[None].to(torch.float32))[0].tolist()
    return dict(zip(STAT_COLUMNS, row))


def test_statistics_of_a_uniform_map():
    stats = stats_of(torch.full((32, 48), 2.5))
    assert stats["mean"] == 2.5 and stats["max"] == 2.5 and stats["coverage"] == 1.0
    assert stats["entropy"] == pytest.approx(math.log(32 * 48), abs=1e-6)
    assert stats["entropy_ratio"] == pytest.approx(1.0, abs=1e-7)
    assert math.isnan(stats["wavelength_px"])  # no structure at all


def test_statistics_of_a_single_hot_cell():
    trail = torch.zeros(32, 48)
    trail[7, 11] = 96.0
    stats = stats_of(trail)
    assert stats["mean"] == pytest.approx(96.0 / (32 * 48)) and stats["max"] == 96.0
    assert stats["coverage"] == pytest.approx(1 / (32 * 48))
    assert stats["entropy"] == pytest.approx(0.0, abs=1e-6)


def test_statistics_of_two_levels():
    """Half the cells at 3, half at 1: p is 3/(2n) or 1/(2n) per cell (n cells in each half)."""
    trail = torch.ones(16, 16)
    trail[:8] = 3.0
    stats = stats_of(trail)
    n = 128
    expected = -(n * 3 / (4 * n) * math.log(3 / (4 * n)) + n * 1 / (4 * n) * math.log(1 / (4 * n)))
    assert stats["entropy"] == pytest.approx(expected, abs=1e-6)
    assert stats["coverage"] == 1.0 and stats["mean"] == 2.0


@pytest.mark.parametrize(
    "height, width, period, axis", [(64, 64, 8, "x"), (48, 64, 8, "x"), (48, 48, 12, "y"), (40, 80, 10, "x")]
)
def test_dominant_wavelength_of_a_sinusoid(height, width, period, axis):
    y, x = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    coordinate = x if axis == "x" else y
    trail = 1.0 + torch.sin(2 * math.pi * coordinate / period)
    stats = stats_of(trail)
    assert stats["wavelength_px"] == pytest.approx(period)
    assert stats["wavelength_fraction"] == pytest.approx(period / min(height, width))


def test_dominant_wavelength_between_two_neighbouring_rings():
    """Power in rings 8 and 9 (cycles per side) gives a wavelength between 64/9 and 64/8 pixels,
    nearer the stronger ring: the weighted mean ring, not a jump to one of them."""
    y, x = torch.meshgrid(torch.arange(64), torch.arange(64), indexing="ij")
    trail = 3.0 + torch.sin(2 * math.pi * 8 * x / 64) + 0.5 * torch.sin(2 * math.pi * 9 * y / 64)
    wavelength = stats_of(trail)["wavelength_px"]
    assert 64 / 9 < wavelength < 64 / 8
    assert abs(wavelength - 64 / 8) < abs(wavelength - 64 / 9)


def test_dominant_wavelength_is_the_ring_of_most_power_not_of_the_highest_average():
    """A network's cells spread their power over the many frequencies of one ring; a faint
    large-scale shading puts more power into each of the few frequencies of ring 1, but less
    into the ring in all. The cells' ring is the dominant one."""
    y, x = torch.meshgrid(torch.arange(64), torch.arange(64), indexing="ij")
    trail = 3.0 + 0.6 * torch.sin(2 * math.pi * x / 64)  # ring 1: 0.36 in one frequency
    for k in range(8):  # ring 8: 8 directions of 0.3, 0.72 in all
        angle = math.pi * k / 8
        fx, fy = round(8 * math.cos(angle)), round(8 * math.sin(angle))
        trail = trail + 0.3 * torch.cos(2 * math.pi * (fx * x + fy * y) / 64 + k)
    assert 64 / 9 < stats_of(trail)["wavelength_px"] < 64 / 7


def test_statistics_of_an_empty_map():
    stats = stats_of(torch.zeros(16, 24))
    assert (stats["mean"], stats["max"], stats["coverage"], stats["entropy"]) == (0, 0, 0, 0)


def test_statistics_are_batched_per_map():
    maps = torch.stack([torch.full((16, 16), 1.0), torch.zeros(16, 16)])
    maps[1, 3, 3] = 1.0
    rows = trail_statistics(maps, SpectrumRings(16, 16, maps.device))
    assert rows[0, COLUMN["coverage"]] == 1.0 and rows[1, COLUMN["coverage"]] == 1 / 256


def test_render_stats_writes_one_row_per_step(tmp_path, write_yaml):
    import yaml

    data = tiny_data(run={"steps": 12, "steps_per_frame": 3, "warmup": 2}, output={"formats": ["png"]})
    path = write_yaml(yaml.safe_dump(data))
    assert main(render_with_stats(path, tmp_path)) == 0
    with open(tmp_path / "tiny" / "tiny-s3.stats.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["step"]) for r in rows] == list(range(1, 15))  # warm-up steps included
    preset = build_preset(data, "tiny.yaml")
    simulation = reference.TorchSimulation(
        spawn([preset.seed], preset.agents.count, 48, 32), build_tables([preset.model_params()])
    )
    simulation.advance(14)
    assert float(rows[-1]["mean"]) == pytest.approx(simulation.trail.double().mean().item(), rel=1e-8)


def test_the_stats_csv_is_committed_with_the_render(tmp_path, write_yaml, capsys):
    """--stats writes its CSV with the render's other files, all or nothing: when the CSV cannot
    be put in place (a folder in its way), no GIF, PNG or sidecar of the render appears either
    (the CSV used to be written after they were in place), and an earlier CSV is replaced with
    the render's files and said so."""
    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data(output={"formats": ["gif", "png"]})))
    out = tmp_path / "out"
    argv = render_with_stats(path, out)
    (out / "tiny" / "tiny-s3.stats.csv" / "in-the-way").mkdir(parents=True)
    assert main(argv) == 2
    assert "tiny-s3.stats.csv" in capsys.readouterr().err
    assert sorted(p.name for p in (out / "tiny").iterdir()) == ["tiny-s3.stats.csv"]  # the folder only
    (out / "tiny" / "tiny-s3.stats.csv" / "in-the-way").rmdir()
    (out / "tiny" / "tiny-s3.stats.csv").rmdir()
    assert main(argv) == 0 and main(argv) == 0
    printed = capsys.readouterr()
    assert "stats " + str(out / "tiny" / "tiny-s3.stats.csv") in printed.out
    assert "tiny-s3.stats.csv" in printed.err.splitlines()[-1]  # note: replaced ..., tiny-s3.stats.csv
    assert sorted(p.suffix for p in (out / "tiny").iterdir()) == [".csv", ".gif", ".json", ".png"]
