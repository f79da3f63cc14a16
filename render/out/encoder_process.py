"""The encoders of one job (its GIF, MP4 and PNG) in a process of its own, for batched renders.

Two reasons (the measurements are in docs/benchmarks.md, "Measurements behind the code: the
render pipeline"):

- x264's bytes depend on what else its process encodes: the encoders of one process share
  state, and when several encode at once, as in a batch, their MP4s differ from the same jobs
  rendered alone. One encoder process per job keeps every MP4 of a batch byte-identical to a
  single render.
- Pillow's GIF encoder holds the interpreter lock, so GIF writers in threads of one process
  encode one after another; a process per job encodes them in parallel.

The child is `python -m physarum.render.out.encoder_process`. Its stdin carries one length-prefixed
header, the pickled list of the job's specs (render/out/outputs.py), then every frame: a flags byte,
then the GIF's preview index frame and its palette (768 bytes) if flag 1 is set, and the RGB
frame if flag 2 is (every frame for an MP4; a PNG still needs only the last); flag 4 marks a ping-pong loop's replayed
frame (render/look/loops.py). A frame carries
only what the child's writers read. End of input completes every file under the child's temporary
names (render/base/files.py); the child's last line on stdout is `ok` or `error: ...`, and the parent
renames the files with the job's others (files.commit_together); a budgeted GIF's choice comes
before it as a line `report {json}`. It imports no torch, so it starts in a fraction of a second.
"""

from __future__ import annotations

import ctypes
import json
import os
import pickle
import signal
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

from ..base.files import PartialFile, commit_together, temporary_of
from ..formats.contract import Frame, Spec, Writer
from ..formats.gif import GifSpec
from ..formats.registry import open_writer

GIF_FLAG, RGB_FLAG, REPLAY_FLAG = 1, 2, 4  # a frame's flags byte: which blocks follow, a replay


class EncoderProcess:
    """Writes one job's outputs (GIF, MP4 and PNG specs) in a child process: a Writer
    (render/out/outputs.py) with end_input()."""

    def __init__(self, specs: list[Spec], path: Path, cores: list[int] | None = None):
        """cores: the cores the child may run on (machine.encoder_cores; None: every core). It is
        set before the header is sent, so before the child opens a writer or starts a thread."""
        self.specs, self.path = specs, Path(path)  # path names the job in messages
        self.gif = any(isinstance(spec, GifSpec) for spec in specs)
        self.rgb = any(spec.reads != "preview" for spec in specs)
        self.report: dict | None = None  # a budgeted GIF's choice (GifWriter.report)
        self.stderr = tempfile.TemporaryFile()  # a file, not a pipe: a chatty child never blocks
        self.process = subprocess.Popen(
            [sys.executable, "-m", "physarum.render.out.encoder_process"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
        )
        if cores:
            try:
                os.sched_setaffinity(self.process.pid, cores)
            except OSError:  # the child runs on every core: slower in a big batch, same bytes
                pass
        header = pickle.dumps(list(specs))
        self._send(struct.pack("<Q", len(header)) + header)

    def write(self, frame: Frame) -> None:
        """Send what the child's writers read of a frame: the preview and palette (with a GIF),
        the RGB where the frame has one (with an MP4 or a PNG)."""
        gif = self.gif and frame.preview is not None
        rgb = self.rgb and frame.rgb is not None
        self._send(bytes([GIF_FLAG * gif | RGB_FLAG * rgb | REPLAY_FLAG * frame.replay]))
        if gif:
            self._send(np.ascontiguousarray(frame.preview, dtype=np.uint8).data)
            self._send(np.ascontiguousarray(frame.palette, dtype=np.uint8).data)
        if rgb:
            self._send(np.ascontiguousarray(frame.rgb, dtype=np.uint8).data)

    def _send(self, data) -> None:
        try:
            self.process.stdin.write(data)
        except BrokenPipeError:
            raise OSError(f"the encoder process stopped: {self._outcome()}") from None

    def end_input(self) -> None:
        """No more frames: the child commits its files now. A batch ends every job's input before
        it waits for any (commit), so that the children write their last files (PNG stills take
        the longest) side by side rather than one after another."""
        try:
            self.process.stdin.close()
        except OSError:
            pass

    def complete(self) -> list[PartialFile]:
        """Wait for the child's files, complete under its temporary names; returns them."""
        outcome = self._outcome()
        if outcome.startswith("MemoryError"):  # the child's memory ran out: the job's one message
            raise MemoryError(f"encoder process of {self.path.name}: {outcome}")
        if outcome != "ok":
            raise OSError(f"encoder process: {outcome}")
        return [PartialFile(spec.path, pid=self.process.pid) for spec in self.specs]

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.stderr):
            try:
                stream.close()
            except OSError:
                pass
        for spec in self.specs:  # what the child had written so far, under its temporary names
            temporary_of(spec.path, self.process.pid).unlink(missing_ok=True)

    def _outcome(self) -> str:
        """Close the child's input and wait for its verdict."""
        self.end_input()
        out = self.process.stdout.read()
        self.process.wait()
        lines = out.decode("utf-8", "replace").strip().splitlines()
        for line in lines:
            if line.startswith("report "):
                self.report = json.loads(line.removeprefix("report "))
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


def _encode(stdin, specs: list[Spec], writers: list[Writer]) -> None:
    """Read frames until the end of input and give each to every writer; then complete them all
    (under their temporary names: the parent renames them)."""
    gif = next((spec for spec in specs if isinstance(spec, GifSpec)), None)
    canvas = next((spec for spec in specs if spec.reads != "preview"), None)  # MP4 or PNG
    number = 0
    while (flags := _read_exactly(stdin, 1)) is not None:
        preview = palette = rgb = None
        if flags[0] & GIF_FLAG:
            index = _read_block(stdin, gif.width * gif.height)
            preview = np.frombuffer(index, dtype=np.uint8).reshape(gif.height, gif.width)
            palette = np.frombuffer(_read_block(stdin, 768), dtype=np.uint8).reshape(256, 3)
        if flags[0] & RGB_FLAG:
            pixels = _read_block(stdin, canvas.width * canvas.height * 3)
            rgb = np.frombuffer(pixels, dtype=np.uint8).reshape(canvas.height, canvas.width, 3)
        frame = Frame(number, preview, palette, rgb, replay=bool(flags[0] & REPLAY_FLAG))
        for writer in writers:
            writer.write(frame)
        number += 1
    for writer in writers:
        writer.complete()


def _read_block(stream, size: int) -> bytes:
    """size bytes that must follow (a frame's flags promised them)."""
    data = _read_exactly(stream, size)
    if data is None:
        raise OSError(f"truncated input: a frame ended {size} bytes early")
    return data


def main() -> int:
    die_with_parent()
    stdin = sys.stdin.buffer
    writers: list[Writer] = []
    try:
        header = _read_exactly(stdin, 8)
        if header is None:
            raise OSError("no header on standard input (physarum starts this process and sends it one)")
        (length,) = struct.unpack("<Q", header)
        specs = pickle.loads(_read_block(stdin, length))
        for spec in specs:
            writers.append(open_writer(spec))
        _encode(stdin, specs, writers)
        for writer in writers:
            if getattr(writer, "report", None):  # a budgeted GIF's choice, for the sidecar
                print(f"report {json.dumps(writer.report)}", flush=True)
    except BaseException as error:
        for writer in writers:
            writer.abort()
        print(f"error: {type(error).__name__}: {error}", flush=True)
        return 1
    print("ok", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
