"""`physarum serve` (cli/serve.py) and the command's hand-over to it (cli/resident.py, cli/entry.py):
a served render writes the bytes the command writes by itself, says the same things and exits
with the same code; signals reach it; a client that dies stops it; a command the server would run
differently runs itself; the socket is private."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from physarum.render.cli import resident

COMMAND = [sys.executable, "-m", "physarum.render.cli"]
SMALL = ["--reduce", "8", "--set", "run.steps=60"]  # quickstart at 64x64: a fraction of a second
LONG = [
    "--reduce",
    "2",
    "--set",
    "run.steps=20000",
    "--set",
    "output.formats=[png]",
]  # minutes: stopped long before its end


def environment(socket_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != resident.SWITCH}
    return {**env, resident.SOCKET: str(socket_path), **extra}


class Server:
    """A `physarum serve` process on a private socket and the lines it has said."""

    def __init__(self, folder: Path):
        folder.mkdir(mode=0o700, exist_ok=True)
        self.path = folder / "serve.sock"
        self.env = environment(self.path)
        self.process = subprocess.Popen(
            [*COMMAND, "serve"], env=self.env, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()
        self.wait_for("ready at", 120)

    def _read(self) -> None:
        for line in self.process.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout: float = 60) -> str:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = [line for line in self.lines if text in line]
            if found:
                return found[-1]
            if self.process.poll() is not None and not self.reader.is_alive():
                break
            time.sleep(0.05)
        raise AssertionError(f"the server never said {text!r}: {self.lines}")

    def ended(self, text: str, timeout: float = 120) -> str:
        """The server's line saying how the command with `text` (whole words of it: "--out a" is
        not "--out ab") ended ("pid N exit C in S s: ...")."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            found = [line for line in self.lines if f" {text} " in f" {line} " and " exit " in line]
            if found:
                return found[-1]
            time.sleep(0.05)
        raise AssertionError(f"the server never said how {text!r} ended: {self.lines}")

    def run(
        self, args: list[str], cwd: Path, popen: dict | None = None, **extra: str
    ) -> subprocess.CompletedProcess:
        """A client run to its end with the server's environment and `extra` variables (and
        Popen's keywords `popen`: a umask, a preexec_fn)."""
        env = {**self.env, **extra}
        return subprocess.run(
            [*COMMAND, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300, **(popen or {})
        )

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    running = Server(tmp_path_factory.mktemp("serve") / "private")
    yield running
    running.stop()


def running_process(pid: int) -> bool:
    """Whether pid is a process that has not ended (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def outputs(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.rglob("*")) if p.suffix in (".gif", ".mp4", ".png")}


def rendering(env: dict[str, str], cwd: Path, out: str, **popen) -> subprocess.Popen:
    """A client of a long served render into `out`, returned once its frames have begun (its
    progress line); its stderr is a pipe."""
    client = subprocess.Popen(
        [*COMMAND, "render", "quickstart", *LONG, "--out", out],
        env=env,
        cwd=cwd,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )
    said = ""
    while "frame/s" not in said:
        said = client.stderr.read(200)
        assert said, "the client ended before its render began"
    return client


def test_a_served_render_writes_the_bytes_the_command_writes_itself(server, tmp_path):
    served = server.run(["render", "quickstart", *SMALL, "--out", "served"], tmp_path)
    assert served.returncode == 0, served.stderr
    assert "exit 0" in server.ended("--out served")
    here = server.run(["render", "quickstart", *SMALL, "--out", "here"], tmp_path, PHYSARUM_SERVE="0")
    assert here.returncode == 0, here.stderr
    assert sum("--out here" in line for line in server.lines) == 0  # PHYSARUM_SERVE=0: not handed over
    made = outputs(tmp_path / "served")
    assert len(made) == 3 and made == outputs(tmp_path / "here")
    # the same lines on the client's own stdout and stderr (paths relative to its folder)
    assert served.stdout.replace("served", "here") == here.stdout
    assert "gif:" in served.stderr and "within the" in served.stderr


def test_a_served_mistake_is_one_message_exit_2_and_nothing_written(server, tmp_path):
    done = server.run(["render", "quickstart", "--set", "model.decay=7", "--out", "bad"], tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("error: ") and "Traceback" not in done.stderr
    assert not (tmp_path / "bad").exists()
    assert "exit 2" in server.ended("model.decay=7")
    usage = server.run(["render", "quickstart", "--no-such-flag"], tmp_path)
    assert usage.returncode == 2 and "--no-such-flag" in usage.stderr


def test_sigterm_reaches_the_served_render_which_leaves_nothing(server, tmp_path):
    client = rendering(server.env, tmp_path, "stopped")
    client.send_signal(signal.SIGTERM)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 128 + signal.SIGTERM, err
    assert "no partial output was left" in err
    assert "exit 143" in server.ended("--out stopped")
    assert not list((tmp_path / "stopped").rglob("*.*"))


def state(pid: int) -> str:
    """A process's state letter (R, S, T for stopped, Z...)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def eventually(check, timeout: float = 30) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if check():
            return True
        time.sleep(0.05)
    return False


def test_ctrl_z_stops_the_served_render_with_its_client_and_fg_resumes_both(server, tmp_path):
    """The client in a job of its own (a process group whose parent, this test, is in another
    group of the session: as under an interactive shell) is stopped by SIGTSTP with its render."""
    client = rendering(server.env, tmp_path, "paused", process_group=0)
    child = int(server.wait_for("--out paused").split("pid ")[1].split(":")[0])
    client.send_signal(signal.SIGTSTP)
    assert eventually(lambda: state(client.pid) == "T" and state(child) == "T")
    client.send_signal(signal.SIGCONT)
    assert eventually(lambda: state(client.pid) != "T" and state(child) != "T")
    client.send_signal(signal.SIGTERM)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 128 + signal.SIGTERM, err
    assert not list((tmp_path / "paused").rglob("*.*"))


def test_a_stop_the_kernel_discards_leaves_the_served_render_running(server, tmp_path):
    """A client in an orphaned process group (its own session: no shell to resume it) is not
    stopped by SIGTSTP, as its own process would not be, and neither is its render."""
    client = rendering(server.env, tmp_path, "unstopped", start_new_session=True)
    child = int(server.wait_for("--out unstopped").split("pid ")[1].split(":")[0])
    client.send_signal(signal.SIGTSTP)
    time.sleep(1.0)
    assert state(client.pid) != "T"
    assert eventually(lambda: state(child) != "T", timeout=5), "the render was left stopped"
    client.send_signal(signal.SIGTERM)
    _, err = client.communicate(timeout=120)
    assert client.returncode == 128 + signal.SIGTERM, err


def test_a_client_killed_has_its_render_stopped(server, tmp_path):
    client = rendering(server.env, tmp_path, "orphan")
    client.kill()
    client.wait()
    server.wait_for("client left: stopping pid")
    end = server.ended("--out orphan")
    assert "exit 143" in end
    assert not list((tmp_path / "orphan").rglob("*.*"))


def test_a_different_import_time_environment_runs_the_command_itself(server, tmp_path):
    value = "1" if os.environ.get("OMP_NUM_THREADS") != "1" else "2"
    done = server.run(["render", "quickstart", *SMALL, "--out", "own"], tmp_path, OMP_NUM_THREADS=value)
    assert done.returncode == 0, done.stderr
    assert "OMP_NUM_THREADS" in server.wait_for("not served (import-time environment differs")
    assert len(outputs(tmp_path / "own")) == 3


def test_the_clients_umask_is_the_served_commands(server, tmp_path):
    """A forked child would keep the server's umask: it takes the client's, so a served render's
    files have the modes the command would give them itself."""
    done = server.run(["render", "quickstart", *SMALL, "--out", "private"], tmp_path, {"umask": 0o077})
    assert done.returncode == 0, done.stderr
    assert "exit 0" in server.ended("--out private")  # served
    made = [p for p in (tmp_path / "private").rglob("*") if p.is_file()]
    assert len(made) >= 4 and all(p.stat().st_mode & 0o777 == 0o600 for p in made), made


def test_other_process_settings_run_the_command_itself(server, tmp_path):
    """A client under another niceness or another resource limit (nice, ulimit in its shell) runs
    the command itself: a forked child would take the server's."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)

    def settings():
        os.nice(1)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft - 1, hard))

    done = server.run(
        ["render", "quickstart", *SMALL, "--out", "own-settings"], tmp_path, {"preexec_fn": settings}
    )
    assert done.returncode == 0, done.stderr
    assert "(process settings differ: RLIMIT_NOFILE, nice)" in server.wait_for("own-settings")
    assert len(outputs(tmp_path / "own-settings")) == 3
    ours = resident.process_settings()
    assert resident.settings_difference(ours, ours) == []
    assert resident.settings_difference(ours, {**ours, "cpus": [0]}) == (
        ["cpus"] if ours["cpus"] != [0] else []
    )
    assert resident.settings_difference(ours, None) == ["settings"]


def test_a_request_that_is_not_one_does_not_stop_the_server(server, tmp_path):
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as bad:
        bad.connect(str(server.path))
        bad.sendall(b"\xff" * 8 + b"not json")
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as cut:
        cut.connect(str(server.path))
    status = server.run(["serve", "--status"], tmp_path)
    assert status.returncode == 0 and f"serving at {server.path}" in status.stdout


def test_only_render_and_still_are_handed_over(server, tmp_path):
    before = len(server.lines)
    done = server.run(["presets"], tmp_path)
    assert done.returncode == 0 and "quickstart" in done.stdout
    assert resident.forward(["presets"], environment(server.path)) is None
    assert resident.forward(["render", "--help"], environment(server.path)) is None
    assert len(server.lines) == before


def test_the_socket_folder_must_be_private(tmp_path):
    """A server refuses a folder others can open; a client never connects to a socket in one."""
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o755)
    os.chmod(open_folder, 0o755)
    path = open_folder / "serve.sock"
    done = subprocess.run(
        [*COMMAND, "serve"], env=environment(path), capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "open to other users" in done.stderr and not path.exists()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:  # a stranger's socket
        listener.bind(str(path))
        listener.listen(1)
        listener.settimeout(0.5)
        assert resident.forward(["render", "quickstart"], environment(path)) is None
        with pytest.raises(TimeoutError):
            listener.accept()


def test_one_server_per_socket_and_stop(tmp_path):
    running = Server(tmp_path / "private")
    try:
        second = running.run(["serve"], tmp_path)
        assert second.returncode == 2 and "already listens" in second.stderr
        stop = running.run(["serve", "--stop"], tmp_path)
        assert stop.returncode == 0 and "stopping" in stop.stdout
        assert running.process.wait(60) == 0 and not running.path.exists()
        status = running.run(["serve", "--status"], tmp_path)
        assert status.returncode == 1 and "no physarum server" in status.stdout
    finally:
        running.stop()


def test_the_fingerprint_follows_the_package_files(tmp_path, monkeypatch):
    module = tmp_path / "pkg" / "module.py"
    module.parent.mkdir()
    module.write_text("x = 1\n")
    monkeypatch.setattr(resident, "package_folders", lambda: [module.parent])
    first = resident.fingerprint()
    assert resident.fingerprint() == first
    module.write_text("x = 22\n")
    assert resident.fingerprint() != first


def test_import_time_variables_are_told_from_the_rest():
    ours = {"PATH": "/a", "OMP_NUM_THREADS": "4", "TRITON_CACHE_DIR": "/c", "TORCH_LOGS": "x"}
    theirs = {"PATH": "/b", "OMP_NUM_THREADS": "4", "TRITON_CACHE_DIR": "/d", "TRITON_INTERPRET": "1"}
    assert resident.env_difference(ours, theirs) == ["TORCH_LOGS", "TRITON_INTERPRET"]


def test_a_killed_server_stops_its_render_and_its_client_says_so(tmp_path):
    running = Server(tmp_path / "private")
    try:
        client = rendering(running.env, tmp_path, "lost")
        child = int(running.wait_for("--out lost").split("pid ")[1].split(":")[0])
        running.process.kill()
        _, err = client.communicate(timeout=120)
        assert client.returncode == 1 and "the physarum server stopped during the command" in err
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and running_process(child):
            time.sleep(0.2)
        assert not running_process(child), "the render outlived its server"
        assert not list((tmp_path / "lost").rglob("*.*")), "the stopped render left files"
    finally:
        running.stop()
