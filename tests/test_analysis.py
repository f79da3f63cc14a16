"""Sensitivity analysis and run statistics: twins, exponent fits, the 2x2 model, statistics of
hand-made maps, and the command line's handling of bad input."""

from __future__ import annotations

import csv
import importlib.util
import math
import os

import numpy as np
import pytest
import torch

from physarum.kernels import reference
from physarum.kernels.exact import build_tables
from physarum.kernels.spawn import spawn
from physarum.render import analysis
from physarum.render.analysis import (
    AnalysisError,
    LinearModel,
    RunOptions,
    Twin,
    fit_exponent,
    linear_model,
    mean_and_error,
    parse_plane_axis,
    run_twins,
    saturation_index,
    twin_kinds,
)
from physarum.render.cli import main
from physarum.render.preset import build_preset
from physarum.render.stats import STAT_COLUMNS, SpectrumRings, trail_statistics
from support import tiny_data

COLUMN = {name: i for i, name in enumerate(STAT_COLUMNS)}


def tiny(**model):
    return build_preset(tiny_data(model={**tiny_data()["model"], **model}), "tiny.yaml")


def dense(**model):
    """64 x 64 with 4000 agents: enough agents that some stand one 16.16 unit short of a cell
    boundary within the look-ahead."""
    data = tiny_data(canvas={"width": 64, "height": 64}, agents={"count": 4000})
    data["model"].update(model)
    return build_preset(data, "dense.yaml")


# ---------------------------------------------------------------------------------------------
# Twins


def test_identical_twins_never_diverge():
    series = run_twins([tiny()], RunOptions(steps=40, twins=("none", "none", "none")))
    l1, correlation, distance = (series.metrics[0, :, :, i] for i in range(3))
    assert series.metrics.shape == (1, 3, 41, 3)
    assert np.all(l1 == 0) and np.all(distance == 0)
    assert np.allclose(correlation, 1.0, atol=1e-12)
    assert np.all(series.decorrelated[0, :, 0] > 0)  # the base itself is not empty


def test_a_decisive_trail_cell_parts_the_agents_at_the_next_step():
    preset = tiny()
    series = run_twins([preset], RunOptions(steps=30, twins=("trail", "trail")))
    for k, twin in enumerate(series.twins[0]):
        assert twin.kind == "trail" and twin.found
        l1, distance = series.metrics[0, k, :, 0], series.metrics[0, k, :, 2]
        assert 0 < l1[0] < 1e-6  # one ulp in one cell
        assert distance[0] == 0 and distance[1] > 0  # an agent turned differently at once
        assert l1.max() > 1e-4


def test_decisive_cells_really_change_a_turn():
    preset = tiny()
    state = spawn([preset.seed], preset.agents.count, 48, 32)
    tables = build_tables([preset.model_params()])
    simulation = reference.TorchSimulation(state, tables)
    simulation.advance(1)  # ties (equal readings) are common only while the trail is young
    cells = analysis.decisive_cells(simulation.state, tables)[0]
    assert len(cells) > 0
    base = simulation.state
    after = reference.step(base, tables)
    for cell in cells[:5].tolist():
        raised = base.clone()
        flat = raised.trail.view(-1)
        flat[cell] = torch.nextafter(flat[cell], torch.tensor(math.inf))
        assert not torch.equal(reference.step(raised, tables).heading, after.heading)


def test_an_agent_shifted_by_one_unit_diverges():
    series = run_twins([dense()], RunOptions(steps=60, twins=("agent",)))
    twin = series.twins[0][0]
    l1, distance = series.metrics[0, 0, :, 0], series.metrics[0, 0, :, 2]
    assert twin.kind == "agent" and twin.found
    assert l1[0] == 0 and distance[0] == pytest.approx(1 / 65536 / 4000)
    assert l1.max() > 0


def test_deposit_is_a_pure_scale_of_the_model():
    """Doubling deposit doubles every trail value exactly (binary floating point), so agents
    take the same paths and normalised divergences agree bit for bit (from the first step on: a
    trail twin raised from 0 to TRAIL_FLOOR starts at a divergence that does not scale)."""
    options = RunOptions(steps=25, twins=("agent", "trail"))
    one = run_twins([tiny(deposit=1.0)], options)
    two = run_twins([tiny(deposit=2.0)], options)
    assert one.twins == two.twins
    assert np.array_equal(one.metrics[:, :, 1:], two.metrics[:, :, 1:])
    assert one.metrics[0, 1, -1, 0] > 0.01  # the twins did part


