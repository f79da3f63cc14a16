"""An object store that cannot be written is found before the work: `physarum render --out URL`,
`physarum sweep --out URL` and their API faces probe the store (base/storage.ObjectStore.probe:
an empty hidden object written and removed) before torch is loaded and anything renders, and
refuse with one message naming the URL and the cause, exit 2 (RenderError from the API),
nothing written; `physarum sweep --dry-run --out URL` probes it for a read (nothing written),
with the same bounds. On memory:// (a probe that passes, a write refused), moto's S3 server (a
missing bucket) and a closed loopback port (a refused connection)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time

import pytest

import physarum
from physarum.render import sweep as sweeps
from physarum.render.base.errors import RenderError
from physarum.render.base.storage import PROBE, open_store
from physarum.render.cli.main import main
from physarum.render.commands import render as render_command

fsspec = pytest.importorskip("fsspec", reason="object storage is the optional extra physarum[cloud]")
from fsspec.implementations.memory import MemoryFileSystem  # noqa: E402

SMALL = ["--set=run.steps=6", "--set=canvas.width=32", "--set=canvas.height=24", "--set=agents.count=100"]
RENDER = ["render", "quickstart", "--backend", "torch", "--device", "cpu", *SMALL]
SWEEP = ["sweep", "decay", "--devices", "cpu", "--quiet"]
S3_CAUSE = "check that the bucket exists, the credentials"


@pytest.fixture
def never(monkeypatch):
    """The local render and the sweep's runner replaced by a recorder (which then stops the
    command with RenderError 'started'): what was started."""
    started = []

    def starting(what: str):
        def start(*args):
            started.append(what)
            raise RenderError("started")

        return start

    monkeypatch.setattr(render_command, "_run_here", starting("render"))
    monkeypatch.setattr(sweeps, "run_sweep", starting("sweep"), raising=False)
    return started


def refusal(capsys) -> str:
    """The one line the command printed on stderr (and nothing on stdout)."""
    out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "loading torch" not in out + err
    return lines[0]


def test_a_probe_that_passes_leaves_nothing_in_the_store(monkeypatch, capsys, never):
    fs = fsspec.filesystem("memory")
    written = []
    pipe = MemoryFileSystem.pipe_file
    monkeypatch.setattr(
        MemoryFileSystem,
        "pipe_file",
        lambda self, path, value, **kw: [written.append(path), pipe(self, path, value, **kw)],
    )
    store = open_store("memory://probe-passes/renders")
    store.probe()
    assert len(written) == 1 and written[0].startswith(f"/probe-passes/renders/{PROBE}")
    assert not fs.exists(written[0]) and fs.find("/probe-passes") == []
    assert open_store("outputs").probe() is None  # a local folder: nothing asked
    # through the commands: the probe passes and the render, then the sweep, is started
    assert main([*RENDER, "--out", "memory://probe-passes/renders"]) == 2
    assert main([*SWEEP, "--out", "memory://probe-passes/sweeps"]) == 2
    assert capsys.readouterr().err.splitlines() == ["error: started"] * 2
    assert never == ["render", "sweep"] and fs.find("/probe-passes") == []


def test_a_refused_write_stops_render_and_sweep_before_they_start(monkeypatch, capsys, never):
    def refusing(self, path, value, **kwargs):
        raise PermissionError("Access Denied")

    monkeypatch.setattr(MemoryFileSystem, "pipe_file", refusing)
    assert main([*RENDER, "--out", "memory://denied/r"]) == 2
    assert refusal(capsys) == (
        "error: memory://denied/r: the store refused a write, so nothing was rendered or written: "
        "PermissionError: Access Denied; check that the bucket exists, and the credentials and "
        "endpoint in the environment"
    )
    assert main([*SWEEP, "--out", "memory://denied/s"]) == 2
    assert refusal(capsys).startswith("error: memory://denied/s/decay: the store refused a write")
    with pytest.raises(RenderError, match=r"^memory://denied/r: the store refused a write"):
        physarum.render(physarum.load("quickstart"), out="memory://denied/r")
    with pytest.raises(RenderError, match=r"^memory://denied/s/decay: the store refused a write"):
        physarum.sweep("decay", out="memory://denied/s", devices="cpu")
    assert never == []
    assert fsspec.filesystem("memory").find("/denied") == []


@pytest.fixture
def s3(monkeypatch):
    """moto's S3 server on 127.0.0.1 (any free port), its credentials in the environment, and
    one bucket, 'renders'."""
    moto_server = pytest.importorskip("moto.server", reason="the test extra's moto[server] runs the S3 API")
    s3fs = pytest.importorskip("s3fs", reason="object storage is the optional extra physarum[cloud]")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    aws(monkeypatch, f"http://127.0.0.1:{port}")
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.mkdir("renders")
    yield fs
    fs.rm("renders", recursive=True)  # moto's state outlives the server within this process
    server.stop()


def aws(monkeypatch, endpoint: str) -> None:
    """Test credentials and an endpoint in the environment, and no file of this machine's."""
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_ENDPOINT_URL_S3": endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_CONFIG_FILE": os.devnull,
    }.items():
        monkeypatch.setenv(key, value)


