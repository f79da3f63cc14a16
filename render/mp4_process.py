"""An MP4 encoder in a process of its own, for batched renders.

x264's macroblock-tree rate control keeps state that the encoders of one process share: when
several encode at once, as in a batch, their frames interleave and their bytes change. Measured
on an 8-job batch of tiny canvases: 5 to 25% of the MP4s differed from the same job rendered
alone (the decoded frames by up to 40 levels); none did with mbtree off, or with one encoder per
process. One encoder per process keeps every MP4 of a batch byte-identical to a single render,
with the same encoder settings (encode.Mp4Writer, unchanged).

The child is `python -m physarum.render.mp4_process PATH WIDTH HEIGHT FPS`: the comment comes
first on stdin as one length-prefixed block, then raw RGB frames (HEIGHT x WIDTH x 3 bytes each);
end of input commits the file; the child's last line on stdout is `ok` or `error: ...`. It
imports no torch, so it starts in a fraction of a second.
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from physarum.render.encode import Mp4Writer


class Mp4Process:
    """encode.Mp4Writer's interface (write, commit, abort, path), encoding in a child process."""

    def __init__(self, path: Path, width: int, height: int, fps: int, comment: str):
        self.path = Path(path)
        self.size = (width, height)
        command = [sys.executable, "-m", "physarum.render.mp4_process", str(self.path), str(width),
                   str(height), str(fps)]
        self.stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty child never blocks
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.stderr)
        data = comment.encode("utf-8")
        self.process.stdin.write(struct.pack("<Q", len(data)) + data)

    def write(self, rgb: np.ndarray) -> None:
        if rgb.shape != (self.size[1], self.size[0], 3):
            raise ValueError(f"frame of shape {rgb.shape} for a {self.size[0]}x{self.size[1]} MP4")
        try:
            self.process.stdin.write(np.ascontiguousarray(rgb, dtype=np.uint8).data)
        except BrokenPipeError:
            raise OSError(f"the MP4 encoder process stopped: {self._outcome()}") from None

    def commit(self) -> None:
        outcome = self._outcome()
        if outcome != "ok":
            raise OSError(f"MP4 encoder process: {outcome}")

    def abort(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.stderr):
            try:
                stream.close()
            except OSError:
                pass
        self.path.with_name(f".{self.path.name}.{self.process.pid}.part").unlink(missing_ok=True)

    def _outcome(self) -> str:
        """Close the child's input and wait for its verdict."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        out = self.process.stdout.read()
        self.process.wait()
        lines = out.decode("utf-8", "replace").strip().splitlines()
        if self.process.returncode == 0 and lines[-1:] == ["ok"]:
            return "ok"
        if lines:
            return lines[-1].removeprefix("error: ")
        self.stderr.seek(0)
        errors = self.stderr.read().decode("utf-8", "replace").strip().splitlines()
        return errors[-1] if errors else f"exit code {self.process.returncode}"


def die_with_parent(parent: int | None = None) -> None:
    """Make this child process die with its parent, even a parent killed with kill -9 (Linux:
    PR_SET_PDEATHSIG), so that nothing writes on alone; exit at once if the parent (pid) is gone."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if parent is not None and os.getppid() != parent:
        os._exit(1)


def _read_exactly(stream, size: int) -> bytes | None:
    data = stream.read(size)
    if not data:
        return None
    if len(data) != size:
        raise OSError(f"truncated input: {len(data)} of {size} bytes")
    return data


def main(argv: list[str]) -> int:
    die_with_parent()
    path, width, height, fps = Path(argv[0]), int(argv[1]), int(argv[2]), int(argv[3])
    stdin = sys.stdin.buffer
    writer = None
    try:
        (length,) = struct.unpack("<Q", _read_exactly(stdin, 8))
        comment = _read_exactly(stdin, length).decode("utf-8") if length else ""
        writer = Mp4Writer(path, width, height, fps, comment)
        frame_bytes = width * height * 3
        while (data := _read_exactly(stdin, frame_bytes)) is not None:
            writer.write(np.frombuffer(data, dtype=np.uint8).reshape(height, width, 3))
        writer.commit()
    except BaseException as error:
        if writer is not None:
            writer.abort()
        print(f"error: {type(error).__name__}: {error}", flush=True)
        return 1
    print("ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
