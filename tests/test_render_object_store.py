"""`physarum render PRESET --out URL`: rendered into a local temporary folder, then each
committed file stored whole through base/storage.py's ObjectStore under URL/<name>/, the sidecar
last; the same names and bytes as a local render (the sidecar differs in its timings only). Run
in this process against fsspec's memory:// file system."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from physarum.render.base.storage import ObjectStore
from physarum.render.cli.main import main

fsspec = pytest.importorskip("fsspec", reason="object storage is the optional extra physarum[cloud]")
from fsspec.implementations.memory import MemoryFileSystem  # noqa: E402

SMALL = {"run.steps": 12, "run.steps_per_frame": 3, "canvas.width": 48, "canvas.height": 32}
ARGV = ["render", "quickstart", "--backend", "torch", "--device", "cpu", "--quiet", "--stats"]
ARGV += [f"--set={key}={value}" for key, value in {**SMALL, "agents.count": 400}.items()]
TIMED = ("timings", "bound")  # what a sidecar says of this render's own clock


@pytest.fixture
def bucket(tmp_path):
    """A memory:// folder of this test's own, emptied afterwards: its URL and its key."""
    fs = fsspec.filesystem("memory")
    key = f"/bucket-{tmp_path.name}"
    yield f"memory:/{key}/renders", f"{key}/renders"
    if fs.exists(key):
        fs.rm(key, recursive=True)


def stored(key: str) -> dict[str, bytes]:
    fs = fsspec.filesystem("memory")
    return {path[len(key) + 1 :]: fs.cat_file(path) for path in fs.find(key)}


def untimed(data: bytes) -> dict:
    return {k: v for k, v in json.loads(data).items() if k not in TIMED}


def test_the_stored_files_are_a_local_renders_bytes_the_sidecar_last(tmp_path, bucket, capsys, monkeypatch):
    url, key = bucket
    order = []
    upload = ObjectStore._upload
    monkeypatch.setattr(
        ObjectStore, "_upload", lambda self, source, rel: [order.append(rel), upload(self, source, rel)]
    )
    assert main([*ARGV, "--out", str(tmp_path / "local")]) == 0
    assert main([*ARGV, "--out", url]) == 0
    lines = capsys.readouterr().out.splitlines()
    local = {
        path.relative_to(tmp_path / "local").as_posix(): path.read_bytes()
        for path in (tmp_path / "local").rglob("*")
        if path.is_file()
    }
    remote = stored(key)
    sidecar = "quickstart/quickstart-s1.json"
    assert sorted(remote) == sorted(local) and len(local) == 5  # gif, mp4, png, stats, sidecar
    assert order[-1] == sidecar and sorted(order) == sorted(local)  # each file once, the sidecar last
    for rel, data in local.items():
        if rel != sidecar:
            assert remote[rel] == data, rel
    assert untimed(remote[sidecar]) == untimed(local[sidecar])
    assert json.loads(remote[sidecar])["timings"] != json.loads(local[sidecar])["timings"]
    # what the command prints: each stored file's URL and size
    printed = dict((line.split()[0], line.split()[1:]) for line in lines[len(lines) // 2 :])
    assert printed["gif"] == [
        f"{url}/quickstart/quickstart-s1.gif",
        str(len(local["quickstart/quickstart-s1.gif"])),
    ]
    assert printed["json"][0] == f"{url}/{sidecar}"


def test_a_store_that_refuses_a_write_is_one_message_naming_the_url(bucket, capsys, monkeypatch):
    url, key = bucket
    put_file = MemoryFileSystem.put_file

    def refusing(self, lpath, rpath, **kwargs):
        if rpath.endswith(".mp4"):
            raise PermissionError("Access Denied")
        return put_file(self, lpath, rpath, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "put_file", refusing)
    assert main([*ARGV, "--out", url]) == 2
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"error: {url}/quickstart/quickstart-s1.mp4: the store refused to write it: Access Denied; "
        "the files stored before it were put back: the store holds what it held before"
    ]
    # the GIF stored before it (sorted: the GIF first) is taken back: there was none before
    assert stored(key) == {}


def test_a_failed_upload_leaves_the_earlier_render_whole(bucket, capsys, monkeypatch):
    url, key = bucket
    assert main([*ARGV, "--out", url]) == 0
    earlier = stored(key)
    put_file = MemoryFileSystem.put_file
    puts = []

    def refusing(self, lpath, rpath, **kwargs):
        puts.append((rpath[len(key) + 1 :], Path(lpath).read_bytes()))
        if rpath.endswith(".png"):
            raise PermissionError("Access Denied")
        return put_file(self, lpath, rpath, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "put_file", refusing)
    assert main([*ARGV, "--set=model.decay=0.3", "--out", url]) == 2
    assert "put back" in capsys.readouterr().err
    assert [rel for rel, _ in puts] == [f"quickstart/quickstart-s1.{kind}" for kind in ("gif", "mp4", "png")]
    assert all(data != earlier[rel] for rel, data in puts)  # another render's bytes
    assert stored(key) == earlier  # the new GIF and MP4 were stored, then given their earlier bytes back


@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["term", "int"])
def test_a_signal_during_the_upload_leaves_the_earlier_render_whole(
    bucket, capsys, monkeypatch, signum, code
):
    """The signal comes while the first PUT is in flight: that PUT ends, no other starts, and the
    store holds the earlier render's files, byte for byte (nothing hidden left beside them)."""
    url, key = bucket
    assert main([*ARGV, "--out", url]) == 0
    earlier = stored(key)
    put_file = MemoryFileSystem.put_file
    puts = []
    handlers = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)

    def signalled(self, lpath, rpath, **kwargs):
        puts.append((rpath, Path(lpath).read_bytes()))
        os.kill(os.getpid(), signum)  # delivered here, in the PUT: recorded, not raised
        return put_file(self, lpath, rpath, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "put_file", signalled)
    assert main([*ARGV, "--set=model.decay=0.3", "--out", url]) == code
    assert "no partial output was left" in capsys.readouterr().err
    assert [rpath for rpath, _ in puts] == [f"{key}/quickstart/quickstart-s1.gif"]
    assert puts[0][1] != earlier["quickstart/quickstart-s1.gif"]  # another GIF was stored, then taken back
    assert stored(key) == earlier
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == handlers  # they came back