def test_plane_points_run_batched_like_single_runs():
    axes = [parse_plane_axis("model.decay=0.05:0.2:2"), parse_plane_axis("model.turn_angle=30:60:2")]
    presets = analysis.plane_presets(tiny(), axes)
    assert [(p.model.decay, p.model.turn_angle) for p in presets] == [
        (0.05, 30.0),
        (0.05, 60.0),
        (0.2, 30.0),
        (0.2, 60.0),
    ]
    options = RunOptions(steps=12, twins=("trail",))
    batched = run_twins(presets, options)
    alone = run_twins([presets[2]], options)
    assert batched.twins[2] == alone.twins[0]
    assert np.array_equal(batched.metrics[2], alone.metrics[0])


# ---------------------------------------------------------------------------------------------
# Fits


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


# ---------------------------------------------------------------------------------------------
# The 2x2 model


@pytest.mark.parametrize(
    "decay, deposit, response, damping",
    [(0.1, 5.0, 0.02, 0.11), (0.3, 1.0, 0.01, 0.5), (0.05, 0.0, 0.3, 0.2), (0.2, 2.0, 0.1, 0.2)],
)
def test_linear_model_eigenvalues_match_the_closed_form_and_numpy(decay, deposit, response, damping):
    model = LinearModel(decay, deposit, response, damping)
    leading, other = model.eigenvalues()
    trace, determinant = -(decay + damping), decay * damping - response * deposit
    closed = (
        (trace + math.sqrt(trace**2 - 4 * determinant)) / 2,
        (trace - math.sqrt(trace**2 - 4 * determinant)) / 2,
    )
    assert (leading, other) == pytest.approx(closed, abs=1e-12)
    assert sorted(np.linalg.eigvals(model.jacobian()).real) == pytest.approx([other, leading], abs=1e-12)
    assert model.unstable == (leading > 0) == (response * deposit > decay * damping)


def test_linear_model_mapping():
    model = {
        "sensor_angle": 22.5,
        "sensor_distance": 9.0,
        "turn_angle": 45.0,
        "step_size": 1.0,
        "deposit": 3.0,
        "diffuse": 0.0,
        "decay": 0.12,
    }
    mapped = linear_model(model, density=0.5)
    assert mapped.decay == pytest.approx(-math.log(0.88))  # no diffusion: decay alone
    assert mapped.deposit == 3.0 and mapped.damping == pytest.approx(1 / 9)
    assert mapped.response == pytest.approx(0.5 * math.sin(math.pi / 4) / 9)
    assert not linear_model({**model, "turn_angle": 0.0}, density=0.5).unstable  # no steering
    blurred = linear_model({**model, "diffuse": 1.0}, density=0.5)
    assert blurred.decay > mapped.decay  # the blur damps the sensor-scale mode too


