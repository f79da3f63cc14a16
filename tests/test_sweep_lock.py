"""One driver at a time per sweep in object storage (render/sweep/lock.py), on moto's S3 server on
loopback: the lock object is created by a conditional PUT, so that of drivers started at once one
runs and the others are refused with one message naming it; a stale lock (not renewed for its
time, or of a driver of this machine that has ended) is taken over with a line saying whose; a
driver whose lock was taken stores no manifest over the other's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta

import pytest

from physarum.render import sweep as sweeps
from physarum.render.base.errors import RenderError
from physarum.render.base.storage import open_store
from physarum.render.cli.main import main
from physarum.render.sweep import lock as locks
from physarum.render.sweep.manifest import StoredManifest
from support import write_sweep

pytestmark = pytest.mark.slow  # moto's server: a few seconds per test

URL = "s3://renders/x"


def holder_lock(s3, machine: str, pid: int, renewed: datetime) -> bytes:
    """A lock object of another driver, written as a driver writes it."""
    body = json.dumps(
        {
            "sweep_lock": 1,
            "machine": machine,
            "pid": pid,
            "started": "2026-12-05T09:00:00+00:00",
            "renewed": renewed.isoformat(timespec="seconds"),
        }
    ).encode()
    s3.pipe_file("renders/x/s/.lock", body)
    return body


def run(path, log: list[str]) -> sweeps.SweepSummary:
    return sweeps.run_sweep(
        sweeps.load_sweep(path),
        sweeps.SweepOptions(out_dir=URL, devices="cpu", quiet=True, gallery=False),
        log=log.append,
    )


def test_of_drivers_started_at_once_one_takes_the_lock(s3):
    """Eight drivers take the lock of one sweep at the same moment: S3's conditional PUT lets one
    win; the seven others are refused naming its process; it is removed when the winner ends."""
    store = open_store(f"{URL}/s")
    start, won, refused = threading.Barrier(8), [], []

    def driver():
        lock = locks.StoreLock(store, print)
        start.wait()
        try:
            won.append(lock.__enter__())
        except RenderError as error:
            refused.append(str(error))

    threads = [threading.Thread(target=driver) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(won) == 1 and len(refused) == 7
    assert all(
        text.startswith(f"{URL}/s: another sweep is running into this URL (its driver: process ")
        and f"remove {URL}/s/.lock and run again" in text
        for text in refused
    ), refused[0]
    assert s3.find("renders") == ["renders/x/s/.lock"]
    won[0].__exit__(None, None, None)
    assert s3.find("renders") == []


def test_a_sweep_into_a_locked_url_is_one_message_and_writes_nothing(s3, tmp_path, capsys):
    path = write_sweep(tmp_path, grid={"model.decay": [0.1]})
    body = holder_lock(s3, "another-host 1234", 4321, datetime.now(UTC))
    assert main(["sweep", str(path), "--out", URL, "--devices", "cpu", "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.splitlines() == [
        f"error: {URL}/s: another sweep is running into this URL (its driver: process 4321 on "
        f"another-host, started 2026-12-05T09:00:00+00:00, its lock renewed "
        f"{json.loads(body)['renewed']}): two drivers would render and store the same jobs. A lock not "
        f"renewed for 600 s is taken over, as is one whose driver ran on this machine and has ended; "
        f"if that driver is gone, remove {URL}/s/.lock and run again"
    ]
    assert s3.find("renders") == ["renders/x/s/.lock"] and s3.cat_file("renders/x/s/.lock") == body
    assert main(["sweep", str(path), "--out", URL, "--dry-run"]) == 0  # the dry run says who runs
    out, _ = capsys.readouterr()
    assert out.splitlines()[1] == (
        f"another sweep is running into {URL}/s now (its driver: process 4321 on another-host, lock "
        f"renewed {json.loads(body)['renewed']}): a run now would be refused"
    )
    holder_lock(s3, "another-host 1234", 4321, datetime.now(UTC) - timedelta(hours=1))
    assert main(["sweep", str(path), "--out", URL, "--dry-run"]) == 0  # stale: a run takes it over
    assert "another sweep" not in capsys.readouterr().out
    s3.pipe_file("renders/x/s/.lock", body)
    for stranger in (b"[" * 3000 + b"]" * 3000, b"x" * 10_000, json.dumps({"renewed": 1}).encode()):
        s3.pipe_file("renders/x/s/.lock", stranger)  # no lock this physarum wrote: never taken over
        assert main(["sweep", str(path), "--out", URL, "--devices", "cpu", "--quiet"]) == 2
        out, err = capsys.readouterr()
        assert (
            err.startswith(
                f"error: {URL}/s: another sweep is running into this URL (its lock is no sweep lock this "
                "physarum reads): two drivers"
            )
            and len(err.splitlines()) == 1
        )
        assert s3.find("renders") == ["renders/x/s/.lock"]


def test_a_stale_lock_is_taken_over_with_a_line_saying_whose(s3, tmp_path):
    """A lock not renewed for STALE_SECONDS, and one of a driver of this machine that has ended,
    are taken over: the sweep runs, says whose lock it took, and removes it at its end."""
    path = write_sweep(tmp_path, grid={"model.decay": [0.1]})
    holder_lock(s3, "another-host 1234", 4321, datetime.now(UTC) - timedelta(minutes=11))
    log: list[str] = []
    summary = run(path, log)
    assert [r["status"] for r in summary.records] == ["done"]
    assert any(
        line.startswith(f"{URL}/s/.lock: took over the lock of a sweep whose driver renewed it last ")
        and "(process 4321)" in line
        for line in log
    ), log
    assert not s3.exists("renders/x/s/.lock")
    ended = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    dead = int(ended.stdout)
    holder_lock(s3, locks.machine(), dead, datetime.now(UTC))
    log.clear()
    run(path, log)  # the job is done: nothing renders, the lock is taken and removed
    assert f"{URL}/s/.lock: took over the lock of a sweep whose driver (process {dead} on this machine, " in (
        "\n".join(log)
    )
    assert not s3.exists("renders/x/s/.lock")


def test_a_driver_whose_lock_was_taken_stores_no_manifest(s3, monkeypatch):
    """The driver renews its lock with a conditional PUT on the version it wrote; where the lock
    changed meanwhile (another driver took it while this one stalled), the lock is lost and the
    manifest's next store is refused, naming the lock."""
    store = open_store(f"{URL}/s")
    lock = locks.StoreLock(store, print, renew=0.05)
    with lock:
        manifest = StoredManifest(store, guard=lock.check)
        manifest.append({"id": "a", "status": "running"})
        assert s3.exists("renders/x/s/manifest.jsonl")
        other = holder_lock(s3, "another-host 1234", 4321, datetime.now(UTC))
        deadline = time.monotonic() + 10
        while lock.lost is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert lock.lost == "another driver took it over, or it was removed"
        stored = s3.cat_file("renders/x/s/manifest.jsonl")
        with pytest.raises(RenderError, match=rf"^{URL}/s/\.lock: this sweep's lock was lost"):
            manifest.append({"id": "a", "status": "done"})  # a small manifest: stored at once
    assert s3.cat_file("renders/x/s/manifest.jsonl") == stored  # the other driver's to write
    assert s3.cat_file("renders/x/s/.lock") == other  # not removed: not this driver's


