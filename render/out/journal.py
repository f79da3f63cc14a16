"""One render's frame journal: every frame handed to its writers, kept beside its checkpoints so
that `render --resume` finishes the files as if the render had never stopped
(docs/checkpoints.md, "The frame journal").

A render with checkpoints appends each frame it hands to its writers,
up to the frames its last checkpoint covers, to `<stem>-journal-<token>.bin` in its output
folder: only the arrays its writers read (the GIF's index frame and palette, the RGB frame),
deflated at a fixed level. Before each checkpoint is written the journal is flushed, and the
checkpoint records the prefix it covers (render/sim/checkpoint.py JournalMark: frames, bytes,
sha256). `--resume` reads that prefix back (open_journal: every size, count, shape and hash
checked as untrusted input, no record inflated past its frame's size) and re-feeds its frames
to fresh writers in order before simulating on.

The file: a header (HEADER: magic, the kinds of arrays, the preview's and the canvas's sides),
then one record a frame (RECORD: tag, frame number, stored length, then the deflated bytes of
the preview, the palette and the RGB frame it holds, in that order). The token is a hash of the
preset's embedded text and the header, so that a render of other frames never writes into the
journal an earlier render's checkpoints record; a render of the same frames writes the same
bytes (it writes in place, never truncating what an earlier render's checkpoints cover).
"""

from __future__ import annotations

import hashlib
import os
import queue
import stat
import struct
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.errors import RenderError
from ..base.inputs import file_problem, shorten
from ..formats.contract import Frame
from ..formats.registry import FORMATS
from ..look.colour import preview_size
from ..preset import Preset
from ..preset.provenance import embedded_text
from ..sim.checkpoint import JournalMark
from ..sim.checkpoint_plan import deflate_bound
from ..sim.course import frames_before

MAGIC = b"physarum-journal"
HEADER = struct.Struct("<16sB3xIIII")  # magic, kinds, preview width and height, canvas width and height
RECORD = struct.Struct("<4sIQ")  # tag, frame number, stored bytes
TAG = b"FRAM"
PREVIEW, RGB = 1, 2  # kinds: the GIF's index frame and palette; the RGB frame
LEVEL = 1  # deflate's level, fixed: the same frames give the same journal bytes
CHUNK = 1 << 20


class JournalError(RenderError):
    """A frame journal that cannot be re-fed: one message naming the file and the problem."""


class JournalLacks(JournalError):
    """No journal to re-feed, though nothing is wrong with one: it is not beside the checkpoint
    (copied alone), or it lacks the arrays the render's writers read (its render wrote other
    formats). The resumed render's files then hold only the frames after the checkpoint."""


@dataclass(frozen=True)
class Layout:
    """What each record of a journal holds: `kinds` (PREVIEW, RGB), of a preview of `preview`
    (width, height) and a canvas of `canvas` (width, height)."""

    kinds: int
    preview: tuple[int, int]
    canvas: tuple[int, int]

    def header(self) -> bytes:
        return HEADER.pack(MAGIC, self.kinds, *self.preview, *self.canvas)

    def parts(self) -> list[tuple[str, tuple[int, ...]]]:
        """(array, shape) of a record's arrays, in their order."""
        (pw, ph), (w, h) = self.preview, self.canvas
        parts = [("preview", (ph, pw)), ("palette", (256, 3))] if self.kinds & PREVIEW else []
        return parts + ([("rgb", (h, w, 3))] if self.kinds & RGB else [])

    @property
    def raw_bytes(self) -> int:
        return sum(int(np.prod(shape)) for _, shape in self.parts())

    @property
    def record_bound(self) -> int:
        """The most bytes one record takes, whatever its frame."""
        return RECORD.size + deflate_bound(self.raw_bytes)

    def bound(self, frames: int) -> int:
        """The most bytes a journal of `frames` frames takes."""
        return HEADER.size + frames * self.record_bound


def kinds_of(reads: set[str]) -> int:
    """The kinds a journal keeps for writers that read `reads` (the specs' reads): a PNG still's
    last frame is never journaled (it comes after every checkpoint)."""
    return (PREVIEW if "preview" in reads else 0) | (RGB if "rgb" in reads else 0)


