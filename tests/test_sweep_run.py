"""Sweeps end to end: the dry run, batched renders that reproduce, failures kept and retried, and
resume after a real kill."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

import av
import pytest
import yaml
from PIL import Image

from physarum.render import sweep as sweeps
from physarum.render.cli.main import main
from physarum.render.formats.registry import read_embedded
from support import ROOT, SWEEP_BASE, block, read_manifest, write_sweep


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
    assert main(["sweep", str(path), "--dry-run", "--out", str(out)]) == 0  # it reads the manifest
    assert "(2 done, 1 failed, 0 to run)" in capsys.readouterr().out.splitlines()[0]
    shutil.rmtree(blocked)
    assert main([*args, "--retry-failed"]) == 0
    assert "3 done (1 run now, 2 done before), 0 failed" in capsys.readouterr().out
    statuses = [(r["name"], r["status"]) for r in read_manifest(out / "s")]
    assert statuses.count(("s-0001", "failed")) == 1 and statuses.count(("s-0001", "done")) == 1


@pytest.mark.slow
def test_resume_after_kill_9_finishes_every_job_once(tmp_path):
    base = {
        **SWEEP_BASE,
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


def test_a_rerun_removes_the_gallery_parts_of_a_dead_run_and_skips_a_bad_record(tmp_path, capsys):
    path = write_sweep(tmp_path, seeds=[1])
    out = tmp_path / "out"
    sweep_dir = out / "s"
    sweep_dir.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = [sweep_dir / f".index.html.{dead.pid}.part", sweep_dir / f".contact.png.{dead.pid}.part"]
    mine = sweep_dir / f".index.html.{os.getppid()}.part"  # a live process's: left alone
    for part in [*stale, mine]:
        part.write_text("torn")
    job = sweeps.load_sweep(path).jobs[0]
    (sweep_dir / "manifest.jsonl").write_text(
        json.dumps({"id": job.id, "status": "done", "outputs": 5}) + "\n"
    )
    assert main(["sweep", str(path), "--out", str(out), "--devices", "cpu", "--quiet"]) == 0
    assert not any(part.exists() for part in stale) and mine.exists()
    err = capsys.readouterr().err
    assert err.count("record skipped ('outputs' is int") == 1 and "Traceback" not in err
    assert (sweep_dir / "index.html").is_file()


def test_a_starting_sweep_leaves_the_parts_of_a_live_process_in_its_job_folders(tmp_path):
    """A render writing into a job folder (its own process, alive) keeps its temporary files;
    those of a dead process go (the sweep once removed every .part under its job folders)."""
    path = write_sweep(tmp_path, seeds=[1])
    out = tmp_path / "out"
    job = sweeps.load_sweep(path).jobs[0]
    folder = out / "s" / job.name
    folder.mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    live = folder / f".other.gif.{os.getppid()}.part"
    stale = folder / f".other.gif.{dead.pid}.part"
    for part in (live, stale):
        part.write_text("frames")
    assert main(["sweep", str(path), "--out", str(out), "--devices", "cpu", "--quiet"]) == 0
    assert live.read_text() == "frames" and not stale.exists()


def test_a_resume_with_other_extras_is_refused_and_writes_nothing(tmp_path, capsys):
    """A sweep resumed with its print stills (a record's extras) dropped had rendered its jobs
    again beside the first run's stills and listed those among their extras: two kinds of jobs
    in one folder. It is one message naming the job and what differs, exit 2, for the run and
    the dry run, and nothing in the sweep's folder changes."""
    import copy

    base = copy.deepcopy(SWEEP_BASE)
    base["output"] = {"formats": ["png"], "still": {"scale": 2, "formats": ["tiff"]}}
    path = write_sweep(tmp_path, base=base, grid={"model.decay": [0.1, 0.2]})
    out = tmp_path / "out"
    command = ["sweep", str(path), "--out", str(out), "--devices", "cpu", "--quiet", "--no-gallery"]
    assert main(command) == 0
    capsys.readouterr()
    before = {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    del base["output"]["still"]
    write_sweep(tmp_path, base=base, grid={"model.decay": [0.1, 0.2]})
    for flags in ([], ["--dry-run"]):
        assert main([*command, *flags]) == 2
        out_text, err = capsys.readouterr()
        assert out_text == "" and err.splitlines() == [
            f"error: {out / 's' / 'manifest.jsonl'}: this run's jobs write other files than the "
            "manifest's jobs of the same names: s-0000: output.still {'scale': 2, 'formats': ['tiff']} "
            "then, none now (and 1 more job); resumed, their folders would hold both runs' files. Run "
            "the sweep as it was written, or into another --out (or remove the sweep's folder to "
            "start it afresh)"
        ]
        assert {p: p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()} == before
