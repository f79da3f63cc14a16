"""The bench command on the CPU, at a tiny size: what it writes and reports."""

from __future__ import annotations

import json

import torch

from physarum.render.cli.main import main
from physarum.render.tools import bench


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


def test_bench_refuses_gpu_configs_on_a_cpu(capsys):
    assert main(["bench", "--configs", "L", "--device", "cpu"]) == 2
    assert "GPU configurations" in capsys.readouterr().err