# ---------------------------------------------------------------------------------------------
# Run statistics


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
    assert (
        main(
            [
                "render",
                str(path),
                "--out",
                str(tmp_path),
                "--quiet",
                "--backend",
                "torch",
                "--device",
                "cpu",
                "--stats",
            ]
        )
        == 0
    )
    with open(tmp_path / "tiny" / "tiny-s3.stats.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert [int(r["step"]) for r in rows] == list(range(1, 15))  # warm-up steps included
    preset = build_preset(data, "tiny.yaml")
    simulation = reference.TorchSimulation(
        spawn([preset.seed], preset.agents.count, 48, 32), build_tables([preset.model_params()])
    )
    simulation.advance(14)
    assert float(rows[-1]["mean"]) == pytest.approx(simulation.trail.double().mean().item(), rel=1e-8)


# ---------------------------------------------------------------------------------------------
# Command line


def test_cli_sensitivity_writes_csv_plot_and_summary(tmp_path, write_yaml, capsys):
    import json

    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    code = main(
        [
            "sensitivity",
            str(path),
            "--steps",
            "20",
            "--twins",
            "2",
            "--out",
            str(tmp_path),
            "--quiet",
            "--backend",
            "torch",
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    folder = tmp_path / "tiny"
    with open(folder / "tiny-s3-sensitivity.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 21 * 2 and {r["kind"] for r in rows} == {"agent", "trail"}
    summary = json.loads((folder / "tiny-s3-sensitivity.json").read_text())
    assert summary["summary"]["all"]["twins"] == 2
    assert (folder / "tiny-s3-sensitivity.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "exponent" in capsys.readouterr().out


def test_cli_plane_writes_a_heat_map(tmp_path, write_yaml, capsys):
    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    code = main(
        [
            "sensitivity",
            str(path),
            "--steps",
            "15",
            "--twins",
            "1",
            "--out",
            str(tmp_path),
            "--quiet",
            "--backend",
            "torch",
            "--device",
            "cpu",
            "--plane",
            "model.deposit=1:8:2",
            "model.decay=0.05:0.3:3",
        ]
    )
    assert code == 0
    folder = tmp_path / "tiny"
    with open(folder / "tiny-s3-plane-deposit-decay.csv", newline="") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 6 and rows[0]["model.deposit"] == "1" and rows[-1]["model.decay"] == "0.3"
    assert (folder / "tiny-s3-plane-deposit-decay.png").exists()
    assert "2x2 model agrees" in capsys.readouterr().out


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--plane", "model.decay=0.1:0.3", "model.deposit=1:2:2"], "expected KEY=LO:HI:N"),
        (["--plane", "model.decai=0.1:0.3:2", "model.deposit=1:2:2"], "did you mean 'model.decay'"),
        (["--plane", "canvas.width=64:128:2", "model.deposit=1:2:2"], "not a model parameter"),
        (["--plane", "model.decay=0.1:x:2", "model.deposit=1:2:2"], "must be numbers"),
        (["--plane", "model.decay=0.1:0.3:0", "model.deposit=1:2:2"], "N must be from 1 to 1024"),
        (["--plane", "model.decay=0.1:1.5:3", "model.deposit=1:2:2"], "model.decay"),
        (["--plane", "model.decay=0.1:0.3:2", "model.decay=0.1:0.2:2"], "two different"),
        (["--twins", "0"], "--twins must be from 1 to 64"),
        (["--at", "0"], "--at must be at least 1"),
        (["--steps", "0"], "--steps must be a positive"),
    ],
)
def test_cli_sensitivity_bad_input_exits_2_and_writes_nothing(
    arguments, message, tmp_path, write_yaml, capsys
):
    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    out = tmp_path / "out"
    code = main(["sensitivity", str(path), "--out", str(out), "--quiet", "--device", "cpu", *arguments])
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_cli_plane_needs_two_axes(tmp_path, write_yaml, capsys):
    import yaml

    path = write_yaml(yaml.safe_dump(tiny_data()))
    with pytest.raises(SystemExit) as exit_info:
        main(["sensitivity", str(path), "--out", str(tmp_path / "out"), "--plane", "model.decay=0.1:0.3:2"])
    assert exit_info.value.code == 2
    assert "--plane: expected 2 arguments" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_plane_axis_parsing():
    axis = parse_plane_axis("model.deposit=1:10:4")
    assert axis.key == "model.deposit" and axis.values == (1.0, 4.0, 7.0, 10.0)
    assert parse_plane_axis("model.decay=0.2:0.9:1").values == (0.2,)
    with pytest.raises(AnalysisError):
        parse_plane_axis("model.decay=nan:1:2")


def test_twin_kinds_alternate():
    assert twin_kinds(5) == ["agent", "trail", "agent", "trail", "agent"]
    assert Twin("trail", 3 * 48 + 5).describe(48) == "cell (5, 3)"


@pytest.mark.interpreter
@pytest.mark.skipif(
    os.environ.get("TRITON_INTERPRET") != "1" or importlib.util.find_spec("triton") is None,
    reason="needs triton and TRITON_INTERPRET=1 set before Python starts",
)
def test_triton_twins_match_the_reference(monkeypatch):
    """The Triton backend sorts its agents by cell (at once, then every SORT_EVERY steps); twins
    still compare same-index agents, in spawn order."""
    from physarum.kernels import triton_kernels

    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_H", 16)
    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_W", 64)
    options = RunOptions(steps=8, twins=("agent", "trail"), lookahead=4)
    torch_series = run_twins([tiny()], options)
    options.backend = "triton"
    triton_series = run_twins([tiny()], options)
    assert triton_series.twins == torch_series.twins
    assert np.array_equal(triton_series.metrics, torch_series.metrics)


def test_no_cell_is_decisive_where_agents_cannot_turn():
    preset = tiny(turn_angle=0.0)
    tables = build_tables([preset.model_params()])
    simulation = reference.TorchSimulation(spawn([preset.seed], preset.agents.count, 48, 32), tables)
    simulation.advance(1)
    assert len(analysis.decisive_cells(simulation.state, tables)[0]) == 0
    twins = analysis.choose_trail_twins(simulation.state, tables, 2, preset.seed)[0]
    assert [t.found for t in twins] == [False, False]
