"""Sweeps: expansion, validation, batched renders equal to single ones, resume after a real
kill, several workers, Ray on the CPU, and the gallery in a real headless Chromium."""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import time
from html.parser import HTMLParser
from pathlib import Path
from unittest import mock

import av
import pytest
import torch
import yaml
from PIL import Image

from physarum.render import machine, runner
from physarum.render import sweep as sweeps
from physarum.render.cli import main
from physarum.render.encode import read_embedded
from physarum.render.errors import RenderError
from physarum.render.gallery import preset_yaml, write_gallery
from physarum.render.preset import PresetError, build_preset
from support import ROOT, tiny_data

SMALL = tiny_data(
    canvas={"width": 32, "height": 32},
    agents={"count": 300},
    run={"steps": 12, "steps_per_frame": 3},
    output={"formats": ["gif", "png"]},
)
del SMALL["name"]


def write_sweep(folder: Path, name: str = "s", base: dict | None = None, **sections) -> Path:
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"name": name, "base": base or SMALL, **sections}, sort_keys=False))
    return path


def expand(sections: dict, base: dict | None = None) -> sweeps.Sweep:
    return sweeps.expand_sweep({"name": "s", "base": copy.deepcopy(base or SMALL), **sections}, "s.yaml")


def sweep_problems(sections: dict, base: dict | None = None) -> list[str]:
    with pytest.raises(PresetError) as caught:
        expand(sections, base)
    return caught.value.problems


def files_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file()) if folder.exists() else []


# ---------------------------------------------------------------------------------------------
# Expansion


def test_grid_zip_random_and_seeds_combine_in_order():
    sweep = expand(
        {
            "grid": {"model.sensor_angle": [15, 45], "model.turn_angle": [10, 20, 30]},
            "zip": {"model.decay": [0.05, 0.1], "model.deposit": [2, 4]},
            "random": {"count": 2, "seed": 1, "params": {"model.diffuse": {"uniform": [0.1, 0.9]}}},
            "seeds": [7, 8],
        }
    )
    assert len(sweep.jobs) == 2 * 3 * 2 * 2 * 2
    first, last = sweep.jobs[0], sweep.jobs[-1]
    assert list(first.params) == [
        "model.sensor_angle",
        "model.turn_angle",
        "model.decay",
        "model.deposit",
        "model.diffuse",
        "seed",
    ]
    assert (first.params["model.sensor_angle"], first.params["model.turn_angle"], first.params["seed"]) == (
        15,
        10,
        7,
    )
    assert (last.params["model.sensor_angle"], last.params["model.turn_angle"], last.params["seed"]) == (
        45,
        30,
        8,
    )
    assert {(j.params["model.decay"], j.params["model.deposit"]) for j in sweep.jobs} == {(0.05, 2), (0.1, 4)}
    assert first.preset.model.sensor_angle == 15 and first.preset.seed == 7 and last.preset.seed == 8
    assert [j.name for j in sweep.jobs[:2]] == ["s-0000", "s-0001"] and sweep.jobs[5].preset.name == "s-0005"
    assert len({j.id for j in sweep.jobs}) == len(sweep.jobs)
    assert [j.id for j in expand({"grid": {"model.sensor_angle": [15, 45]}}).jobs] == [
        j.id for j in expand({"grid": {"model.sensor_angle": [15, 45]}}).jobs
    ]


def test_zip_lists_of_different_lengths_are_an_error():
    problems = sweep_problems({"zip": {"model.decay": [0.05, 0.1, 0.2], "model.deposit": [2, 4]}})
    assert problems == [
        "s.yaml: zip: the lists must have equal lengths to be walked together "
        "(got model.decay: 3, model.deposit: 2)"
    ]


