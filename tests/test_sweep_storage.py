"""A sweep into object storage (memory://, fsspec's in-process store; the S3 API itself:
test_sweep_cluster_s3.py), and the payload a Ray task gets: presets with their images carried,
rendered with no access to the driver's files."""

from __future__ import annotations

import copy
import json
import os
import shutil
from pathlib import Path

import numpy as np
import pytest

from physarum.render.base.errors import RenderError
from physarum.render.base.storage import LocalStore, ObjectStore, open_store, restored
from physarum.render.sweep.chunk import run_chunk
from physarum.render.sweep.cluster import ray_payloads
from support import SWEEP_BASE, save_image, write_sweep

fsspec = pytest.importorskip(
    "fsspec", reason="object storage is the optional extra: pip install 'physarum[cloud]'"
)
from physarum.render import sweep as sweeps  # noqa: E402


@pytest.fixture
def memory():
    """memory://, emptied before and after."""
    fs = fsspec.filesystem("memory")
    fs.store.clear()
    fs.pseudo_dirs[:] = [""]
    yield fs
    fs.store.clear()
    fs.pseudo_dirs[:] = [""]


def image_sweep(folder: Path, **sections) -> Path:
    """A sweep whose jobs read two world images beside the sweep file."""
    wall = np.zeros((20, 30), np.uint8)
    wall[:, :10] = 255
    save_image(folder / "wall.png", wall)
    save_image(folder / "gradient.png", np.tile(np.arange(0, 256, 4, dtype=np.uint8), (40, 1)))
    base = copy.deepcopy(SWEEP_BASE)
    base["world"] = {
        "boundary": "reflect",
        "walls": {"path": "wall.png"},
        "trail_image": {"path": "gradient.png", "scale": 2.0},
    }
    return write_sweep(folder, base=base, **sections)


def run(path: Path, out, **options) -> sweeps.SweepSummary:
    options = {"devices": "cpu", "quiet": True, "gallery": False, **options}
    return sweeps.run_sweep(
        sweeps.load_sweep(path), sweeps.SweepOptions(out_dir=out, **options), log=lambda _: None
    )


def same_sidecar(a: bytes, b: bytes) -> bool:
    """Sidecars agree but for how long things took (timings, and what bound the render where the
    sidecar says) and the size of the batch (its notes)."""
    first, second = json.loads(a), json.loads(b)
    for sidecar in (first, second):
        for key in ("timings", "bound", "notes"):
            sidecar.pop(key, None)
    return first == second


def test_urls_are_put_back_checked_and_opened():
    assert restored(Path("s3://bucket/prefix")) == "s3://bucket/prefix"
    assert restored(Path("memory://x/y")) == "memory://x/y"
    assert restored(Path("file:///tmp/x")) == "file:///tmp/x"
    assert restored(Path("outputs/a:b")) == Path("outputs/a:b")  # no scheme: a folder
    assert isinstance(open_store("file:///tmp/somewhere"), LocalStore)
    assert isinstance(open_store("memory://b/p"), ObjectStore)
    for url in ("s3://key:secret@bucket/p", "s3://bucket/p?token=abc"):
        with pytest.raises(RenderError, match="may not carry credentials") as error:
            open_store(url)
        assert "secret" not in str(error.value) and "abc" not in str(error.value)


def test_a_stored_file_appears_whole_and_a_refusal_names_the_url(memory, tmp_path, monkeypatch):
    store = open_store("memory://bucket/run")
    staged = store.stage("a/b.bin")
    with staged.open() as file:
        file.write(b"x" * 1000)
    assert not memory.exists("/bucket/run/a/b.bin")  # staged: nothing visible yet
    store.commit([staged])
    assert memory.cat_file("/bucket/run/a/b.bin") == b"x" * 1000
    assert not staged.path.exists()
    assert store.whole("a/b.bin", 1000, __import__("hashlib").sha256(b"x" * 1000).hexdigest())
    assert not store.whole("a/b.bin", 999, "0" * 64)

    def refuse(*args, **kwargs):
        raise PermissionError("Access Denied")

    monkeypatch.setattr(memory, "put_file", refuse)
    source = tmp_path / "c.bin"
    source.write_bytes(b"y")
    with pytest.raises(
        RenderError, match=r"^memory://bucket/run/c.bin: the store refused to write it: Access Denied"
    ):
        store.put_file(source, "c.bin")
    store.close()


