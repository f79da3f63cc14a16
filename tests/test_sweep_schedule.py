"""Where a Ray sweep's tasks run (sweep/cluster.py's scheduling) and its progress per node
(sweep/progress.py), with a real two-node Ray cluster on this machine: a "GPU node" on 127.0.0.2
(1 CPU, declared with one GPU: this machine has none, so its tasks are given a GPU by Ray and
find no CUDA, and render on their CPU, as a node whose GPU torch cannot see does) and a CPU node
on 127.0.0.3 (2 CPUs). Every job's files are compared with a local sweep's: the same bytes
whichever node type ran it, as far as the CPU can show it."""

from __future__ import annotations

import copy
import fcntl
import io
import os
import pty
import struct
import subprocess
import sys
import tempfile
import termios
import threading
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from test_sweep_storage import same_sidecar

from physarum.render import sweep as sweeps
from physarum.render.base.errors import RenderError
from physarum.render.sweep.progress import NodeProgress, node_label
from support import SWEEP_BASE, read_manifest, write_sweep

DECAYS = [0.05, 0.1, 0.15, 0.2, 0.25, 0.3]
# jobs of about 2 s each on this CPU: long enough that the two tasks a node with two slots
# starts together (their workers start within a second of each other) overlap
BASE = {
    **copy.deepcopy(SWEEP_BASE),
    "canvas": {"width": 192, "height": 192},
    "agents": {"count": 20000},
    "run": {"steps": 1200, "steps_per_frame": 120},
}


def test_node_progress_draws_a_bar_per_node_on_a_terminal_only():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    terminal, pipe = Terminal(), io.StringIO()
    for stream in (terminal, pipe):
        progress = NodeProgress(6, stream=stream)
        progress.started("aaaa1111node", node_label("127.0.0.2", "aaaa1111node", True), 2)
        progress.started("bbbb2222node", node_label("127.0.0.3", "bbbb2222node", False), 1)
        progress.landed("aaaa1111node", "", 1)
        progress.dropped("bbbb2222node", 1)
        progress.write("a line")
        assert progress.counts() == {"aaaa1111node": (1, 1), "bbbb2222node": (0, 0)}
        progress.close()
    drawn = terminal.getvalue()
    assert "127.0.0.2 aaaa1111 GPU" in drawn and "127.0.0.3 bbbb2222 CPU" in drawn
    assert "1/6" in drawn and "1 running" in drawn and "a line" in drawn
    assert pipe.getvalue() == "a line\n"  # no bars where stderr is not a terminal


def test_per_node_is_refused_below_1_by_the_scheduler():
    from physarum.render.sweep.cluster import check_per_node

    for bad in (0, -1, True, 1.5):
        with pytest.raises(RenderError, match="--per-node must be at least 1"):
            check_per_node(bad)
    check_per_node(None)
    check_per_node(3)


@pytest.fixture(scope="module")
def mixed_cluster(tmp_path_factory):
    """The two nodes (see the module's text), each with its own short temp folder; stopped by
    killing exactly their processes."""
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'physarum[ray]'")
    from test_sweep_cluster_s3 import HEAD, LOOPBACK, SECOND, start_node, stop_cluster

    temps = [tempfile.mkdtemp(prefix="phray-", dir="/tmp") for _ in range(2)]
    works = [tmp_path_factory.mktemp("gpu-node"), tmp_path_factory.mktemp("cpu-node")]
    common = ["--object-store-memory=150000000", "--disable-usage-stats"]
    try:
        start_node(
            [
                "--head",
                "--port=0",
                f"--node-ip-address={HEAD}",
                "--include-dashboard=false",
                f"--temp-dir={temps[0]}",
                "--num-cpus=1",
                "--num-gpus=1",
                *common,
            ],
            works[0],
            LOOPBACK,
        )
        address = (Path(temps[0]) / "ray_current_cluster").read_text().strip()
        start_node(
            [
                f"--address={address}",
                f"--node-ip-address={SECOND}",
                f"--temp-dir={temps[1]}",
                "--num-cpus=2",
                "--num-gpus=0",
                *common,
            ],
            works[1],
            LOOPBACK,
        )
        yield address
    finally:
        stop_cluster(temps)


@pytest.fixture(scope="module")
def local(tmp_path_factory):
    """The sweep file and its local sweep on this host's CPU (the bytes every node must match)."""
    folder = tmp_path_factory.mktemp("sweep")
    path = write_sweep(folder, base=BASE, grid={"model.decay": DECAYS})
    summary = sweeps.run_sweep(
        sweeps.load_sweep(path),
        sweeps.SweepOptions(devices="cpu", out_dir=folder / "local", quiet=True, gallery=False),
        log=lambda _: None,
    )
    return path, summary


