"""`physarum render PRESET --out URL`: rendered into a local temporary folder, then each
committed file stored whole through base/storage.py's ObjectStore under URL/<name>/, the sidecar
last; the same names and bytes as a local render (the sidecar differs in its timings only). Run
in this process against fsspec's memory:// file system."""

from __future__ import annotations

import json

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
        f"error: {url}/quickstart/quickstart-s1.mp4: the store refused to write it: Access Denied"
    ]
    # what was stored before it stays (sorted: the GIF first); no sidecar says the render is whole
    assert sorted(stored(key)) == ["quickstart/quickstart-s1.gif"]


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