@pytest.mark.slow  # moto's server: a few seconds
def test_a_missing_bucket_is_one_message_before_anything_renders(s3, capsys, never):
    assert main([*RENDER, "--out", "s3://no-such-bucket/x"]) == 2
    assert refusal(capsys).startswith(
        "error: s3://no-such-bucket/x: the store refused a write, so nothing was rendered or written: "
        "FileNotFoundError: The specified bucket does not exist; " + S3_CAUSE
    )
    assert main([*SWEEP, "--out", "s3://no-such-bucket/x"]) == 2
    assert refusal(capsys).startswith("error: s3://no-such-bucket/x/decay: the store refused a write")
    assert never == []
    assert s3.ls("") == ["renders"] and s3.find("renders") == []  # nothing written anywhere
    # the bucket that exists: the probe passes, leaves nothing, and the render is started
    assert main([*RENDER, "--quiet", "--out", "s3://renders/x"]) == 2
    assert refusal(capsys) == "error: started"
    assert never == ["render"] and s3.find("renders") == []


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_refused_connection_is_one_message_within_seconds(monkeypatch, capsys, never):
    pytest.importorskip("s3fs", reason="object storage is the optional extra physarum[cloud]")
    aws(monkeypatch, f"http://127.0.0.1:{closed_port()}")
    began = time.perf_counter()
    assert main([*RENDER, "--out", "s3://renders/x"]) == 2
    seconds = time.perf_counter() - began
    line = refusal(capsys)
    assert line.startswith(
        "error: s3://renders/x: the store refused a write, so nothing was rendered or written: "
        "EndpointConnectionError: Could not connect to the endpoint URL"
    )
    assert S3_CAUSE in line and never == []
    assert seconds < 6, seconds  # botocore's defaults (5 attempts with backoff) took 8 to 9 s


def test_missing_credentials_are_one_message(monkeypatch, capsys, never):
    pytest.importorskip("s3fs", reason="object storage is the optional extra physarum[cloud]")
    aws(monkeypatch, f"http://127.0.0.1:{closed_port()}")
    for key in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(key)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    assert main([*SWEEP, "--out", "s3://renders/x"]) == 2
    assert refusal(capsys).startswith(
        "error: s3://renders/x/decay: the store refused a write, so nothing was rendered or written: "
        "NoCredentialsError: Unable to locate credentials; " + S3_CAUSE
    )
    assert never == []


