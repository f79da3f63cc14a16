"""The page's "render": the normal render of a recorded preset, on a thread in the background,
into the live output folder, its progress counted by a sink (out/sinks.py) that reads nothing of
the frames (so it costs nothing and changes no byte of the files) and needs none past a platform
target's trim (reads_frames False: a targeted MP4 alone simulates only the frames it keeps, as the
command's render does: out/specs.py render_trim)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

from ..formats.contract import Frame
from ..look.loops import shown_frames
from ..out.sinks import StopRender
from ..out.specs import render_trim
from ..preset.schema import Preset
from ..run.runner import RenderOptions, readers_beside, render

PROGRESS_EVERY = 0.25  # seconds between progress reports


class Progress:
    """A sink that counts the frames a render shows, of `frames` (a ping-pong loop's replays
    not counted: they follow the last), and stops it when asked (StopRender). It reads no array
    of a frame and needs no frame a render leaves unsimulated (reads_frames False)."""

    reads: frozenset[str] = frozenset()
    reads_frames = False
    replays = True  # given the replays too, so that a stop asked during them is heard

    def __init__(self, frames: int, report: Callable[[int, int], None]):
        self.frames, self.report, self.done = frames, report, 0
        self.stopping = threading.Event()
        self.said = 0.0

    def write(self, frame: Frame) -> None:
        if self.stopping.is_set():
            raise StopRender("the live server stopped")
        if frame.replay:
            return
        self.done += 1
        if time.monotonic() - self.said >= PROGRESS_EVERY:
            self.said = time.monotonic()
            self.report(self.done, self.frames)

    def close(self, error: BaseException | None = None) -> None:
        pass


class BackgroundRender:
    """One render of `preset` into `out_dir` on a thread: on_progress(done, frames) while it
    runs, then on_end(paths by format or {}, error message or None). stop() ends it at its next
    frame (its temporary files removed, like Ctrl-C) and waits for the thread."""

    def __init__(
        self,
        preset: Preset,
        out_dir: Path,
        backend: str,
        device: str | None,
        on_progress: Callable[[int, int], None],
        on_end: Callable[[dict[str, Path], str | None], None],
    ):
        self.preset, self.on_end = preset, on_end
        self.progress = Progress(preset.frames, on_progress)  # shown_made's, once the render starts
        self.options = RenderOptions(
            backend=backend, device=device, out_dir=out_dir, quiet=True, sinks=[self.progress]
        )
        self.thread = threading.Thread(target=self._run, name="physarum-live-render", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.progress.frames = shown_made(self.preset, self.options)
            result = render(self.preset, self.options)
        except BaseException as error:  # the page says it; a stop is no failure
            self.on_end({}, None if isinstance(error, StopRender) else str(error) or type(error).__name__)
        else:
            self.on_end(dict(result.outputs), None)

    @property
    def running(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self.progress.stopping.set()
        self.thread.join()


def shown_made(preset: Preset, options: RenderOptions) -> int:
    """The frames a render of `preset` with `options` shows before any ping-pong replay: the
    kept frames of a platform target's trim that stops it early (render_trim, asked as the
    runner asks it), else those of its loop (loops.shown_frames; closest's at most: the
    simulated frames). RenderError for a target the render refuses."""
    trim = render_trim(preset, readers_beside(options), options.sinks)
    if trim is not None and trim.frames is not None:
        return trim.kept
    return preset.frames if preset.loop[0] == "closest" else shown_frames(preset)
