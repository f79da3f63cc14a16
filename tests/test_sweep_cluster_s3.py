"""A sweep beyond one machine, with the real engine and a real S3 API: a Ray cluster of two nodes
started on this machine (`ray start --head` and `ray start --address`, each with its own temp
and working folder, 1 CPU each, on 127.0.0.2 and 127.0.0.3), moto's S3 server on 127.0.0.1, a sweep of an image
world into s3:// with one node's worker killed mid-sweep, and a driver killed mid-sweep that a
second run finishes. Every stored file is compared with a local sweep of the same file."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
from test_sweep_storage import image_sweep, same_sidecar

pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'physarum[ray]'")
pytest.importorskip("s3fs", reason="object storage is the optional extra: pip install 'physarum[cloud]'")
moto_server = pytest.importorskip("moto.server", reason="the test extra's moto[server] runs the S3 API")
psutil = pytest.importorskip("psutil", reason="Ray's dependency psutil finds the cluster's processes")

from physarum.render import sweep as sweeps  # noqa: E402

pytestmark = pytest.mark.slow  # starts a two-node Ray cluster and an S3 server: a minute or more

BIN = Path(sys.executable).parent
# Ray turns 127.0.0.1 into the machine's reachable address (services.resolve_ip_for_localhost),
# and no other: the nodes are 127.0.0.2 and 127.0.0.3, two addresses of the loopback network, and
# the driver finds its own from the head's.
LOOPBACK = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}
HEAD, SECOND = "127.0.0.2", "127.0.0.3"


@pytest.fixture
def s3(monkeypatch):
    """moto's S3 server on 127.0.0.1 (any free port), its credentials in this process's
    environment (which the driver's subprocess inherits), and a bucket."""
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    env = {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": f"http://127.0.0.1:{port}",
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.mkdir("sweeps")
    yield fs
    fs.rm("sweeps", recursive=True)  # moto's state outlives the server within this process
    server.stop()


def start_node(arguments: list[str], work: Path, env: dict) -> None:
    done = subprocess.run(
        [str(BIN / "ray"), "start", *arguments],
        cwd=work,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def cluster_processes(temp_dirs: list[str]) -> list:
    """The processes of our cluster: those naming one of its temp folders, and their children
    (Ray's workers retitle themselves 'ray::...')."""
    found = {}
    for process in psutil.process_iter(["pid", "cmdline"]):
        cmdline = " ".join(process.info["cmdline"] or [])
        if any(folder in cmdline for folder in temp_dirs):
            found[process.pid] = process
            try:
                for child in process.children(recursive=True):
                    found[child.pid] = child
            except psutil.Error:
                pass
    return list(found.values())


def stop_cluster(temps: list[str]) -> None:
    """Our cluster's processes killed (and waited for) and its temp folders removed."""
    processes = cluster_processes(temps)
    for process in processes:
        try:
            process.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(processes, timeout=20)
    for folder in temps:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def cluster(tmp_path):
    """A head and a second node, each with its own short temp folder (Ray's socket paths are
    bounded) and working folder; stopped by killing exactly these processes (`ray stop` would
    stop every Ray instance of this user on the machine)."""
    temps = [tempfile.mkdtemp(prefix="phray-", dir="/tmp") for _ in range(2)]
    works = [tmp_path / "head-node", tmp_path / "second-node"]
    for work in works:
        work.mkdir()
    common = ["--num-cpus=1", "--num-gpus=0", "--object-store-memory=150000000", "--disable-usage-stats"]
    try:
        start_node(
            [
                "--head",
                "--port=0",
                f"--node-ip-address={HEAD}",
                "--include-dashboard=false",
                f"--temp-dir={temps[0]}",
                *common,
            ],
            works[0],
            LOOPBACK,
        )
        address = (Path(temps[0]) / "ray_current_cluster").read_text().strip()
        assert address.startswith(f"{HEAD}:"), address
        start_node(
            [f"--address={address}", f"--node-ip-address={SECOND}", f"--temp-dir={temps[1]}", *common],
            works[1],
            LOOPBACK,
        )
        yield {"address": address, "temps": temps}
    finally:
        stop_cluster(temps)


def physarum(*arguments, cwd: Path, **options) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "physarum.render.cli", *arguments],
        cwd=cwd,
        env={**os.environ, **LOOPBACK},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **options,
    )


def kill_a_busy_worker(temp_dir: str, stop: threading.Event, killed: list) -> None:
    """Kill -9 the first worker process of the node of `temp_dir` seen running a sweep task, as
    soon as it is seen: its task renders for seconds, so it dies mid-task."""
    while not stop.is_set() and not killed:
        for raylet in cluster_processes([temp_dir]):
            try:
                if "raylet" not in " ".join(raylet.cmdline()):
                    continue
                for child in raylet.children():
                    if "_stream_chunk" in " ".join(child.cmdline()):  # its title while it runs one
                        child.send_signal(signal.SIGKILL)
                        killed.append(child.pid)
                        return
            except psutil.Error:
                continue
        time.sleep(0.1)


def local_sweep(path: Path, out: Path) -> sweeps.SweepSummary:
    return sweeps.run_sweep(
        sweeps.load_sweep(path),
        sweeps.SweepOptions(devices="cpu", out_dir=out, quiet=True, gallery=False),
        log=lambda _: None,
    )


def stored_records(fs, prefix: str) -> list[dict]:
    return [
        json.loads(line) for line in fs.cat_file(f"{prefix}/manifest.jsonl").decode().splitlines() if line
    ]


def difference(ours: bytes, theirs: bytes) -> dict:
    """The keys in which two sidecars differ, with both values."""
    first, second = json.loads(ours), json.loads(theirs)
    return {
        key: (first.get(key), second.get(key))
        for key in {*first, *second}
        if first.get(key) != second.get(key)
    }


def assert_same_files(fs, prefix: str, local: sweeps.SweepSummary) -> None:
    """Every job's stored files equal the local sweep's (the sidecar but for timings and batch
    notes), each once, with nothing else under the prefix but the manifest and gallery."""
    fs.invalidate_cache()
    expected = {"manifest.jsonl", "index.html", "contact.png"}
    for record in local.records:
        for fmt, rel in record["outputs"].items():
            expected.add(rel)
            ours, theirs = fs.cat_file(f"{prefix}/{rel}"), (local.sweep_dir / rel).read_bytes()
            assert ours == theirs if fmt != "json" else same_sidecar(ours, theirs), (
                rel,
                sorted(difference(ours, theirs)),
            )
    assert {key.removeprefix(prefix + "/") for key in fs.find(prefix)} == expected


def test_a_two_node_cluster_sweeps_into_s3_and_survives_a_killed_worker(tmp_path, s3, cluster, monkeypatch):
    source, driver = tmp_path / "source", tmp_path / "driver"
    source.mkdir()
    driver.mkdir()
    path = image_sweep(source, grid={"model.decay": [0.05, 0.1, 0.2, 0.3]})
    monkeypatch.chdir(driver)  # the local sweep embeds image paths as the driver does: from its folder
    local = local_sweep(path, tmp_path / "local")

    stop, killed = threading.Event(), []
    killer = threading.Thread(target=kill_a_busy_worker, args=(cluster["temps"][1], stop, killed))
    killer.start()
    try:
        run = physarum(
            "sweep",
            str(path),
            "--ray",
            cluster["address"],
            "--out",
            "s3://sweeps/cluster",
            "--batch",
            "1",
            cwd=driver,
        )
        out, err = run.communicate(timeout=500)
    finally:
        stop.set()
        killer.join()
    assert run.returncode == 0, out + err
    assert killed, "no worker of the second node was seen running a task"
    assert "running its 1 unfinished jobs again (attempt 2 of 3)" in err, err
    assert "s3://sweeps/cluster/s/manifest.jsonl" in out
    records = stored_records(s3, "sweeps/cluster/s")
    final = {r["id"]: r for r in records}
    assert [final[r["id"]]["status"] for r in local.records] == ["done"] * 4
    assert {r["max_attempts"] for r in final.values()} == {3}
    assert sorted(r["attempt"] for r in final.values()) == [1, 1, 1, 2]
    assert len({r["node"] for r in final.values()}) <= 2
    assert "testing-secret" not in s3.cat_file("sweeps/cluster/s/manifest.jsonl").decode()
    assert_same_files(s3, "sweeps/cluster/s", local)


# enough jobs that the driver is still sweeping when it is killed after its first stored job
DECAYS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45, 0.5]