def test_a_sweep_into_object_storage_has_the_local_sweeps_bytes_and_resumes(memory, tmp_path):
    path = image_sweep(tmp_path, grid={"model.decay": [0.1, 0.2, 0.3]})
    local = run(path, tmp_path / "local")
    stored = run(path, "memory://bucket/out", gallery=True, max_batch=2)
    assert str(stored.sweep_dir) == "memory://bucket/out/s"
    assert [r["status"] for r in stored.records] == ["done"] * 3
    for record in stored.records:
        for fmt, rel in record["outputs"].items():
            ours, theirs = memory.cat_file(f"/bucket/out/s/{rel}"), (local.sweep_dir / rel).read_bytes()
            assert ours == theirs if fmt != "json" else same_sidecar(ours, theirs), rel
            assert record["files"][rel]["bytes"] == len(ours)
    assert memory.exists("/bucket/out/s/index.html") and memory.exists("/bucket/out/s/contact.png")
    assert not any(".part" in name for name in memory.find("/bucket"))

    # the manifest is read back from the store: nothing runs again ...
    again = run(path, "memory://bucket/out")
    assert (again.ran, again.skipped) == (0, 3)
    lines = sweeps.dry_run_lines(sweeps.load_sweep(path), Path("memory://bucket/out"))
    assert "(3 done, 0 failed, 0 to run)" in lines[0]
    # ... but a stored file that is not whole (its bytes changed) runs its job again
    gif = stored.records[1]["outputs"]["gif"]
    memory.pipe_file(f"/bucket/out/s/{gif}", b"GIF89a damaged")
    repaired = run(path, "memory://bucket/out")
    assert (repaired.ran, repaired.skipped) == (1, 2)
    assert memory.cat_file(f"/bucket/out/s/{gif}") == (local.sweep_dir / gif).read_bytes()


def test_a_refused_write_stops_the_sweep_keeping_what_was_committed(memory, tmp_path, monkeypatch):
    path = write_sweep(tmp_path, grid={"model.decay": [0.1, 0.2, 0.3]})
    real, puts = memory.put_file, []

    def refuse_the_fourth(source, key, **kwargs):
        puts.append(key)
        if len(puts) == 4:  # the second job's first file
            raise PermissionError("Access Denied")
        return real(source, key, **kwargs)

    monkeypatch.setattr(memory, "put_file", refuse_the_fourth)
    with pytest.raises(
        RenderError, match=r"^memory://bucket/out/s/s-0001/s-0001-s3\.\w+: the store refused to write it"
    ):
        run(path, "memory://bucket/out", max_batch=1)
    monkeypatch.setattr(memory, "put_file", real)
    records = [json.loads(line) for line in memory.cat_file("/bucket/out/s/manifest.jsonl").splitlines()]
    done = {r["name"] for r in records if r["status"] == "done"}
    assert done == {"s-0000"}  # committed before the refusal: kept, and recorded
    assert memory.exists("/bucket/out/s/s-0000/s-0000-s3.gif")
    finished = run(path, "memory://bucket/out")
    assert (finished.ran, finished.skipped) == (2, 1)