def render_reads(preset: Preset, frames_dir: bool) -> set[str]:
    """What the writers of a render of `preset` read (with --frames-dir: its frames too)."""
    return {FORMATS[name].spec.reads for name in preset.output.formats} | ({"rgb"} if frames_dir else set())


def layout_of(preset: Preset, reads: set[str]) -> Layout:
    canvas = preset.frame_size  # the frames' size: a 3D preset's camera image
    return Layout(kinds_of(reads), preview_size(*canvas, preset.output.gif_scale), canvas)


def journaled(preset: Preset, reads: set[str]) -> bool:
    """Whether a render with checkpoints keeps a journal: one of its writers reads frames before
    the last. A loop's journal holds the frames it shows, in their order (not a ping-pong loop's
    replay, which is made again from them)."""
    return kinds_of(reads) != 0


def journal_frames(preset: Preset, last_step: int) -> int:
    """The frames a journal keeps: those its last checkpoint (at `last_step`) covers."""
    return frames_before(preset.run, last_step)


def journal_path(folder: Path, stem: str, preset: Preset, layout: Layout) -> Path:
    token = hashlib.sha256(embedded_text(preset).encode() + layout.header()).hexdigest()[:16]
    return Path(folder) / f"{stem}-journal-{token}.bin"


# ---------------------------------------------------------------------------------------------
# Writing


class JournalWriter:
    """Appends the frames a render hands to its writers (numbers 0 .. limit - 1) to its journal
    at `path`, written in place from the start (never truncated), or continued after the
    verified prefix of `source` when that is this same file. Frames are deflated and written in
    a thread of their own behind a queue of `queue_frames` (the frame path's bound: its host
    ring's buffers are reused no sooner, out/frames.py); mark() waits for them, flushes the file
    and returns the prefix a checkpoint records. A failure (a full disk) is a RenderError naming
    the file at the next write or mark. A sink of the frame path (render/out/sinks.py)."""

    replays = False  # a ping-pong loop's replay is made again from the frames it holds

    def __init__(
        self,
        path: Path,
        layout: Layout,
        limit: int,
        source: JournalSource | None = None,
        queue_frames: int = 4,
    ):
        self.path, self.layout, self.limit = Path(path), layout, limit
        self.reads = frozenset(
            name for kind, name in ((PREVIEW, "preview"), (RGB, "rgb")) if layout.kinds & kind
        )
        self.file = os.fdopen(_open_fd(self.path, os.O_RDWR | os.O_CREAT, "written"), "r+b")
        if source is not None and source.path.exists() and os.path.samefile(source.path, self.path):
            self.frames, self.size, self.hasher = source.mark.frames, source.mark.size, source.hasher.copy()
            self.file.seek(self.size)
        else:
            self.frames, self.size, self.hasher = 0, 0, hashlib.sha256()
            self._write(layout.header())
        self.taken, self.error = self.frames, None  # frames queued; a failure of the thread
        self.queue: queue.Queue = queue.Queue(maxsize=queue_frames)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def write(self, frame: Frame) -> None:
        """Journal `frame` (the next one; frames the journal holds already are passed by)."""
        self._raise_error()
        if frame.number < self.taken or self.taken >= self.limit:
            return
        if frame.number != self.taken:
            raise RuntimeError(f"journal: frame {frame.number} handed over after frame {self.taken - 1}")
        self.taken += 1
        self.queue.put(frame)

    def mark(self) -> JournalMark:
        """Every frame appended written and flushed; the prefix it is (for the next checkpoint)."""
        self.queue.join()
        self._raise_error()
        try:
            self.file.flush()
        except OSError as error:
            raise RenderError(f"{self.path}: the frame journal cannot be written: {error}") from error
        return JournalMark(self.path.name, self.frames, self.size, self.hasher.hexdigest())

    def close(self, error: BaseException | None = None) -> None:
        """Stop the thread (frames still queued are written) and close the file; after an error
        too: the journal is whole up to its last mark, which is what checkpoints record."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        if not self.file.closed:
            try:
                self.file.close()
            except OSError:
                pass  # the journal is whole up to its last mark; a checkpoint records no more

    def _run(self) -> None:
        while (frame := self.queue.get()) is not None:
            try:
                if self.error is None:
                    self._record(frame)
            except BaseException as error:  # reported to the main thread at the next write or mark
                self.error = error
            finally:
                self.queue.task_done()
        self.queue.task_done()

    def _record(self, frame: Frame) -> None:
        arrays = {"preview": frame.preview, "palette": frame.palette, "rgb": frame.rgb}
        deflater = zlib.compressobj(LEVEL)
        parts = [
            deflater.compress(np.ascontiguousarray(arrays[name], np.uint8)) for name, _ in self.layout.parts()
        ]
        data = b"".join([*parts, deflater.flush()])
        self._write(RECORD.pack(TAG, frame.number, len(data)) + data)
        self.frames += 1

    def _write(self, data: bytes) -> None:
        self.file.write(data)
        self.hasher.update(data)
        self.size += len(data)

    def _raise_error(self) -> None:
        if self.error is not None:
            raise RenderError(
                f"{self.path}: the frame journal cannot be written: {self.error}"
            ) from self.error


# ---------------------------------------------------------------------------------------------
# Reading a checkpoint's journal (untrusted)


@dataclass
class JournalSource:
    """A checkpoint's journal prefix, checked whole (open_journal); frames() re-reads it."""

    path: Path
    mark: JournalMark
    layout: Layout
    hasher: object

    def frames(self, kinds: int) -> Iterator[Frame]:
        """The prefix's frames in order, with the arrays of `kinds` only."""
        wanted = {name for name, _ in Layout(kinds, self.layout.preview, self.layout.canvas).parts()}
        with _open(self.path) as file:
            file.seek(HEADER.size)
            for number, arrays in _records(file, self.path, self.layout, self.mark):
                yield Frame(number, **{k: v for k, v in arrays.items() if k in wanted})


