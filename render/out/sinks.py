"""Where a render's frames go: the Sink protocol, and the sinks a caller adds.

Every coloured frame leaves the pipeline (render/out/frames.py) the same way: handed, on the
host and in order, to each sink of its job. The house's own sinks are the encoder workers (one
per output, the frames folder among them: out/frames.py EncoderWorker), the frame journal
(out/journal.py JournalWriter), and a ping-pong loop's replay store (look/loops.py PingPong); a
caller adds its own through `RenderOptions.sinks` (run/runner.py): the streaming API
(run/stream.py) and the live studio take frames this way, and a remote worker may.

A sink's `reads` tells the pipeline what to make of each frame ("preview": the GIF's index frame
and palette; "rgb": the RGB frame; "last_rgb": the RGB of the last frame at least), so a sink
that reads nothing more than the files do costs nothing and changes no byte of them. "rgba" and
"last_rgba" add the frame's alpha plane (output.alpha) to the RGB.
"""

from __future__ import annotations

import queue
import threading
from typing import Protocol

from ..formats.contract import Frame

STREAM_FRAMES = 4  # frames a FrameQueue holds for its reader: enough to overlap, memory flat


class Sink(Protocol):
    """Where a job's frames go.

    reads: the arrays of a Frame it needs (see the module's docstring); replays: whether it is
    also given a ping-pong loop's frames shown again backwards (Frame.replay), after the others.
    write(frame): every frame of the job, in order, on the host, from the render's thread; the
    arrays are buffers the pipeline reuses a few frames later, so a sink copies what it keeps.
    An exception from write() stops the render (no file of it is committed) and reaches the
    render's caller; StopRender stops it as a request, not a failure. close(error): no frame
    follows; error is why the render ended early (None: every frame was written and the files
    committed). Called once, whether the render ended or not. A sink that reads no frame's content
    (progress) may say so with a class attribute `reads_frames = False`: a platform target's trim
    may then end the render early (formats/targets.py trimmed_run); without it, a sink is taken to
    read every frame.
    """

    reads: frozenset[str]
    replays: bool

    def write(self, frame: Frame) -> None: ...

    def close(self, error: BaseException | None = None) -> None: ...


class StopRender(Exception):
    """Raised by a sink whose reader is gone (a loop broken, a page closed): the render stops at
    once, its temporary files removed and earlier files left as they were, like Ctrl-C."""


class FrameQueue:
    """A sink that hands frames to a reader on another thread behind a bounded queue (the
    streaming API, the live studio): write() copies the frame's arrays and waits while the
    queue is full, so the render runs no further ahead of its reader than `size` frames and
    memory stays flat for any run length. stop() (the reader is gone) makes the next write()
    raise StopRender. The reader's get() gives frames, then None once the render has ended (its
    error, if any, re-raised)."""

    def __init__(self, reads: str = "rgb", size: int = STREAM_FRAMES, replays: bool = True):
        self.reads, self.replays = frozenset({reads}), replays
        self.queue: queue.Queue = queue.Queue(maxsize=size)
        self.stopped = threading.Event()
        self.error: BaseException | None = None
        self.closed = False

    def write(self, frame: Frame) -> None:
        kept = Frame(
            frame.number,
            None if frame.preview is None else frame.preview.copy(),
            None if frame.palette is None else frame.palette.copy(),
            None if frame.rgb is None else frame.rgb.copy(),
            frame.replay,
            None if frame.alpha is None else frame.alpha.copy(),
        )
        self._put(kept)

    def close(self, error: BaseException | None = None) -> None:
        """The end of the frames (the first call's error is the one the reader gets)."""
        if self.closed:
            return
        self.closed, self.error = True, error
        self._put(None, closing=True)

    def stop(self) -> None:
        """The reader is gone: the render's next write stops it; frames queued are dropped."""
        self.stopped.set()
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                return

    def get(self, timeout: float | None = None) -> Frame | None:
        """The next frame, or None when the render has ended (its error raised, if it failed).
        queue.Empty after `timeout` seconds without one."""
        frame = self.queue.get(timeout=timeout)
        if frame is None:
            self.queue.put(None)  # every later get() sees the end too
            if self.error is not None and not isinstance(self.error, StopRender):
                raise self.error
        return frame

    def _put(self, item: Frame | None, closing: bool = False) -> None:
        while not self.stopped.is_set():
            try:
                self.queue.put(item, timeout=0.05)
                return
            except queue.Full:
                continue
        if not closing:
            raise StopRender("the frames' reader stopped reading")