@pytest.mark.slow  # a fresh interpreter: a few seconds
def test_the_command_loads_no_torch_before_a_refused_connection(tmp_path):
    """The endpoint from fsspec's own variable (FSSPEC_S3_ENDPOINT_URL), in a fresh process:
    the refusal comes before torch is imported."""
    pytest.importorskip("s3fs", reason="object storage is the optional extra physarum[cloud]")
    env = {
        **os.environ,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
        "FSSPEC_S3_ENDPOINT_URL": f"http://127.0.0.1:{closed_port()}",
    }
    env.pop("AWS_ENDPOINT_URL_S3", None)
    env.pop("AWS_ENDPOINT_URL", None)
    script = (
        "import sys\nfrom physarum.render.cli.main import main\n"
        f"code = main({[*RENDER, '--out', 's3://renders/x']!r})\n"
        "print('torch loaded' if 'torch' in sys.modules else 'no torch')\nsys.exit(code)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.strip() == "no torch"
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "s3://renders/x: the store refused a write" in lines[0], done.stderr
    assert "EndpointConnectionError" in lines[0] and list(tmp_path.iterdir()) == []


def test_a_dry_run_into_an_unreachable_store_is_one_message_within_seconds(monkeypatch, capsys, never):
    """A dry run reads, never writes: it probes the store for a read, with the probe's bounds,
    before its manifest is read (botocore's defaults took about 9 s and named the manifest)."""
    pytest.importorskip("s3fs", reason="object storage is the optional extra physarum[cloud]")
    aws(monkeypatch, f"http://127.0.0.1:{closed_port()}")
    began = time.perf_counter()
    assert main([*SWEEP, "--dry-run", "--out", "s3://renders/x"]) == 2
    seconds = time.perf_counter() - began
    line = refusal(capsys)
    assert line.startswith(
        "error: s3://renders/x/decay: the store refused a read, so nothing was read: "
        "EndpointConnectionError: Could not connect to the endpoint URL"
    )
    assert S3_CAUSE in line and "manifest.jsonl" not in line and never == []
    assert seconds < 3, seconds
    with pytest.raises(RenderError, match=r"^s3://renders/x/decay: the store refused a read"):
        physarum.sweep("decay", out="s3://renders/x", dry_run=True)


def test_a_dry_run_probes_by_reading_and_writes_nothing(monkeypatch, capsys, never):
    """A store that refuses every write is still read by a dry run; one that refuses to read
    is one message naming the URL."""

    def refusing(self, path, value, **kwargs):
        raise PermissionError("Access Denied")

    monkeypatch.setattr(MemoryFileSystem, "pipe_file", refusing)
    assert main([*SWEEP, "--dry-run", "--out", "memory://read-only/s"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("sweep decay: 12 jobs") and "12 to run" in out.splitlines()[0] and err == ""

    def unreadable(self, path, **kwargs):
        raise PermissionError("Access Denied")

    monkeypatch.setattr(MemoryFileSystem, "info", unreadable)
    assert main([*SWEEP, "--dry-run", "--out", "memory://read-only/s"]) == 2
    assert refusal(capsys) == (
        "error: memory://read-only/s/decay: the store refused a read, so nothing was read: "
        "PermissionError: Access Denied; check that the bucket exists, and the credentials and "
        "endpoint in the environment"
    )
    assert never == [] and fsspec.filesystem("memory").find("/read-only") == []


@pytest.mark.slow  # moto's server: a few seconds
def test_a_dry_run_into_a_missing_bucket_is_one_message(s3, capsys, never):
    """The read probe asks for the bucket where the hidden object is missing: a dry run into a
    bucket that does not exist is refused as a run is (it listed the jobs and exited 0), and
    into one that exists it lists them, writing nothing either way."""
    assert main([*SWEEP, "--dry-run", "--out", "s3://no-such-bucket/x"]) == 2
    assert refusal(capsys) == (
        "error: s3://no-such-bucket/x/decay: the store refused a read, so nothing was read: "
        "FileNotFoundError: the bucket 'no-such-bucket' does not exist; "
        + S3_CAUSE
        + " (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE or ~/.aws) and the endpoint "
        "(AWS_ENDPOINT_URL_S3 or FSSPEC_S3_ENDPOINT_URL for an S3-compatible server)"
    )
    with pytest.raises(RenderError, match=r"^s3://no-such-bucket/x/decay: the store refused a read"):
        physarum.sweep("decay", out="s3://no-such-bucket/x", dry_run=True)
    assert main([*SWEEP, "--dry-run", "--out", "s3://renders/x"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("sweep decay: 12 jobs") and err == ""
    assert never == [] and s3.ls("") == ["renders"] and s3.find("renders") == []