def test_a_local_folder_holds_one_sweep_and_never_follows_a_link_at_its_lock(tmp_path, capsys):
    """SweepLock (base/locks.py's NameLock): a second driver is refused naming the first's process
    and a dry run names it; the lock file goes with its holder; a link planted at .lock is
    refused and writes nothing where it points."""
    path = write_sweep(tmp_path, grid={"model.decay": [0.1]})
    folder = tmp_path / "out" / "s"
    folder.mkdir(parents=True)
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(folder)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert locks.running_sweep(folder) == f"process {holder.pid}"  # read, not taken
        assert main(["sweep", str(path), "--out", str(tmp_path / "out"), "--dry-run"]) == 0
        assert capsys.readouterr().out.splitlines()[1] == (
            f"another sweep is running into {folder} now (process {holder.pid}): a run now would be refused"
        )
        with pytest.raises(
            RenderError, match=rf"another sweep is running in this folder \(process {holder.pid}\)"
        ):
            locks.SweepLock(folder).__enter__()
    finally:
        holder.kill()
        holder.wait()
    assert locks.running_sweep(folder) is None  # its file is left, unlocked
    with locks.SweepLock(folder):  # the killed holder's lock is free again
        assert (folder / ".lock").read_text().strip() == str(os.getpid())
        assert locks.running_sweep(folder) == f"process {os.getpid()}"
    assert not (folder / ".lock").exists() and locks.running_sweep(folder) is None
    target = tmp_path / "elsewhere"
    (folder / ".lock").symlink_to(target)
    with pytest.raises(OSError, match="a link is at its name"):
        locks.SweepLock(folder).__enter__()
    assert not target.exists()


HOLD = """
import sys, time
from pathlib import Path
from physarum.render.sweep.lock import SweepLock
with SweepLock(Path(sys.argv[1])):
    print("held", flush=True)
    time.sleep(60)
"""