def test_random_samples_are_reproducible_and_in_range():
    section = {
        "random": {
            "count": 20,
            "seed": 5,
            "params": {
                "model.sensor_angle": {"uniform": [10, 90]},
                "model.decay": {"log_uniform": [0.01, 0.3]},
                "agents.count": {"uniform": [100, 500]},
                "palette.names": {"choice": [["magma"], ["ice"]]},
            },
        }
    }
    one, two = expand(section), expand(section)
    values = [j.params for j in one.jobs]
    assert values == [j.params for j in two.jobs]
    assert [j.id for j in one.jobs] == [j.id for j in two.jobs]
    other = copy.deepcopy(section)
    other["random"]["seed"] = 6
    assert values != [j.params for j in expand(other).jobs]
    assert all(
        10 <= v["model.sensor_angle"] <= 90 and isinstance(v["model.sensor_angle"], float) for v in values
    )
    assert all(0.01 <= v["model.decay"] <= 0.3 for v in values)
    assert all(isinstance(v["agents.count"], int) and 100 <= v["agents.count"] <= 500 for v in values)
    assert {tuple(v["palette.names"]) for v in values} == {("magma",), ("ice",)}
    many = expand(
        {"random": {"count": 400, "seed": 5, "params": {"model.decay": {"log_uniform": [0.01, 0.3]}}}}
    )
    decays = sorted(j.params["model.decay"] for j in many.jobs)
    assert 0.04 < decays[200] < 0.075  # log-uniform: the median is near sqrt(0.01 * 0.3) = 0.055, not 0.155


def test_base_preset_file_relative_to_the_sweep_and_previews_capped(tmp_path):
    (tmp_path / "presets").mkdir()
    (tmp_path / "presets" / "big.yaml").write_text(
        yaml.safe_dump({**SMALL, "name": "big", "canvas": {"width": 1024, "height": 512}})
    )
    (tmp_path / "sweeps").mkdir()
    path = tmp_path / "sweeps" / "Big Sweep.yaml"
    path.write_text("base: ../presets/big.yaml\ngrid: {model.decay: [0.1, 0.2]}\n")
    sweep = sweeps.load_sweep(path)
    assert sweep.name == "big-sweep" and sweep.jobs[0].preset.name == "big-sweep-0000"
    assert sweep.jobs[0].preset.output.gif_scale == 0.25  # previews at most 256 px
    kept = expand({"grid": {"output.gif_scale": [0.5]}}, {**SMALL, "canvas": {"width": 1024, "height": 512}})
    assert kept.jobs[0].preset.output.gif_scale == 0.5