def test_a_killed_driver_resumes_from_s3_and_a_refused_write_is_one_message(tmp_path, s3, monkeypatch):
    source, driver = tmp_path / "source", tmp_path / "driver"
    source.mkdir()
    driver.mkdir()
    path = image_sweep(source, grid={"model.decay": DECAYS})
    monkeypatch.chdir(driver)
    local = local_sweep(path, tmp_path / "local")
    arguments = ["sweep", str(path), "--devices", "cpu", "--out", "s3://sweeps/resume", "--batch", "1"]
    first = physarum(*arguments, cwd=driver)
    began = time.monotonic()
    while time.monotonic() - began < 300:
        s3.invalidate_cache()
        if s3.exists("sweeps/resume/s/manifest.jsonl") and any(
            r["status"] == "done" for r in stored_records(s3, "sweeps/resume/s")
        ):
            break
        time.sleep(0.05)
    first.kill()  # the driver, mid-sweep
    first.communicate()
    done_before = {r["id"] for r in stored_records(s3, "sweeps/resume/s") if r["status"] == "done"}
    assert 1 <= len(done_before) < len(DECAYS), "the driver finished before it was killed"
    second = physarum(*arguments, cwd=driver)
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, out + err
    assert f"({len(DECAYS) - len(done_before)} run now, {len(done_before)} done before)" in out
    assert_same_files(s3, "sweeps/resume/s", local)

    refused = physarum("sweep", str(path), "--devices", "cpu", "--out", "s3://no-such-bucket/x", cwd=driver)
    out, err = refused.communicate(timeout=300)
    assert refused.returncode == 2
    lines = [line for line in err.splitlines() if line.startswith("error")]
    assert (
        len(lines) == 1
        and "s3://no-such-bucket/x/s: the store refused a write, so nothing was rendered or written: "
        "FileNotFoundError: The specified bucket does not exist"
        in lines[0]
    )