def test_a_ray_payload_renders_without_the_drivers_image_files(tmp_path, monkeypatch):
    """What a Ray task gets: the images travel in the payload; the files may be gone."""
    source = tmp_path / "source"
    source.mkdir()
    path = image_sweep(source, grid={"model.decay": [0.1, 0.2]})
    monkeypatch.chdir(tmp_path)
    local = run(path, tmp_path / "local")
    sweep = sweeps.load_sweep(path)
    payload = ray_payloads([sweep.jobs])[0]
    assert payload[0]["images"] is payload[1]["images"]  # one text for both: serialised once
    assert payload[0]["preset"]["world"]["walls"]["path"] == "source/wall.png"  # as outputs embed it
    shutil.rmtree(source)
    worker = tmp_path / "elsewhere"
    worker.mkdir()
    monkeypatch.chdir(worker)  # another working folder, as a worker has
    outcomes = run_chunk(payload, str(worker / "out"), "cpu", "auto")
    assert [o["status"] for o in outcomes] == ["done", "done"]
    for outcome in outcomes:
        for fmt, rel in outcome["outputs"].items():
            ours, theirs = (worker / "out" / rel).read_bytes(), (local.sweep_dir / rel).read_bytes()
            assert ours == theirs if fmt != "json" else same_sidecar(ours, theirs), rel
    assert os.path.isdir(worker / "out")


def test_the_commands_out_keeps_a_url_whole(capsys):
    """--out s3://b/p reaches the sweep as written (a Path made it s3:/b/p, a local folder)."""
    from physarum.render.cli.main import main

    assert main(["sweep", "angles", "--dry-run", "--out", "memory://bucket/p"]) == 0
    assert "-> memory://bucket/p/angles/" in capsys.readouterr().out


def test_a_jobs_files_beside_its_outputs_are_stored_too(tmp_path, memory):
    """A job's print still (output.still), which a record lists among its `extras` (its `outputs`
    keep the formats' keys, so that manifests resume as before), is stored in
    object storage with the job's outputs (the record's `extras`, with its size and sha256 in
    `files`), the same bytes as in a local sweep's folder: a Ray task sends its files the same way
    (delivered_files)."""
    base = copy.deepcopy(SWEEP_BASE)
    base["output"] = {"formats": ["png"], "still": {"scale": 2, "formats": ["tiff"]}}
    path = write_sweep(tmp_path, base=base, grid={"model.decay": [0.1, 0.2]})
    stored = run(path, "memory://bucket/still")
    local = run(path, tmp_path / "local")
    for ours, theirs in zip(stored.records, local.records):
        assert ours["extras"] == theirs["extras"] == [f"{ours['name']}/{ours['name']}-s3-still.tiff"]
        rel = ours["extras"][0]
        data = memory.cat_file(f"/bucket/still/s/{rel}")
        assert data == (local.sweep_dir / rel).read_bytes() and len(data) > 64 * 64 * 6
        assert ours["files"][rel]["bytes"] == len(data)
    assert sweeps.job_states(sweeps.load_sweep(path), open_store("memory://bucket/still/s")) == {
        record["id"]: "done" for record in stored.records
    }


def test_a_stored_sweep_resumed_with_other_extras_is_refused(tmp_path, memory):
    """In object storage as in a folder: a resume whose jobs write other print stills than the
    stored manifest's jobs of the same names is one RenderError naming the manifest's URL, and
    no object changes (the first run's stills would have stayed beside the new jobs' files)."""
    base = copy.deepcopy(SWEEP_BASE)
    base["output"] = {"formats": ["png"], "still": {"scale": 2, "formats": ["tiff"]}}
    path = write_sweep(tmp_path, base=base, grid={"model.decay": [0.1, 0.2]})
    run(path, "memory://bucket/mixed")
    before = {key: memory.cat_file(key) for key in memory.find("/bucket/mixed")}
    base["output"]["still"] = {"scale": 1, "formats": ["png"]}
    write_sweep(tmp_path, base=base, grid={"model.decay": [0.1, 0.2]})
    with pytest.raises(RenderError) as refused:
        run(path, "memory://bucket/mixed")
    assert str(refused.value).startswith(
        "memory://bucket/mixed/s/manifest.jsonl: this run's jobs write other files than the manifest's "
        "jobs of the same names: s-0000: output.still {'scale': 2, 'formats': ['tiff']} then, "
        "{'scale': 1, 'formats': ['png']} now (and 1 more job);"
    )
    with pytest.raises(RenderError, match="this run's jobs write other files"):
        sweeps.dry_run_lines(sweeps.load_sweep(path), "memory://bucket/mixed")
    assert {key: memory.cat_file(key) for key in memory.find("/bucket/mixed")} == before