def test_every_invalid_job_is_reported_at_once_with_its_values(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.sensor_angle": [45, 200, 300], "model.decay": [0.1, 1.5]})
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "s-0001 (model.sensor_angle=45, model.decay=1.5): model.decay: Input should be less than 1" in err
    assert (
        "s-0002 (model.sensor_angle=200, model.decay=0.1): model.sensor_angle: Input should be less "
        "than or equal to 180 (got 200)" in err
    )
    assert "s-0005 (model.sensor_angle=300, model.decay=1.5)" in err
    assert "5 of 6 jobs are invalid; nothing was rendered" in err
    assert not out.exists()


def test_malformed_sweeps_name_each_problem():
    problems = "\n".join(
        sweep_problems(
            {
                "gird": {"model.decay": [0.1]},
                "grid": {"model.sensr_angle": [10], "model.decay": 0.1, "name": ["x"]},
                "random": {
                    "count": 2,
                    "params": {
                        "model.turn_angle": {"normal": [0, 1]},
                        "model.deposit": {"log_uniform": [0, 1]},
                    },
                },
                "seeds": [1, 1],
            }
        )
    )
    assert "s.yaml: gird: unknown key; did you mean 'grid'?" in problems
    assert "model.sensr_angle: unknown key 'sensr_angle' in model; did you mean 'sensor_angle'?" in problems
    assert "grid.model.decay: a non-empty list of values (got 0.1)" in problems
    assert "name: the sweep names its jobs" in problems
    assert "random.params.model.turn_angle: one of {uniform: [lo, hi]}" in problems
    assert "random.params.model.deposit: log_uniform: lo must be greater than 0" in problems
    assert "seeds: each seed once" in problems


def test_dry_run_lists_jobs_and_writes_nothing(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.turn_angle": [15, 30]}, seeds=[1, 2])
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--dry-run", "--out", str(out)]) == 0
    lines = capsys.readouterr().out.splitlines()
    sweep = sweeps.load_sweep(path)
    assert lines[0].startswith("sweep s: 4 jobs in 1 batched simulation")
    assert len(lines) == 5
    for line, job in zip(lines[1:], sweep.jobs):
        assert line.startswith(f"{job.id}  {job.name}  pending")
        assert line.endswith(f"model.turn_angle={job.params['model.turn_angle']}, seed={job.preset.seed}")
    assert not out.exists()


def test_chunks_group_by_shape_split_by_batch_and_spread_over_workers():
    sweep = expand({"grid": {"canvas.width": [32, 40], "model.decay": [0.1, 0.2, 0.3, 0.4, 0.5]}})
    chunks = sweeps.plan_chunks(sweep.jobs, max_batch=64)
    assert sorted(len(c) for c in chunks) == [5, 5]
    assert all(len({runner.batch_key(j.preset) for j in c}) == 1 for c in chunks)
    assert sorted(len(c) for c in sweeps.plan_chunks(sweep.jobs, max_batch=2)) == [1, 1, 2, 2, 2, 2]
    spread = sweeps.plan_chunks(sweep.jobs, max_batch=64, workers=4)
    assert sorted(len(c) for c in spread) == [2, 2, 3, 3]
    # interleaved: each chunk takes every other job of the grid, not one half of it
    assert sorted([j.index for j in c] for c in sweeps.plan_chunks(sweep.jobs[:4], max_batch=2)) == [
        [0, 2],
        [1, 3],
    ]


# ---------------------------------------------------------------------------------------------
# Batched renders


def test_a_batch_renders_each_job_byte_for_byte_as_physarum_render_alone(tmp_path):
    # Compared with `physarum render --from` in fresh processes: the bytes x264 writes in a
    # process that already ran other encoders can differ (render/encoder_process.py), so the
    # batch encodes each job's outputs in a process of its own, as a single render does.
    spawns, palettes = ["random", "disk", "ring"], [["magma"], ["ice", "fire"], ["cave"]]
    presets = [
        build_preset(
            tiny_data(
                name=f"job{i}",
                seed=10 + i,
                agents={"spawn": spawns[i]},
                model={"sensor_angle": 15 + 20 * i, "decay": 0.05 * (i + 1)},
                palette={"names": palettes[i]},
            ),
            "t.yaml",
        )
        for i in range(3)
    ]
    batch = runner.render_batch(
        presets, backend="torch", device="cpu", out_dir=tmp_path / "batch", quiet=True
    )
    assert [r.error for r in batch] == [None] * 3
    alone = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "physarum.render.cli",
                "render",
                "--from",
                str(result.outputs["json"]),
                "--out",
                str(tmp_path / "alone"),
                "--quiet",
                "--backend",
                "torch",
                "--device",
                "cpu",
            ],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
        )
        for result in batch
    ]
    assert [process.wait(timeout=120) for process in alone] == [0] * 3
    for preset, result in zip(presets, batch):
        for fmt in ("gif", "mp4", "png"):
            single = tmp_path / "alone" / preset.name / result.outputs[fmt].name
            assert result.outputs[fmt].read_bytes() == single.read_bytes(), (preset.name, fmt)
        assert json.loads(result.outputs["json"].read_text())["preset"] == preset.model_dump(mode="json")
    assert batch[0].outputs["png"].read_bytes() != batch[1].outputs["png"].read_bytes()
    with pytest.raises(ValueError, match="group them by batch_key"):
        runner.render_batch(
            [presets[0], build_preset(tiny_data(name="other", run={"steps": 30}), "t")],
            backend="torch",
            device="cpu",
            out_dir=tmp_path / "mixed",
            quiet=True,
        )


