"""`physarum serve`: a resident process that has imported torch, Triton and the package, and runs
each `physarum render` or `physarum still` handed to it in a child forked for that command
(the contract and the client: cli/resident.py; docs/usage.md).

The server itself stays single-threaded and never touches CUDA or runs a tensor operation: a fork
copies only imported modules, and each child makes its own CUDA context and thread pools as a new
process would. A child runs the command with the client's arguments, working folder, environment
and terminal (stdin, stdout, stderr), so its files, bytes, messages and exit code are the
command's own. A client that goes away (killed, its terminal closed) has its child sent SIGTERM,
which a render honours without leaving partial output. SIGINT or SIGTERM to the server, or
`physarum serve --stop`, stops it taking commands; it ends once its running children have.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import selectors
import signal
import socket
import struct
import sys
import threading
import time
from pathlib import Path

from ..base.errors import RenderError, printable
from . import resident

# Imported before serving, so that a child finds them loaded: the libraries a render uses and
# every module of the package's render path (the sweep, live, explore and tools ones are not).
LIBRARIES = ("numpy", "torch", "av", "PIL.Image", "PIL.PngImagePlugin", "pydantic", "yaml", "triton")
PACKAGES = ("physarum.kernels", "physarum.render")
SKIPPED = ("physarum.render.live", "physarum.render.sweep", "physarum.render.explore")
SKIPPED += ("physarum.render.tools", "physarum.render.graph", "physarum.render.analysis")
WAKE_S = 0.2  # how often the loop looks for children that ended and for a stop


def preload() -> int:
    """Import LIBRARIES and the modules of PACKAGES (less SKIPPED); how many modules are loaded. A
    module that cannot be imported here (Triton on a machine without it) is left to the child."""
    for name in LIBRARIES:
        try:
            importlib.import_module(name)
        except Exception:
            pass
    for package in PACKAGES:
        root = importlib.import_module(package)
        for info in pkgutil.walk_packages(root.__path__, prefix=f"{package}.", onerror=lambda _n: None):
            if info.name.startswith(SKIPPED) or info.name.endswith("__main__"):
                continue
            try:
                importlib.import_module(info.name)
            except Exception:
                pass
    return len(sys.modules)


def listen(path: Path) -> socket.socket:
    """The listening socket at path, in a private folder made where missing; RenderError where the
    folder is not private or a server already listens there."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    problem = resident.private_folder_problem(path.parent)
    if problem:
        raise RenderError(f"physarum serve: {problem}; choose another socket with {resident.SOCKET}=PATH")
    live = resident.connect(path)
    if live is not None:
        live.close()
        raise RenderError(
            f"physarum serve: a server already listens at {path} (physarum serve --stop ends it)"
        )
    if path.exists() or path.is_symlink():
        path.unlink()  # a socket left by a server that was killed
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    os.chmod(path, 0o600)
    listener.listen(16)
    listener.setblocking(False)
    return listener


