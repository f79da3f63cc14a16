"""A job's paths and the lock of its name (render/out/job.py job_paths, render/base/locks.py):
two renders of one name into one folder never mix their files; the second is refused with one
message naming the first, exit 2; the lock of a killed render blocks nothing."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from contextlib import ExitStack
from pathlib import Path

import pytest

from physarum.render.base.errors import RenderError
from physarum.render.base.locks import LockHeld, NameLock
from physarum.render.formats.registry import read_embedded
from physarum.render.out.job import job_paths
from physarum.render.preset import build_preset
from support import tiny_data, write_preset


def _render(out: Path, seed: int, palette: str) -> list[str]:
    """The command of a small render of `seed` into `out`, coloured by `palette` alone (a preset
    of its own, named tiny, so the two renders share their name)."""
    data = tiny_data(palette={"names": [palette]}, output={"formats": ["gif", "mp4", "png"], "fps": 20})
    preset = write_preset(out.parent, data, f"{palette}.yaml")
    command = [sys.executable, "-m", "physarum.render.cli", "render", str(preset), "--out", str(out)]
    return [*command, "--quiet", "--seed", str(seed)]


def _holding(process: subprocess.Popen, lock: Path, timeout: float = 120) -> None:
    """Wait until `process` holds `lock` (its PID written in it)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"the render ended ({process.returncode}) before it took its lock")
        if lock.exists() and lock.read_text().strip() == str(process.pid):
            return
        time.sleep(0.02)
    pytest.fail("the render took no lock")


def _palettes(folder: Path, stem: str) -> dict[str, str]:
    """The palette each of a render's files names (read from the preset it carries), and whether
    the sidecar lists the sizes of the files beside it."""
    found = {}
    for fmt in ("json", "gif", "mp4", "png"):
        text = read_embedded(folder / f"{stem}.{fmt}")
        found[fmt] = "ice" if "- ice" in text or "[ice]" in text else "magma"
    sidecar = json.loads((folder / f"{stem}.json").read_text())
    found["sizes"] = all(
        (folder / entry["file"]).stat().st_size == entry["bytes"] for entry in sidecar["outputs"].values()
    )
    return found


@pytest.mark.slow
def test_a_second_render_of_a_name_being_rendered_is_refused_and_the_first_writes_all_its_files(tmp_path):
    seed = random.randrange(1, 1_000_000)
    folder, stem = tmp_path / "out" / "tiny", f"tiny-s{seed}"
    first = subprocess.Popen(_render(tmp_path / "out", seed, "ice"), cwd=tmp_path, stderr=subprocess.PIPE)
    try:
        _holding(first, folder / f".{stem}.lock")
        os.kill(first.pid, signal.SIGSTOP)  # the first is mid-render for as long as the second runs
        second = subprocess.run(
            _render(tmp_path / "out", seed, "magma"), cwd=tmp_path, capture_output=True, text=True
        )
        listed = sorted(p.name for p in folder.iterdir())
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=300) == 0, first.stderr.read()
    assert second.returncode == 2, second.stderr
    lines = second.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and f"process {first.pid}" in lines[0], lines
    assert listed == [f".{stem}.lock"]  # the second wrote nothing (the first's files are still temporary)
    palettes = _palettes(folder, stem)
    assert palettes == {"json": "ice", "gif": "ice", "mp4": "ice", "png": "ice", "sizes": True}
    assert not (folder / f".{stem}.lock").exists()  # released and removed with the render


@pytest.mark.slow
def test_the_lock_of_a_killed_render_blocks_no_later_render(tmp_path):
    seed = random.randrange(1, 1_000_000)
    folder, stem = tmp_path / "out" / "tiny", f"tiny-s{seed}"
    killed = subprocess.Popen(_render(tmp_path / "out", seed, "ice"), cwd=tmp_path, stderr=subprocess.DEVNULL)
    _holding(killed, folder / f".{stem}.lock")
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=60)
    assert (folder / f".{stem}.lock").exists()  # left by the killed render, no longer locked
    later = subprocess.run(
        _render(tmp_path / "out", seed, "magma"), cwd=tmp_path, capture_output=True, text=True
    )
    assert later.returncode == 0, later.stderr
    assert _palettes(folder, stem) == {
        "json": "magma",
        "gif": "magma",
        "mp4": "magma",
        "png": "magma",
        "sizes": True,
    }
    assert not (folder / f".{stem}.lock").exists()


def test_a_name_lock_is_held_once_names_its_holder_and_is_removed_on_release(tmp_path):
    path = tmp_path / ".x-s1.lock"
    with NameLock(path):
        assert path.read_text() == f"{os.getpid()}\n"
        with pytest.raises(LockHeld) as refused:  # another open file of this process is refused too
            NameLock(path).take()
        assert refused.value.pid == os.getpid()
    assert not path.exists()
    with NameLock(path):  # taken again once released
        assert path.exists()


@pytest.mark.parametrize("planted", ["symlink", "hardlink", "fifo"])
def test_a_lock_file_planted_as_a_link_or_fifo_writes_nothing_elsewhere(tmp_path, planted):
    path, private = tmp_path / ".x-s1.lock", tmp_path / "private.txt"
    private.write_text("secret")
    if planted == "symlink":
        path.symlink_to(private)
    elif planted == "hardlink":
        os.link(private, path)
    else:
        os.mkfifo(path)
    with pytest.raises(OSError) as refused:
        NameLock(path).take()
    assert refused.value.filename == str(path)
    assert private.read_text() == "secret" and os.path.lexists(path)


def _preset(seed: int):
    return build_preset(tiny_data(seed=seed), "tiny.yaml")


def test_job_paths_locks_every_job_of_a_batch_until_the_batch_ends(tmp_path):
    seeds = random.sample(range(1, 1_000_000), 3)
    presets = [_preset(s) for s in seeds]
    with ExitStack() as held:
        paths = job_paths(presets, tmp_path, None, held)
        for preset, job in zip(presets, paths):
            lock = job["json"].with_name(f".{job['json'].stem}.lock")
            with pytest.raises(LockHeld):  # a sweep's batch holds the names of all its jobs
                NameLock(lock).take()
            assert lock.name == f".{preset.name}-s{preset.seed}.lock"
        with pytest.raises(RenderError, match=f"process {os.getpid()} is rendering these files now"):
            job_paths(presets[1:2], tmp_path, None, ExitStack())
    assert not [p for p in tmp_path.rglob("*.lock")]  # all released and removed
    with ExitStack() as held:
        job_paths(presets, tmp_path, None, held)  # and taken again


def test_job_paths_locks_the_frames_folder_once_when_it_is_the_output_folder(tmp_path):
    preset = _preset(random.randrange(1, 1_000_000))
    with ExitStack() as held:
        paths = job_paths([preset], tmp_path, tmp_path / preset.name, held)
        assert paths[0]["json"].parent == tmp_path / preset.name