def block(path: Path) -> None:
    """Put a folder (with a file in it) where an output file will go: its encoder then fails when
    it moves the finished file into place, in whichever process it runs."""
    (path / "in-the-way").mkdir(parents=True)


def test_one_failing_encoder_fails_only_its_job(tmp_path):
    presets = [build_preset(tiny_data(name=f"job{i}", seed=i), "t.yaml") for i in range(3)]
    block(tmp_path / "job1" / "job1-s1.gif")
    results = runner.render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert [r.error is None for r in results] == [True, False, True]
    assert "job1-s1" in results[1].error and "Is a directory" in results[1].error
    assert results[1].outputs == {}
    assert files_under(tmp_path / "job1") == [] and (tmp_path / "job1" / "job1-s1.gif").is_dir()
    for result in (results[0], results[2]):
        with Image.open(result.outputs["gif"]) as gif:
            assert gif.n_frames == 8


def test_a_batch_ends_every_jobs_input_before_it_waits_for_any(tmp_path):
    """The children then write their last files side by side, not one after another."""
    from physarum.render.encoder_process import EncoderProcess

    calls = []
    end_input, commit = EncoderProcess.end_input, EncoderProcess.commit

    def ending(process):
        calls.append(("end", process.path.name))
        end_input(process)

    def committing(process):
        calls.append(("commit", process.path.name))
        commit(process)

    presets = [build_preset(tiny_data(name=f"job{i}", seed=i), "t.yaml") for i in range(3)]
    with (
        mock.patch.object(EncoderProcess, "end_input", ending),
        mock.patch.object(EncoderProcess, "commit", committing),
    ):
        results = runner.render_batch(presets, backend="torch", device="cpu", out_dir=tmp_path, quiet=True)
    assert all(r.error is None for r in results)
    first_commit = next(i for i, (kind, _) in enumerate(calls) if kind == "commit")
    assert {name for kind, name in calls[:first_commit]} == {"job0-s0", "job1-s1", "job2-s2"}
    assert sorted(name for kind, name in calls if kind == "commit") == ["job0-s0", "job1-s1", "job2-s2"]


# ---------------------------------------------------------------------------------------------
# Sweeps end to end


def read_manifest(sweep_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (sweep_dir / "manifest.jsonl").read_text().splitlines() if line]


def test_sweep_renders_each_shape_batched_and_outputs_reproduce(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"canvas.width": [32, 40], "model.turn_angle": [15, 45]})
    out = tmp_path / "out"
    assert main(["sweep", str(path), "--out", str(out), "--devices", "cpu", "--quiet"]) == 0
    assert "s: 4 jobs: 4 done (4 run now, 0 done before), 0 failed" in capsys.readouterr().out
    sweep_dir = out / "s"
    records = read_manifest(sweep_dir)
    assert [r["status"] for r in records].count("done") == 4 and [r["status"] for r in records].count(
        "running"
    ) == 4
    done = [r for r in records if r["status"] == "done"]
    assert {r["batch"] for r in done} == {2}
    job = next(r for r in done if r["name"] == "s-0003")
    assert job["params"] == {"canvas.width": 40, "model.turn_angle": 45}
    assert set(job["outputs"]) == {"gif", "png", "json"} and job["seconds"] > 0
    gif = sweep_dir / job["outputs"]["gif"]
    assert yaml.safe_load(read_embedded(gif))["model"]["turn_angle"] == 45
    assert (
        main(
            [
                "render",
                "--from",
                str(gif),
                "--out",
                str(tmp_path / "again"),
                "--quiet",
                "--backend",
                "torch",
                "--device",
                "cpu",
            ]
        )
        == 0
    )
    assert (tmp_path / "again" / "s-0003" / gif.name).read_bytes() == gif.read_bytes()
    assert (sweep_dir / "index.html").is_file() and (sweep_dir / "contact.png").is_file()
    # A second run finds everything done and renders nothing.
    assert main(["sweep", str(path), "--out", str(out), "--devices", "cpu", "--quiet"]) == 0
    assert "4 done (0 run now, 4 done before)" in capsys.readouterr().out
    assert len(read_manifest(sweep_dir)) == 8


