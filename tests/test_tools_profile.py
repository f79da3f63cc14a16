"""`physarum profile` on the CPU, at a tiny size: the trace file and the phases it reports."""

from __future__ import annotations

import json
from types import SimpleNamespace

import torch

from physarum.render.cli.main import main
from physarum.render.tools import profile


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


def test_gpu_phase_times_count_the_kernels_inside_each_phase_range():
    """On a GPU a phase's time is that of the kernels inside its range on the GPU timeline (the
    Triton backend's launches are no torch operations, so its ranges' own device time is 0)."""
    gpu, cpu = torch.autograd.DeviceType.CUDA, torch.autograd.DeviceType.CPU

    def event(name, start, end, device_type=gpu):
        return SimpleNamespace(
            name=name,
            device_type=device_type,
            time_range=SimpleNamespace(start=start, end=end),
            device_time=end - start,
        )

    ranges = [
        event("diffuse", 0, 10),
        event("sort", 10, 40),
        event("diffuse", 50, 60),
        event("diffuse", 0, 99, cpu),
    ]
    kernels = [
        event("k1", 1, 4),
        event("k2", 5, 10),
        event("radix", 12, 30),
        event("k3", 50, 58),
        event("late", 70, 75),
    ]
    times = profile.gpu_phase_times(ranges + kernels, kernels, ("sort", "diffuse"))
    assert times == {"diffuse": 3 + 5 + 8, "sort": 18}  # the kernel outside every range counts nowhere