def open_journal(folder: Path, mark: JournalMark, expected: Layout, kinds: int, first: int) -> JournalSource:
    """The journal prefix a checkpoint in `folder` records, checked before a frame of it is fed:
    `mark.frames` must be `first` (the frames before the checkpoint) or one less (a checkpoint
    at a frame's step), its size within the bound of that many frames, its header `expected`'s
    (holding at least `kinds`), its sha256 the mark's, every record whole and in order.
    JournalError otherwise; JournalLacks when it is not beside the checkpoint or lacks `kinds`."""
    path = Path(folder) / mark.name
    problem = (
        "is a link (a journal is read only as the file beside its checkpoint)" if path.is_symlink() else None
    )
    problem = problem or file_problem(path)
    if problem == "no such file":
        raise JournalLacks(f"its frame journal {shorten(mark.name)} is not beside it")
    if problem:
        raise JournalError(f"{path}: {problem}")
    if mark.frames not in (first, first - 1) or mark.size > expected.bound(mark.frames):
        raise JournalError(
            f"{path}: the checkpoint records {mark.frames} frames in {mark.size} bytes; a render "
            f"checkpointed there journals {first} frames in at most {expected.bound(first)} bytes"
        )
    with _open(path) as file:
        if os.fstat(file.fileno()).st_size < mark.size:
            raise JournalError(
                f"{path}: shorter than the {mark.size} bytes the checkpoint records; truncated?"
            )
        hasher = _prefix_hash(file, mark.size)
        if hasher.hexdigest() != mark.sha256:
            raise JournalError(
                f"{path}: its first {mark.size} bytes are not those the checkpoint records (sha256 "
                "differs): the journal was changed, or is another render's"
            )
        file.seek(0)
        layout, _ = _read_header(file, path, expected, kinds)
        for _ in _records(file, path, layout, mark):
            pass
    return JournalSource(path, mark, layout, hasher)


