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


def _profile_3d(tmp_path, **sections):
    import yaml

    from support import tiny_3d

    preset = tmp_path / "tiny3d.yaml"
    preset.write_text(yaml.safe_dump(tiny_3d(**sections)))
    trace = tmp_path / "t3.json"
    argv = ["profile", str(preset), "--backend", "torch", "--device", "cpu", "--steps", "2", "--warmup", "1"]
    return main([*argv, "--trace", str(trace)]), trace


def test_profile_runs_a_3d_preset_with_the_3d_phases(tmp_path, capsys):
    code, trace = _profile_3d(tmp_path)
    out = capsys.readouterr().out
    assert code == 0 and json.loads(trace.read_text())["traceEvents"]
    assert all(name in out for name in ("sense", "steer", "move", "deposit", "diffuse"))


def test_profile_refuses_an_oversize_3d_preset_before_spawning(tmp_path, capsys, monkeypatch):
    from physarum.render.run import machine

    monkeypatch.setattr(machine, "available_bytes", lambda where: 2**30)
    monkeypatch.setattr(
        profile, "make_simulation", lambda *a: (_ for _ in ()).throw(AssertionError("spawned"))
    )
    code, trace = _profile_3d(tmp_path, canvas={"width": 512, "height": 512, "depth": 512})
    err = capsys.readouterr().err
    assert code == 2 and "canvas 512x512x512 with 600 agents needs about" in err and "1.0 GiB are free" in err
    assert err.count("error:") == 1 and "Traceback" not in err and not trace.exists()


def test_bench_takes_no_preset_and_says_so(tmp_path, capsys):
    """`physarum bench` times fixed configurations (2D); a preset, 3D or not, is refused by the
    parser with exit 2 (the harness's case 3d times the 3D step)."""
    import pytest
    import yaml

    from support import tiny_3d

    preset = tmp_path / "tiny3d.yaml"
    preset.write_text(yaml.safe_dump(tiny_3d()))
    with pytest.raises(SystemExit) as exited:
        main(["bench", str(preset), "--device", "cpu"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and f"unrecognized arguments: {preset}" in err and "Traceback" not in err