def test_failures_are_listed_kept_and_retried_on_request(tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2, 0.3]})
    out = tmp_path / "out"
    blocked = out / "s" / "s-0001" / "s-0001-s3.gif"
    block(blocked)
    args = ["sweep", str(path), "--out", str(out), "--devices", "cpu", "--quiet"]
    assert main(args) == 1
    printed = capsys.readouterr()
    assert "2 done (3 run now, 0 done before), 1 failed" in printed.out
    assert "failed: s-0001" in printed.out and "Is a directory" in printed.out
    assert main(args) == 1  # not retried without --retry-failed
    assert "(0 run now, 2 done before), 1 failed" in capsys.readouterr().out
    shutil.rmtree(blocked)
    assert main([*args, "--retry-failed"]) == 0
    assert "3 done (1 run now, 2 done before), 0 failed" in capsys.readouterr().out
    statuses = [(r["name"], r["status"]) for r in read_manifest(out / "s")]
    assert statuses.count(("s-0001", "failed")) == 1 and statuses.count(("s-0001", "done")) == 1


def test_manifest_skips_a_torn_line_and_appends_on_a_fresh_one(tmp_path):
    manifest = sweeps.Manifest(tmp_path / "manifest.jsonl")
    manifest.append({"id": "a", "status": "done"})
    with open(manifest.path, "a") as file:
        file.write('{"id": "b", "stat')  # a kill in the middle of a write
    manifest.append({"id": "c", "status": "running"})
    assert [r["id"] for r in manifest.records()] == ["a", "c"]


def test_resume_after_kill_9_finishes_every_job_once(tmp_path):
    base = {
        **SMALL,
        "canvas": {"width": 64, "height": 64},
        "agents": {"count": 2000},
        "run": {"steps": 60, "steps_per_frame": 2},
        "output": {"formats": ["gif", "mp4", "png"]},
    }
    path = write_sweep(
        tmp_path, "k", base, grid={"model.decay": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4]}
    )
    out = tmp_path / "out"
    sweep_dir = out / "k"
    command = [
        sys.executable,
        "-m",
        "physarum.render.cli",
        "sweep",
        str(path),
        "--out",
        str(out),
        "--devices",
        "cpu",
        "--batch",
        "1",
        "--quiet",
        "--backend",
        "torch",
    ]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 90
    done_before = []
    while time.time() < deadline and process.poll() is None:
        if (sweep_dir / "manifest.jsonl").exists():
            done_before = [r for r in read_manifest(sweep_dir) if r["status"] == "done"]
            if len(done_before) >= 2:
                break
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    records = read_manifest(sweep_dir)
    done_before = [r for r in records if r["status"] == "done"]
    assert 2 <= len(done_before) < 8, "the kill came too late to test a resume"
    mtimes = {r["id"]: (sweep_dir / r["outputs"]["gif"]).stat().st_mtime_ns for r in done_before}

    assert main(command[3:]) == 0
    sweep = sweeps.load_sweep(path)
    records = read_manifest(sweep_dir)
    latest = {r["id"]: r for r in records}
    assert [latest[j.id]["status"] for j in sweep.jobs] == ["done"] * 8
    for job in sweep.jobs:
        assert [r["status"] for r in records if r["id"] == job.id].count("done") == 1, job.name
    for job_id, mtime in mtimes.items():  # done before the kill: not rendered again
        assert (sweep_dir / latest[job_id]["outputs"]["gif"]).stat().st_mtime_ns == mtime
    assert not list(sweep_dir.rglob("*.part"))
    for job in sweep.jobs:
        folder = sweep_dir / job.name
        assert sorted(p.name for p in folder.iterdir()) == sorted(
            f"{job.name}-s3.{fmt}" for fmt in ("gif", "mp4", "png", "json")
        )
        with Image.open(folder / f"{job.name}-s3.gif") as gif:
            assert gif.n_frames == 30
        with Image.open(folder / f"{job.name}-s3.png") as png:
            png.load()
        with av.open(str(folder / f"{job.name}-s3.mp4")) as video:
            assert sum(1 for _ in video.decode(video=0)) == 30
        assert json.loads((folder / f"{job.name}-s3.json").read_text())["preset"]["name"] == job.name


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
    with mock.patch.object(sweeps, "_nvml_count", return_value=2):
        expected = "fork" if sys.platform.startswith("linux") and not torch.cuda.is_initialized() else "spawn"
        assert sweeps.start_method(["cuda:0", "cuda:1"]) == expected
    with mock.patch.object(sweeps, "_nvml_count", return_value=-1):  # counting initialised CUDA
        assert sweeps.start_method(["cuda:0", "cuda:1"]) == "spawn"
    monkeypatch.setenv("PHYSARUM_START_METHOD", "spawn")
    assert sweeps.start_method(["cuda:0", "cuda:1"]) == "spawn"
    monkeypatch.setenv("PHYSARUM_START_METHOD", "teleport")
    with pytest.raises(RenderError, match="PHYSARUM_START_METHOD='teleport': use one of"):
        sweeps.start_method(["cuda:0"])


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
    assert files["fork"] == files["spawn"] and len(files["fork"]) == 2 * len(SMALL["output"]["formats"])
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