def peer_uid(conn: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket."""
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]  # pid, uid, gid


class Server:
    """The loop: accept, check, fork; reap children and report their exit codes."""

    def __init__(self, path: Path, listener: socket.socket, say, idle_s: float | None):
        self.path, self.listener, self.say, self.idle_s = path, listener, say, idle_s
        self.selector = selectors.DefaultSelector()
        self.selector.register(listener, selectors.EVENT_READ)
        self.children: dict[int, tuple[socket.socket | None, str, float]] = {}  # pid -> conn, what, began
        self.stopping = False
        self.served = 0
        self.since = time.time()
        self.last_active = time.monotonic()
        self.fingerprint = resident.fingerprint()
        self.env = dict(os.environ)

    def run(self) -> None:
        while not (self.stopping and not self.children):
            for key, _events in self.selector.select(WAKE_S):
                if key.fileobj is self.listener:
                    self.accept()
                else:
                    self.client_left(key.fileobj, key.data)
            self.reap()
            idle = self.idle_s is not None and not self.children
            if idle and time.monotonic() - self.last_active > self.idle_s and not self.stopping:
                self.say(f"idle for {self.idle_s:g} s: stopping")
                self.stop()
        self.selector.close()

    def stop(self) -> None:
        """Take no more commands: the socket goes; the loop ends when the children have."""
        if self.stopping:
            return
        self.stopping = True
        self.selector.unregister(self.listener)
        self.listener.close()
        try:
            self.path.unlink()
        except OSError:
            pass

    def accept(self) -> None:
        try:
            conn, _ = self.listener.accept()
        except OSError:
            return
        conn.setblocking(True)
        conn.settimeout(5.0)  # a client sends its request at once
        if peer_uid(conn) != os.getuid():
            conn.close()
            return
        try:
            request, fds = resident.receive_message(conn, want_fds=3)
        except (OSError, ValueError):
            conn.close()
            return
        self.last_active = time.monotonic()
        try:
            self.answer(conn, request, fds)
        except OSError:  # the client left while being answered
            conn.close()
        finally:
            for fd in fds:
                os.close(fd)

    def answer(self, conn: socket.socket, request: dict, fds: list[int]) -> None:
        if request.get("stop"):
            resident.send_message(conn, {"stopping": True, "running": len(self.children)})
            conn.close()
            self.say("asked to stop")
            self.stop()
            return
        if request.get("status"):
            status = {"pid": os.getpid(), "since": self.since, "served": self.served}
            status |= {"running": len(self.children), "socket": str(self.path), "python": sys.executable}
            resident.send_message(conn, status)
            conn.close()
            return
        refusal = self.refusal(request, fds)
        if refusal:
            resident.send_message(conn, {"refused": refusal})
            conn.close()
            self.say(f"not served ({refusal}): {printable(' '.join(map(str, request.get('argv', []))))}")
            return
        what = printable(" ".join(request["argv"]))
        pid = os.fork()
        if pid == 0:
            self.selector.close()
            self.listener.close()
            for other, _what, _began in self.children.values():
                if other is not None:
                    other.close()
            conn.close()
            child(request, fds)  # never returns
        resident.send_message(conn, {"pid": pid})
        self.say(f"pid {pid}: {what}")
        conn.settimeout(None)
        self.selector.register(conn, selectors.EVENT_READ, pid)
        self.children[pid] = (conn, what, time.perf_counter())
        self.served += 1

    def refusal(self, request: dict, fds: list[int]) -> str | None:
        """Why a request is run by its client instead, or None where it is served."""
        argv = request.get("argv")
        if not (isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv)):
            return "no command"
        if argv[0] not in resident.SERVED:
            return f"{argv[0]} is not served"
        if len(fds) != 3:
            return "no terminal descriptors"
        if not isinstance(request.get("cwd"), str) or not isinstance(request.get("env"), dict):
            return "no working folder or environment"
        if request.get("python") != sys.executable:
            return f"another Python ({request.get('python')})"
        if request.get("fingerprint") != self.fingerprint:
            return "the package changed since the server started"
        differ = resident.env_difference(self.env, request["env"])
        if differ:
            return f"import-time environment differs: {', '.join(differ[:5])}"
        differ = resident.settings_difference(resident.process_settings(), request.get("settings"))
        if differ:
            return f"process settings differ: {', '.join(differ[:5])}"
        if not (isinstance(request.get("umask"), int) and 0 <= request["umask"] <= 0o777):
            return "no umask"
        if self.stopping:
            return "stopping"
        return None

    def client_left(self, conn, pid: int) -> None:
        """A client's connection is readable: it sent nothing more, so it closed; its child is sent
        SIGTERM (a render then stops without partial output)."""
        self.selector.unregister(conn)
        conn.close()
        entry = self.children.get(pid)
        if entry is not None:
            self.children[pid] = (None, entry[1], entry[2])
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            self.say(f"client left: stopping pid {pid} ({entry[1]})")

    def reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn, what, began = self.children.pop(pid, (None, "?", time.perf_counter()))
            code = os.waitstatus_to_exitcode(status)
            code = 128 - code if code < 0 else code  # killed by a signal: as a shell reports it
            self.say(f"pid {pid} exit {code} in {time.perf_counter() - began:.2f} s: {what}")
            self.last_active = time.monotonic()
            if conn is not None:
                try:
                    self.selector.unregister(conn)
                    resident.send_message(conn, {"exit": code})
                except (OSError, KeyError, ValueError):
                    pass
                conn.close()


def child(request: dict, fds: list[int]) -> None:
    """In the forked child: become the client's command (its terminal, folder, environment, signal
    dispositions and arguments), run it and exit with its code, as cli.main.run would."""
    code = 1
    try:
        _end_with_server()
        for fd, target in zip(fds, (0, 1, 2), strict=True):
            os.dup2(fd, target)
            os.close(fd)
        sys.stdin = open(0, closefd=False, errors="surrogateescape")
        sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False, errors="backslashreplace")
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGPIPE):
            signal.signal(signum, signal.SIG_DFL if signum != signal.SIGPIPE else signal.SIG_IGN)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        os.umask(request["umask"])
        sys.argv = ["physarum", *request["argv"]]
        from .main import finish, main  # start-up: loaded already by preload, found in the child

        try:
            code = main(request["argv"])
        except SystemExit as leaving:  # argparse's usage errors
            code = leaving.code if isinstance(leaving.code, int) else (0 if leaving.code is None else 2)
        finish(code)
    except BaseException:  # a fault of ours: said on the client's stderr, as a process would
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code if isinstance(code, int) else 1)


def _end_with_server() -> None:
    """Have this child sent SIGTERM if the server dies (Linux's PR_SET_PDEATHSIG), so that a
    render whose server was killed stops (leaving nothing partial) rather than writing on into a
    terminal whose command has ended."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):  # not Linux: the child outlives its server
        pass
    if os.getppid() == 1:  # the server died before the call: nothing would tell this child
        os._exit(128 + signal.SIGTERM)


def serve(args) -> int:
    """`physarum serve`: status, stop, or serve until stopped."""
    path = resident.socket_path()
    if args.status or args.stop:
        answer = resident.ask({"status": True} if args.status else {"stop": True})
        if answer is None:
            print(printable(f"no physarum server at {path}"))
            return 1
        if args.stop:
            print(printable(f"stopping the server at {path} ({answer.get('running', 0)} commands running)"))
            return 0
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(answer.get("since", 0)))
        print(
            printable(
                f"serving at {path}: pid {answer.get('pid')}, since {since}, "
                f"{answer.get('served', 0)} commands served, {answer.get('running', 0)} running"
            )
        )
        return 0
    began = time.perf_counter()
    listener = listen(path)

    def say(line: str) -> None:
        if not args.quiet:
            print(printable(f"physarum serve: {line}"), file=sys.stderr, flush=True)

    try:
        loaded = preload()
        threads = threading.active_count()
        if threads > 1:  # a fork copies one thread: a library that started others would break children
            raise RenderError(
                f"physarum serve: {threads - 1} threads were started while importing; cannot fork safely"
            )
    except BaseException:  # no server: its socket goes
        listener.close()
        path.unlink(missing_ok=True)
        raise
    server = Server(path, listener, say, args.idle)
    signal.signal(signal.SIGINT, lambda *_: server.stop())
    signal.signal(signal.SIGTERM, lambda *_: server.stop())
    say(
        f"ready at {path} in {time.perf_counter() - began:.1f} s ({loaded} modules loaded); serving render and still"
    )
    server.run()
    say(f"stopped after {server.served} command{'s' if server.served != 1 else ''}")
    return 0
