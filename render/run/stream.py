"""Frames streamed to Python: a render on a worker thread whose frames reach the caller as they
are coloured, through a bounded queue (out/sinks.py FrameQueue), with no file written.

The first frame arrives after the first frame's steps, not after the run; memory stays flat for
any run length (the render waits while its reader holds `STREAM_FRAMES` frames unread); a reader
that stops early (a loop broken, close(), the `with` block left) stops the render at its next
frame and joins its thread: no thread, file or lock is left. The frames are those the files of
the same preset hold, in the same order (a ping-pong loop's replayed frames included).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

from ..formats.contract import Frame
from ..out.sinks import STREAM_FRAMES, FrameQueue
from ..preset import Preset
from .runner import RenderOptions, render


def streamed(preset: Preset) -> Preset:
    """The preset as a stream renders it: its checkpoints, raw fields and volume exports are
    files, which a stream does not write, so they are left out (the frames are the same)."""
    output = preset.output.model_copy(update={"fields": None, "volume": None})
    return preset.model_copy(update={"checkpoint": None, "output": output})


class FrameStream:
    """A render of `preset` on a thread of its own, its frames read in order by iterating.

    reads: "rgb" (each Frame's rgb: [H, W, 3] uint8) or "preview" (the GIF's index frame and
    palette). Use it as a context manager, or call close(): either stops the render where the
    frames were not all read. Errors of the render (RenderError, a bad option) are raised to the
    reader, at the frame where the render stopped."""

    def __init__(
        self,
        preset: Preset,
        backend: str = "auto",
        device: str | None = None,
        reads: str = "rgb",
        size: int = STREAM_FRAMES,
    ):
        self.queue = FrameQueue(reads, size)
        options = RenderOptions(
            backend=backend, device=device, quiet=True, sinks=[self.queue], write_files=False
        )
        self.thread = threading.Thread(
            target=self._render, args=(streamed(preset), options), name="physarum-stream", daemon=True
        )
        self.thread.start()

    def _render(self, preset: Preset, options: RenderOptions) -> None:
        try:
            render(preset, options)
        except BaseException as error:  # the reader gets it at the frame where the render stopped
            self.queue.close(error)
        else:
            self.queue.close(None)

    def __iter__(self) -> Iterator[Frame]:
        try:
            while (frame := self.queue.get()) is not None:
                yield frame
        finally:
            self.close()

    def close(self) -> None:
        """Stop the render if it is still running and wait for its thread to end."""
        self.queue.stop()
        self.thread.join()

    def __enter__(self) -> FrameStream:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
