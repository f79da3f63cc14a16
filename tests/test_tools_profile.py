"""`physarum profile` on the CPU, at a tiny size: the trace file and the phases it reports."""

from __future__ import annotations

import json
import os
import stat
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


def _profile_to(tmp_path, trace) -> int:
    preset = tmp_path / "p.yaml"
    _ = preset.exists() or preset.write_text(
        "name: p\ncanvas: {width: 16, height: 16}\nagents: {count: 20}\nmodel: {sensor_distance: 3}\n"
    )
    flags = ["--backend", "torch", "--device", "cpu", "--steps", "1", "--warmup", "0"]
    return main(["profile", str(preset), *flags, "--trace", str(trace)])


def test_a_trace_that_cannot_be_written_is_refused_before_any_step(tmp_path, capsys, monkeypatch):
    """A folder (the profiler failed silently and success was printed), a FIFO (like a device
    such as /dev/full, which the profiler's export replaced with a regular file) or a path under
    a file: one message naming --trace, exit 2, no step run, nothing written."""
    monkeypatch.setattr(profile, "make_simulation", lambda *a: (_ for _ in ()).throw(AssertionError))
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    _profile_to(tmp_path, tmp_path / "folder")  # writes the preset
    for trace in (tmp_path / "folder", tmp_path / "fifo", tmp_path / "file" / "t.json"):
        before = sorted(tmp_path.rglob("*"))
        assert _profile_to(tmp_path, trace) == 2
        captured = capsys.readouterr()
        assert captured.err.startswith(f"error: --trace {trace}: cannot write the trace there")
        assert "trace:" not in captured.out
        assert sorted(tmp_path.rglob("*")) == before
    assert stat.S_ISFIFO(os.stat(tmp_path / "fifo").st_mode)


def test_a_trace_the_profiler_did_not_write_is_an_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(torch.profiler.profile, "export_chrome_trace", lambda self, path: None)
    trace = tmp_path / "t.json"
    assert _profile_to(tmp_path, trace) == 2
    assert "the profiler wrote no trace there" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.yaml"]