def sweep_on(address: str, path: Path, out: Path, *flags: str, terminal: bool = False) -> str:
    """`physarum sweep` on the cluster with --batch 1 (a task per job); its stderr (through a
    pseudo-terminal where `terminal`). Fails the test where it does not exit 0."""
    from test_sweep_cluster_s3 import LOOPBACK

    command = [sys.executable, "-m", "physarum.render.cli", "sweep", str(path), "--ray", address]
    command += ["--out", str(out), "--batch", "1", "--no-gallery", *flags]
    env = {**os.environ, **LOOPBACK}
    if not terminal:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=400)
        assert done.returncode == 0, done.stdout + done.stderr
        return done.stderr
    main, child = pty.openpty()
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 120, 0, 0))  # a terminal's size
    chunks: list[bytes] = []

    def read() -> None:
        while True:
            try:
                data = os.read(main, 65536)
            except OSError:  # the child's side closed
                return
            if not data:
                return
            chunks.append(data)

    reader = threading.Thread(target=read)
    reader.start()
    try:
        done = subprocess.run(command, env=env, stdout=subprocess.PIPE, stderr=child, timeout=400)
    finally:
        os.close(child)
        reader.join(timeout=30)
        os.close(main)
    text = b"".join(chunks).decode(errors="replace")
    assert done.returncode == 0, text
    return text


def by_node(records: list[dict]) -> dict[str, list[dict]]:
    nodes: dict[str, list[dict]] = {}
    for record in records:
        nodes.setdefault(record["node"], []).append(record)
    return nodes


def intervals_overlap(records: list[dict]) -> bool:
    """Whether two of these batches ran at once (each from `started` for `seconds`)."""
    spans = sorted(
        (
            datetime.fromisoformat(r["started"]),
            datetime.fromisoformat(r["started"]) + timedelta(seconds=r["seconds"]),
        )
        for r in records
    )
    return any(later[0] < earlier[1] for earlier, later in zip(spans, spans[1:]))


def assert_same_files(out: Path, local: sweeps.SweepSummary) -> None:
    for record in local.records:
        for fmt, rel in record["outputs"].items():
            ours, theirs = (out / rel).read_bytes(), (local.sweep_dir / rel).read_bytes()
            assert ours == theirs if fmt != "json" else same_sidecar(ours, theirs), rel


def done_records(out: Path) -> list[dict]:
    return [r for r in read_manifest(out) if r["status"] == "done"]


@pytest.mark.slow  # a two-node Ray cluster and three sweeps: a minute or more
def test_gpu_tasks_run_on_the_gpu_node_cpu_tasks_on_the_cpu_node_with_the_same_bytes(
    tmp_path, mixed_cluster, local
):
    path, summary = local
    err = sweep_on(mixed_cluster, path, tmp_path / "out")
    records = done_records(tmp_path / "out" / "s")
    assert sorted(r["id"] for r in records) == sorted(r["id"] for r in summary.records)
    nodes = by_node(records)
    gpus_by_node = {node: {r["gpus"] for r in rs} for node, rs in nodes.items()}
    # every task on the GPU node was given its GPU, none on the CPU node; both nodes worked
    assert sorted(map(sorted, gpus_by_node.values())) == [[0], [1]], gpus_by_node
    # each task chose its device on its own worker: no CUDA there, so the CPU, and its batch there
    assert {r["device"] for r in records} == {"cpu"}
    # the CPU node's two slots ran two tasks at once (what --per-node 1 below forbids)
    cpu_node = next(node for node, gpus in gpus_by_node.items() if gpus == {0})
    assert intervals_overlap(nodes[cpu_node])
    assert_same_files(tmp_path / "out" / "s", summary)
    assert "\r" not in err and err.count("] done ") == len(DECAYS)  # a line per job, no bars


@pytest.mark.slow  # a two-node Ray cluster and a sweep under a pseudo-terminal
def test_per_node_caps_the_tasks_at_once_on_each_node_and_the_terminal_shows_each_node(
    tmp_path, mixed_cluster, local
):
    path, summary = local
    shown = sweep_on(mixed_cluster, path, tmp_path / "out", "--per-node", "1", terminal=True)
    records = done_records(tmp_path / "out" / "s")
    nodes = by_node(records)
    assert len(records) == len(DECAYS) and len(nodes) == 2
    for node_records in nodes.values():
        assert not intervals_overlap(node_records)
    assert "at most 1 at once on any node" in shown
    # a bar per node: its address and kind, its jobs done of the sweep's and those running there
    assert "127.0.0.2" in shown and "127.0.0.3" in shown and " GPU: " in shown and " CPU: " in shown
    assert f"| 0/{len(DECAYS)} " in shown and "1 running]" in shown
    assert_same_files(tmp_path / "out" / "s", summary)
