"""`physarum profile` on the CPU, at a tiny size: the trace file and the phases it reports."""

from __future__ import annotations

import json

from physarum.render.cli import main


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
    assert "first step" in printed
    phases = ("sense", "steer", "move", "deposit", "diffuse")  # the reference's, one line each
    for phase in phases:
        assert f"\n  {phase} " in printed, phase
    events = json.loads(trace.read_text())["traceEvents"]
    for phase in phases:
        assert sum(e.get("name") == phase for e in events) == 3, phase  # once a recorded step