def _prefix_hash(file, size: int):
    """sha256 of the file's first `size` bytes, read a chunk at a time."""
    hasher, left = hashlib.sha256(), size
    while left:
        chunk = file.read(min(CHUNK, left))
        if not chunk:
            break
        hasher.update(chunk)
        left -= len(chunk)
    return hasher


def _read_header(file, path: Path, expected: Layout, kinds: int) -> tuple[Layout, bytes]:
    data = file.read(HEADER.size)
    if len(data) < HEADER.size or data[: len(MAGIC)] != MAGIC:
        raise JournalError(f"{path}: not a physarum frame journal")
    _, found, *sides = HEADER.unpack(data)
    layout = Layout(found, tuple(sides[:2]), tuple(sides[2:]))
    if layout.preview != expected.preview or layout.canvas != expected.canvas or found & ~(PREVIEW | RGB):
        raise JournalError(
            f"{path}: a journal of {layout.canvas[0]}x{layout.canvas[1]} frames (preview "
            f"{layout.preview[0]}x{layout.preview[1]}); the preset gives {expected.canvas[0]}x"
            f"{expected.canvas[1]} (preview {expected.preview[0]}x{expected.preview[1]})"
        )
    if kinds & ~found:
        missing = "RGB" if kinds & ~found & RGB else "GIF"
        raise JournalLacks(
            f"the journal holds no {missing} frames (its render wrote no format that reads them)"
        )
    return layout, data


def _records(file, path: Path, layout: Layout, mark: JournalMark) -> Iterator[tuple[int, dict]]:
    """Each record of the prefix: its number and arrays, every length bounded before it is read
    and every record inflated to exactly its frame's size (no more is ever inflated)."""
    offset = HEADER.size
    for number in range(mark.frames):
        head = _exact(file, path, RECORD.size)
        tag, found, stored = RECORD.unpack(head)
        if tag != TAG or found != number or stored > layout.record_bound - RECORD.size:
            raise JournalError(f"{path}: record {number} is not a frame's (tag, number or size); tampered?")
        offset += RECORD.size + stored
        if offset > mark.size:
            raise JournalError(
                f"{path}: record {number} runs past the {mark.size} bytes the checkpoint records"
            )
        data = _exact(file, path, stored)
        yield number, _inflate(data, path, number, layout)
    if offset != mark.size:
        raise JournalError(
            f"{path}: {mark.frames} frames end at byte {offset}, not at {mark.size} as recorded"
        )


def _inflate(data: bytes, path: Path, number: int, layout: Layout) -> dict[str, np.ndarray]:
    inflater = zlib.decompressobj()
    try:
        raw = inflater.decompress(data, layout.raw_bytes + 1)
    except zlib.error as error:
        raise JournalError(f"{path}: frame {number} cannot be inflated ({shorten(str(error))})") from None
    if len(raw) != layout.raw_bytes or not inflater.eof or inflater.unconsumed_tail or inflater.unused_data:
        raise JournalError(f"{path}: frame {number} does not inflate to exactly {layout.raw_bytes} bytes")
    arrays, at = {}, 0
    for name, shape in layout.parts():
        size = int(np.prod(shape))
        arrays[name] = np.frombuffer(raw, np.uint8, size, at).reshape(shape)
        at += size
    return arrays


def _exact(file, path: Path, size: int) -> bytes:
    data = file.read(size)
    if len(data) != size:
        raise JournalError(f"{path}: ends inside a record; truncated?")
    return data


def _open(path: Path):
    return os.fdopen(_open_fd(path, os.O_RDONLY, "read"), "rb")


def _open_fd(path: Path, flags: int, what: str) -> int:
    """A descriptor of the regular file at `path`, never through a link planted at its name
    (O_NOFOLLOW: a checkpoint's folder may come from a stranger); JournalError otherwise."""
    try:
        fd = os.open(
            path, flags | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0), 0o644
        )
    except OSError as error:
        why = "is a link" if path.is_symlink() else shorten(str(error.strerror or error))
        raise JournalError(f"{path}: the frame journal cannot be {what} ({why})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise JournalError(f"{path}: the frame journal cannot be {what} (not a regular file)")
    return fd
