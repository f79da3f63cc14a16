"""The resident server's contract, shared by `physarum serve` (cli/serve.py) and the command's
entry (cli/entry.py): where its socket lives, when a command may be served by it, and the client
that hands a command over.

A render spends most of a short run's wall before its first step: `import torch` alone is 2.5-4.7
s on the machines measured (docs/benchmarks.md). `physarum serve` imports torch, Triton and the
package once and waits; `physarum render` and `physarum still` then hand their arguments, working
folder, environment and the terminal's stdin, stdout and stderr (the descriptors themselves, over
a Unix socket) to it, and the server forks a child that runs the command as the process itself
would, with the same files and bytes. The client forwards SIGINT, SIGTERM and SIGHUP to that child,
stops it with itself (Ctrl-Z) and resumes it with itself, and exits with its exit code.

A command is served only where the server would run what the process itself would; otherwise the
client runs it itself, silently:
- the socket's folder is the user's own and private (mode 0700), and the server checks the peer's
  uid (SO_PEERCRED);
- the same Python executable, and the same package: FINGERPRINT (each module file's path, size and
  mtime), so an edited or upgraded package is never served by the old code;
- the same environment where a library reads it while being imported (IMPORT_TIME prefixes: the
  thread counts, torch's and Triton's switches, the loader's paths); the rest of the environment
  is the client's;
- the same process settings (process_settings: the CPUs it may run on, its niceness and
  scheduling policy, its resource limits), which a forked child would otherwise take from the
  server: `taskset`, `nice`, `chrt` or `ulimit` in the client's shell make it run itself; its
  umask is the client's in the child;
- PHYSARUM_SERVE=0 turns serving off for a command.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import sys
from pathlib import Path

SOCKET = "PHYSARUM_SERVER"  # the socket's path, where not the default
SWITCH = "PHYSARUM_SERVE"  # "0": never hand a command to a server
SERVED = ("render", "still")  # the commands that import torch before their first step
# Variables a library reads while being imported (or the interpreter while starting): a command
# whose values differ from the server's runs itself. RUN_TIME are read later, in the child.
IMPORT_TIME = ("OMP_", "MKL_", "KMP_", "OPENBLAS", "TORCH", "PYTORCH", "CUDA_", "CUBLAS", "NVIDIA_")
IMPORT_TIME += ("TRITON_", "LD_", "PYTHON", "MALLOC", "GOMP_", "PHYSARUM_PRELOAD")
RUN_TIME = ("TRITON_CACHE_DIR", "CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER", "PYTHONUNBUFFERED")
FORWARDED_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
MAX_HEADER = 1 << 20  # bytes: a command's arguments and environment


def socket_path(environ=os.environ) -> Path:
    """The server's socket: PHYSARUM_SERVER, else physarum-UID/serve.sock in XDG_RUNTIME_DIR (or
    /tmp)."""
    named = environ.get(SOCKET)
    if named:
        return Path(named)
    base = environ.get("XDG_RUNTIME_DIR") or "/tmp"
    return Path(base) / f"physarum-{os.getuid()}" / "serve.sock"


def private_folder_problem(folder: Path) -> str | None:
    """Why a socket's folder cannot be trusted (not ours, or others may write or read in it), or
    None where it is the user's own with mode 0700 or stricter."""
    try:
        st = folder.stat()
    except OSError as error:
        return f"{folder}: {error.strerror or error}"
    if st.st_uid != os.getuid():
        return f"{folder} belongs to another user (uid {st.st_uid})"
    if st.st_mode & 0o077:
        return f"{folder} is open to other users (mode {st.st_mode & 0o777:o}; 700 is needed)"
    return None


def package_folders() -> list[Path]:
    """The folders whose modules a command runs: the API (physarum), the render side and the
    kernels (beside render/ in a checkout, inside physarum/ when installed)."""
    render = Path(__file__).parents[1]
    api = Path(sys.modules["physarum"].__file__).parent
    kernels = render.parent / "kernels"
    return sorted({api, render, *([kernels] if (kernels / "__init__.py").is_file() else [])})


