"""The bench and profile commands on the CPU, at tiny sizes: what they write and report."""

from __future__ import annotations

import json

import torch

from physarum.kernels.api import ModelParams
from physarum.kernels.prototype import PrototypeSimulation
from physarum.kernels.spawn import spawn
from physarum.render import bench
from physarum.render.cli import main


def test_bench_rows_have_every_figure_and_a_consistent_floor(monkeypatch, tmp_path):
    tiny = bench.Config("T", 2, 3000, 64, 48)
    monkeypatch.setitem(bench.CONFIGS, "T", tiny)
    out = tmp_path / "b.json"
    document = bench.run_bench(
        ["T"], torch.device("cpu"), out, develop_steps=5, skip={"torch.compile"}, log=lambda *_: None
    )
    assert json.loads(out.read_text()) == json.loads(json.dumps(document))
    rows = {r["implementation"]: r for r in document["results"]}
    assert set(rows) == {"prototype", "torch"}
    bandwidth = document["environment"]["copy_bandwidth_gb_per_s"] * 1e9
    for row in rows.values():
        seconds = row["ms_per_step"] / 1e3
        assert abs(row["agent_steps_per_s"] - 2 * 3000 / seconds) < 1e-6 * row["agent_steps_per_s"]
        floor = tiny.floor_bytes() / bandwidth
        assert abs(row["ratio_to_floor"] - seconds / floor) < 1e-6 * row["ratio_to_floor"]
    assert tiny.floor_bytes() == 2 * 2 * (3000 * 10 + 64 * 48 * 4)


def test_prototype_deposits_and_decays_the_expected_mass():
    params = ModelParams(22.5, 5, 45, 1, 2.0, 0.5, 0.25, 1)
    state = spawn([1], 500, 40, 30, "random")
    prototype = PrototypeSimulation(state, [params])
    prototype.advance(1)
    # every agent deposits 2.0 once; the 3x3 mean keeps mass; decay keeps 75%
    assert abs(float(prototype.trail.sum()) - 500 * 2.0 * 0.75) < 1e-2


def test_profile_writes_a_chrome_trace_and_reports_phases(tmp_path, capsys):
    preset = tmp_path / "p.yaml"
    preset.write_text(
        "name: p\ncanvas: {width: 32, height: 32}\nagents: {count: 300}\nmodel: {sensor_distance: 4}\n"
    )
    trace = tmp_path / "t.json"
    assert (
        main(
            [
                "profile",
                str(preset),
                "--backend",
                "torch",
                "--device",
                "cpu",
                "--steps",
                "3",
                "--warmup",
                "1",
                "--trace",
                str(trace),
            ]
        )
        == 0
    )
    printed = capsys.readouterr().out
    for phase in ("sense/steer/move", "deposit", "diffuse", "first step"):
        assert phase in printed
    events = json.loads(trace.read_text())["traceEvents"]
    assert any(e.get("name") == "diffuse" for e in events)


def test_bench_refuses_gpu_configs_on_a_cpu(capsys):
    assert main(["bench", "--configs", "L", "--device", "cpu"]) == 2
    assert "GPU configurations" in capsys.readouterr().err