def test_ray_runs_the_batches_as_tasks_on_the_cpu(tmp_path):
    ray = pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'physarum[ray]'")
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2, 0.3]})
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = sweeps.run_sweep(
            sweeps.load_sweep(path),
            sweeps.SweepOptions(ray="auto", out_dir=tmp_path / "out", quiet=True, gallery=False),
            log=lambda line: None,
        )
    finally:
        ray.shutdown()
    assert [r["status"] for r in summary.records] == ["done"] * 3
    assert sorted(r["batch"] for r in summary.records) == [1, 2, 2]  # spread over 2 CPUs
    for record in summary.records:
        with Image.open(summary.sweep_dir / record["outputs"]["gif"]) as gif:
            assert gif.n_frames == 4


# ---------------------------------------------------------------------------------------------
# The gallery


def gallery_records(tmp_path: Path, failed: bool = False) -> tuple[Path, list[dict]]:
    path = write_sweep(
        tmp_path, grid={"model.sensor_angle": [15, 45], "model.turn_angle": [10, 20]}, seeds=[1]
    )
    summary = sweeps.run_sweep(
        sweeps.load_sweep(path),
        sweeps.SweepOptions(devices="cpu", out_dir=tmp_path / "out", quiet=True, gallery=False),
        log=lambda line: None,
    )
    records = summary.records
    if failed:
        records = records + [
            {
                **records[0],
                "id": "f00000000f",
                "name": "s-9999",
                "status": "failed",
                "outputs": None,
                "error": "RenderError: <boom> & more",
            }
        ]
    return summary.sweep_dir, records


class PageParser(HTMLParser):
    def __init__(self):
        super().__init__()
        self.body, self.images, self.cards, self.scripts, self._script = {}, [], [], {}, None
        self.clip = ""

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "body":
            self.body = attrs
        elif tag == "img":
            self.images.append(attrs)
        elif tag == "figure":
            self.cards.append(attrs)
        elif tag in ("script", "textarea"):
            self._script = attrs.get("id")

    def handle_data(self, data):
        if self._script:
            self.scripts[self._script] = self.scripts.get(self._script, "") + data

    def handle_endtag(self, tag):
        if tag in ("script", "textarea"):
            self._script = None