def fingerprint() -> str:
    """The package's modules as they are on disk: each .py file's path, size and mtime, hashed.
    An edit, an upgrade or a reinstall changes it."""
    import hashlib

    digest = hashlib.sha256(sys.executable.encode())
    for folder in package_folders():
        for root, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(f for f in files if f.endswith(".py")):
                st = os.stat(os.path.join(root, name))
                digest.update(f"{root}/{name} {st.st_size} {st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:32]


def process_settings() -> dict:
    """What of this process a forked child inherits from its parent and the command's own process
    would take from its shell: the CPUs it may run on, its niceness, scheduling policy and
    resource limits (as JSON values; a setting the OS does not have is left out)."""
    import resource

    settings: dict = {"nice": os.getpriority(os.PRIO_PROCESS, 0)}
    if hasattr(os, "sched_getaffinity"):
        settings["cpus"] = sorted(os.sched_getaffinity(0))
        settings["policy"] = os.sched_getscheduler(0)
    names: dict[int, str] = {}  # one name a limit (RLIMIT_OFILE is RLIMIT_NOFILE)
    for name in sorted(n for n in dir(resource) if n.startswith("RLIMIT_")):
        names.setdefault(getattr(resource, name), name)
    settings["limits"] = {name: list(resource.getrlimit(number)) for number, name in sorted(names.items())}
    return settings


def settings_difference(ours: dict, theirs) -> list[str]:
    """The process settings (process_settings) that differ between two processes, sorted: each
    limit by its name, the rest as cpus, nice, policy."""
    if not isinstance(theirs, dict):
        return ["settings"]
    differ = [key for key in ("cpus", "nice", "policy") if ours.get(key) != theirs.get(key)]
    limits, other = ours.get("limits", {}), theirs.get("limits")
    if not isinstance(other, dict):
        return [*differ, "limits"]
    differ += [name for name in limits.keys() | other.keys() if limits.get(name) != other.get(name)]
    return sorted(differ)


def current_umask() -> int:
    """This process's umask (read by setting it and setting it back)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def import_time_env(environ) -> dict[str, str]:
    """The variables of environ that a library reads while being imported (IMPORT_TIME less
    RUN_TIME)."""
    return {k: v for k, v in environ.items() if k.startswith(IMPORT_TIME) and not k.startswith(RUN_TIME)}


def env_difference(ours, theirs) -> list[str]:
    """The import-time variables whose values differ between two environments, sorted."""
    a, b = import_time_env(ours), import_time_env(theirs)
    return sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k))


def send_message(conn: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    """One message: its length (8 bytes) and its JSON; fds ride with its first byte."""
    body = json.dumps(message).encode()
    data = struct.pack("!Q", len(body)) + body
    if fds:
        socket.send_fds(conn, [data[:1]], fds)
        data = data[1:]
    conn.sendall(data)


def receive_message(conn: socket.socket, want_fds: int = 0) -> tuple[dict, list[int]]:
    """One message sent by send_message and the descriptors that came with it; ValueError for a
    message that is not one (too long, cut short, not a JSON object)."""
    fds: list[int] = []
    data = b""
    if want_fds:
        data, fds, _flags, _addr = socket.recv_fds(conn, 8, want_fds)
    while len(data) < 8:
        chunk = conn.recv(8 - len(data))
        if not chunk:
            _close(fds)
            raise ValueError("the message was cut short")
        data += chunk
    (length,) = struct.unpack("!Q", data[:8])
    if length > MAX_HEADER:
        _close(fds)
        raise ValueError(f"a message of {length} bytes (at most {MAX_HEADER})")
    body = data[8:]
    while len(body) < length:
        chunk = conn.recv(min(65536, length - len(body)))
        if not chunk:
            _close(fds)
            raise ValueError("the message was cut short")
        body += chunk
    try:
        message = json.loads(body)
    except ValueError:
        _close(fds)
        raise ValueError("the message is not JSON") from None
    if not isinstance(message, dict):
        _close(fds)
        raise ValueError("the message is not a JSON object")
    return message, fds


def _close(fds: list[int]) -> None:
    for fd in fds:
        os.close(fd)


def connect(path: Path, timeout: float = 2.0) -> socket.socket | None:
    """A connection to the server at path, or None where none listens there or its folder is not
    private."""
    if not path.exists() or private_folder_problem(path.parent):
        return None
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(str(path))
    except OSError:
        conn.close()
        return None
    return conn


def ask(message: dict, environ=os.environ) -> dict | None:
    """A request that is not a command (status, stop) and the server's answer; None where no
    server answers."""
    conn = connect(socket_path(environ))
    if conn is None:
        return None
    with conn:
        try:
            send_message(conn, message)
            answer, _ = receive_message(conn)
        except (OSError, ValueError):
            return None
    return answer


def forward(argv: list[str], environ=os.environ) -> int | None:
    """Hand the command argv to a running server and wait for it: the command's exit code, or None
    where it is to run in this process (no server, serving off, a command that is not served, a
    server that refuses it: another package, Python or import-time environment)."""
    if environ.get(SWITCH) == "0" or not argv or argv[0] not in SERVED:
        return None
    if any(a in ("-h", "--help") for a in argv):
        return None
    conn = connect(socket_path(environ))
    if conn is None:
        return None
    with conn:
        try:
            request = {
                "argv": argv,
                "cwd": os.getcwd(),
                "env": dict(environ),
                "python": sys.executable,
                "fingerprint": fingerprint(),
                "settings": process_settings(),
                "umask": current_umask(),
            }
            send_message(conn, request, fds=[0, 1, 2])
            answer, _ = receive_message(conn)
        except (OSError, ValueError):  # a server that went away, a folder that is gone
            return None
        if "pid" not in answer:  # refused: this process runs it
            return None
        return _wait(conn, int(answer["pid"]))


def _wait(conn: socket.socket, pid: int) -> int:
    """Forward signals to the child pid until the server says how it ended; its exit code. A
    stop (Ctrl-Z's SIGTSTP) stops the child, then the client; SIGCONT resumes both. Where the
    client is not stopped (an orphaned process group), neither is the child."""

    def pass_on(signum, _frame):
        try:
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    def stop(_signum, _frame):
        pass_on(signal.SIGSTOP, None)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        # Stopped here until SIGCONT, as the command's own process would be; in an orphaned
        # process group (no shell to resume it) the kernel discards the stop and it returns at once
        os.kill(os.getpid(), signal.SIGTSTP)
        signal.signal(signal.SIGTSTP, stop)
        pass_on(signal.SIGCONT, None)  # resumed, or never stopped: the child runs with it

    for signum in FORWARDED_SIGNALS:
        signal.signal(signum, pass_on)
    if hasattr(signal, "SIGTSTP"):
        signal.signal(signal.SIGTSTP, stop)
        signal.signal(signal.SIGCONT, lambda _signum, frame: pass_on(signal.SIGCONT, frame))
    conn.settimeout(None)
    try:
        answer, _ = receive_message(conn)
    except (OSError, ValueError):
        answer = {}
    if "exit" not in answer:
        print("error: the physarum server stopped during the command; run it again", file=sys.stderr)
        return 1
    return int(answer["exit"])
