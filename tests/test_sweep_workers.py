"""Where chunks run on this host: devices, worker processes (forked or spawned) and their pool."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
from unittest import mock

import pytest
import torch

from physarum.render import sweep as sweeps
from physarum.render.base.errors import RenderError
from physarum.render.cli.main import main
from physarum.render.run import machine, runner
from physarum.render.sweep import workers
from support import SWEEP_BASE, read_manifest, write_sweep


@pytest.mark.slow
def test_two_worker_processes_share_the_jobs(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2, 0.3, 0.4]})
    out = tmp_path / "out"
    assert (
        main(["sweep", str(path), "--out", str(out), "--devices", "cpu,cpu", "--quiet", "--no-gallery"]) == 0
    )
    done = [r for r in read_manifest(out / "s") if r["status"] == "done"]
    assert len(done) == 4 and {r["batch"] for r in done} == {2}  # split so that both workers get one
    assert os.getpid() not in {r["pid"] for r in done}  # rendered in the worker processes
    alone = runner.render(
        sweeps.load_sweep(path).jobs[2].preset,
        backend="torch",
        device="cpu",
        out_dir=tmp_path / "alone",
        quiet=True,
    )
    job = next(r for r in done if r["name"] == "s-0002")
    assert (out / "s" / job["outputs"]["gif"]).read_bytes() == alone.outputs["gif"].read_bytes()
    # run again: nothing is left to do, the pool started for it is stopped, nothing is rendered
    capsys.readouterr()
    assert main(["sweep", str(path), "--out", str(out), "--devices", "cpu,cpu", "--no-gallery"]) == 0
    assert "4 jobs: 4 done (0 run now, 4 done before), 0 failed" in capsys.readouterr().out
    assert len(read_manifest(out / "s")) == len(done) + 4  # 4 running + 4 done records, none added


def test_workers_fork_for_gpus_spawn_for_the_cpu_and_the_choice_can_be_forced(monkeypatch):
    monkeypatch.delenv("PHYSARUM_START_METHOD", raising=False)
    assert sweeps.start_method(["cpu", "cpu"]) == "spawn"
    with mock.patch.object(workers, "_nvml_count", return_value=2):
        expected = "fork" if sys.platform.startswith("linux") and not torch.cuda.is_initialized() else "spawn"
        assert sweeps.start_method(["cuda:0", "cuda:1"]) == expected
    with mock.patch.object(workers, "_nvml_count", return_value=-1):  # counting initialised CUDA
        assert sweeps.start_method(["cuda:0", "cuda:1"]) == "spawn"
    monkeypatch.setenv("PHYSARUM_START_METHOD", "spawn")
    assert sweeps.start_method(["cuda:0", "cuda:1"]) == "spawn"
    monkeypatch.setenv("PHYSARUM_START_METHOD", "teleport")
    with pytest.raises(RenderError, match="PHYSARUM_START_METHOD='teleport': use one of"):
        sweeps.start_method(["cuda:0"])


@pytest.mark.slow
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forked workers are used on Linux only")
def test_forked_workers_render_what_spawned_ones_do(tmp_path):
    """Forked as GPU workers are (forced here on the CPU, from a fresh process that has run no
    torch threads), byte for byte the files of spawned workers."""
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.3]})
    for method in ("fork", "spawn"):
        subprocess.run(
            [
                sys.executable,
                "-m",
                "physarum.render.cli",
                "sweep",
                str(path),
                "--out",
                str(tmp_path / method),
                "--devices",
                "cpu,cpu",
                "--quiet",
                "--no-gallery",
            ],
            check=True,
            env={**os.environ, "PHYSARUM_START_METHOD": method},
            capture_output=True,
        )
    files = {
        method: sorted(
            p.relative_to(tmp_path / method)
            for p in (tmp_path / method).glob("s/*/*.*")
            if p.suffix in (".gif", ".mp4", ".png")
        )
        for method in ("fork", "spawn")
    }
    assert files["fork"] == files["spawn"] and len(files["fork"]) == 2 * len(SWEEP_BASE["output"]["formats"])
    files = files["fork"]
    for name in files:
        assert (tmp_path / "fork" / name).read_bytes() == (tmp_path / "spawn" / name).read_bytes()
    assert len({r["pid"] for r in read_manifest(tmp_path / "fork" / "s") if r["status"] == "done"}) == 2


def test_a_sweep_that_fits_no_device_stops_its_worker_pool(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2]})
    out = tmp_path / "out"
    with mock.patch.object(machine, "available_bytes", return_value=1024):
        assert main(["sweep", str(path), "--out", str(out), "--devices", "cpu,cpu", "--quiet"]) == 2
    assert "needs about" in capsys.readouterr().err and not out.exists()
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("physarum-sweep")]


def test_bad_devices_are_a_clear_error(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.decay": [0.1]})
    assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--devices", "cpu,tpu:0"]) == 2
    assert "--devices cpu,tpu:0: 'tpu:0' is not a device; use all, cpu, cuda:N" in capsys.readouterr().err
    if not runner.torch.cuda.is_available():
        assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--devices", "cuda:1"]) == 2
        assert (
            "--devices cuda:1: this machine has 0 CUDA GPU(s); use --devices cpu" in capsys.readouterr().err
        )
    assert not (tmp_path / "out").exists()