def parse_page(text: str) -> PageParser:
    parser = PageParser()
    parser.feed(text)
    return parser


def test_gallery_page_and_contact_sheet(tmp_path):
    sweep_dir, records = gallery_records(tmp_path, failed=True)
    page = write_gallery(sweep_dir, records)
    text = page.read_text()
    parsed = parse_page(text)
    assert len(parsed.cards) == 5 and len(parsed.images) == 4
    for image in parsed.images:
        assert not image["src"].startswith(("/", "http")) and (sweep_dir / image["src"]).is_file()
    assert "http://" not in text and "https://" not in text
    presets = json.loads(parsed.scripts["presets"])
    for record in records:
        assert yaml.safe_load(presets[record["id"]]) == record["preset"]
    job = sweeps.load_sweep(tmp_path / "s.yaml").jobs[3]
    assert yaml.safe_load(presets[job.id]) == job.preset.model_dump(mode="json")
    assert "&lt;boom&gt; &amp; more" in text
    card = next(c for c in parsed.cards if c["id"] == f"job-{job.id}")
    assert json.loads(card["data-values"]) == {
        "model.sensor_angle": "45",
        "model.turn_angle": "20",
        "seed": "1",
    }
    with Image.open(sweep_dir / "contact.png") as sheet:
        assert sheet.size[0] == 3 * (160 + 12) and sheet.size[1] == 2 * (160 + 12 + 4 * 14)
        tile = sheet.crop((6, 6, 6 + 160, 6 + 160)).convert("RGB")
        with Image.open(sweep_dir / records[0]["outputs"]["png"]) as still:
            expected = still.convert("RGB").resize((160, 160), Image.NEAREST)
        assert tile.tobytes() == expected.tobytes()


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def chromium_dom(url: str, tmp_path: Path) -> str:
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    command = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=90, check=True).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="headless Chromium is not installed (apt-get install chromium)")
def test_gallery_in_headless_chromium_loads_filters_and_copies(tmp_path):
    sweep_dir, records = gallery_records(tmp_path)
    page = write_gallery(sweep_dir, records)
    dom = parse_page(chromium_dom(page.as_uri(), tmp_path))
    assert dom.body["data-errors"] == "0", dom.body
    assert dom.body["data-ready"] == "1" and dom.body["data-images-loaded"] == "4"
    assert len(dom.images) == 4
    assert all(i["data-loaded"] == "1" and int(i["data-natural-width"]) > 0 for i in dom.images)
    assert all("hidden" not in c for c in dom.cards)

    filtered = parse_page(
        chromium_dom(
            page.as_uri() + "?filter=model.turn_angle=20&sort=model.sensor_angle&order=desc&selftest=copy",
            tmp_path,
        )
    )
    assert filtered.body["data-errors"] == "0"
    shown = [c for c in filtered.cards if "hidden" not in c]
    assert filtered.body["data-shown"] == "2" and len(shown) == 2
    assert all(json.loads(c["data-values"])["model.turn_angle"] == "20" for c in shown)
    assert [json.loads(c["data-values"])["model.sensor_angle"] for c in shown] == ["45", "15"]
    assert [json.loads(c["data-values"])["model.sensor_angle"] for c in filtered.cards][0] == "45"
    first = next(r for r in records if f"job-{r['id']}" == shown[0]["id"])
    # Headless Chromium refuses clipboard writes from a scripted click (no user gesture); the
    # page then leaves the YAML selected in a visible text box, which is what is checked here.
    assert filtered.body["data-copy-method"] in ("clipboard", "execCommand", "failed")
    assert filtered.body["data-copy-chars"] == str(len(preset_yaml(first)))
    if filtered.body["data-copy-method"] != "clipboard":
        assert filtered.scripts["clip"] == preset_yaml(first)