def test_a_url_with_credentials_is_refused_before_the_render(capsys):
    assert main([*ARGV, "--out", "memory://key:secret@bucket/renders"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "may not carry credentials" in err and "secret" not in err


def test_a_preview_goes_under_previews_at_the_url(bucket, capsys):
    url, key = bucket
    assert main([*ARGV, "--preview", "--out", url]) == 0
    capsys.readouterr()
    assert sorted(stored(key)) == [
        "previews/quickstart/quickstart-s1.gif",
        "previews/quickstart/quickstart-s1.json",
        "previews/quickstart/quickstart-s1.stats.csv",
    ]


def test_the_api_stores_at_a_url_as_the_command_does(bucket):
    import physarum

    url, key = bucket
    preset = physarum.load("quickstart", {**SMALL, "agents.count": 400})
    result = physarum.render(preset, out=url, formats=["png"], backend="torch", device="cpu")
    assert result.outputs == {
        "png": f"{url}/quickstart/quickstart-s1.png",
        "json": f"{url}/quickstart/quickstart-s1.json",
    }
    assert sorted(stored(key)) == ["quickstart/quickstart-s1.json", "quickstart/quickstart-s1.png"]


# A render whose every PUT to S3 is followed by a line in a marker file and a 5 s wait, so that
# the test signals it while its first upload is in flight (argv: the marker, then physarum's).
SLOW_PUTS = """
import asyncio, sys
from pathlib import Path
import s3fs
from physarum.render.cli.main import main

marker, put = Path(sys.argv[1]), s3fs.S3FileSystem._put_file

async def slow_put(self, lpath, rpath, **kwargs):
    done = await put(self, lpath, rpath, **kwargs)
    with marker.open("a") as file:
        file.write(rpath + "\\n")
    await asyncio.sleep(5)
    return done

s3fs.S3FileSystem._put_file = slow_put
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow  # an S3 server, a render here and one in a subprocess that waits 5 s: about 20 s
@pytest.mark.parametrize("signum, code", [(signal.SIGTERM, 143), (signal.SIGINT, 130)], ids=["term", "int"])
def test_a_render_killed_during_its_upload_to_s3_leaves_the_earlier_render_whole(tmp_path, s3, signum, code):
    """A render into moto's S3, then another (other bytes, the same names) in a subprocess signalled
    while its first PUT is in flight: it stores nothing more, puts the earlier GIF back, and exits
    as signalled; the bucket holds the earlier render's objects, byte for byte, and nothing else."""
    url = "s3://renders/out"
    assert main([*ARGV, "--out", url]) == 0
    earlier = {path: s3.cat_file(path) for path in s3.find("renders")}
    assert len(earlier) == 5
    marker = tmp_path / "puts"
    command = [sys.executable, "-c", SLOW_PUTS, str(marker), *ARGV, "--set=model.decay=0.3", "--out", url]
    render = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 300
        while not marker.exists() and render.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        render.send_signal(signum)
        out, err = render.communicate(timeout=120)
    finally:
        render.kill()
    assert render.returncode == code, err
    assert marker.read_text().splitlines() == ["renders/out/quickstart/quickstart-s1.gif"]  # no other PUT
    s3.invalidate_cache()
    assert {path: s3.cat_file(path) for path in s3.find("renders")} == earlier
