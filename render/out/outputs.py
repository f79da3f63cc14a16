"""What an output is: the typed spec it is opened from, the Writer it is written through, and the
Frames that Writer is given.

The frame path (render/out/frames.py) hands every Frame to every Writer; each Writer takes from it
what its format needs. This module imports neither torch nor a writer, so that the encoder child
(render/out/encoder_process.py), which unpickles the specs, starts without loading torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

import numpy as np


@dataclass(frozen=True)
class Frame:
    """One frame for the writers, on the host.

    preview: the GIF's (scaled) index frame [h, w] uint8, with palette its [256, 3] uint8 palette;
    rgb: the RGB frame [H, W, 3] uint8. What no output of the render reads is None (a PNG still
    alone gets only the last frame's RGB). The arrays are buffers the frame path reuses a few
    frames later: a writer copies what it keeps beyond write(). replay: a frame shown again,
    backwards, by a ping-pong loop (render/look/loops.py); the PNG still passes it by.
    """

    number: int
    preview: np.ndarray | None = None
    palette: np.ndarray | None = None
    rgb: np.ndarray | None = None
    replay: bool = False


class Writer(Protocol):
    """An output being written: write() every frame in order, then commit() (the file appears
    under its name) or abort() (nothing is left). path names the output in messages.
    complete() is commit's first half: the files complete under their temporary names, returned
    (files.PartialFile) for the runner to rename with the render's others at once.

    A writer whose work goes on elsewhere (encoder_process.EncoderProcess) also has end_input():
    no more frames follow, finish the files now; commit() then waits for them."""

    path: Path

    def write(self, frame: Frame) -> None: ...

    def complete(self) -> list: ...

    def commit(self) -> None: ...

    def abort(self) -> None: ...


# Each spec's `reads` says which arrays of a Frame its writer needs: "preview" (and palette),
# "rgb" on every frame, or "last_rgb": the RGB of the last frame at least.


@dataclass(frozen=True)
class GifSpec:
    """A GIF89a of index frames, its global colour table `palette` (768 bytes: the first
    frame's palette), `loop` repeats (0: forever) and the preset text as its comment.

    max_bytes: its byte budget (None: none; render/formats/gif_budget.py chooses how to fit it), with
    `frames` the frame count and `digits` (base, count) how its indices are made (render/formats/gif_file.py);
    processes: the worker processes that compress its frames (1: in the writer's process)."""

    path: Path
    width: int
    height: int
    fps: int
    loop: int
    comment: str
    palette: bytes
    max_bytes: int | None = None
    frames: int = 0
    digits: tuple[int, int] = (256, 1)
    processes: int = 1

    format: ClassVar[str] = "gif"
    reads: ClassVar[str] = "preview"


@dataclass(frozen=True)
class Mp4Spec:
    """An H.264 MP4 of RGB frames (odd sides padded) with the preset text in its metadata;
    setting: which encoding (encode.MP4_SETTINGS: "browser", "browser-sharp" or "master")."""

    path: Path
    width: int
    height: int
    fps: int
    comment: str
    setting: str = "browser"

    format: ClassVar[str] = "mp4"
    reads: ClassVar[str] = "rgb"


@dataclass(frozen=True)
class WebpSpec:
    """A lossless animated WebP of RGB frames (the exact colours), `loop` repeats (0: forever),
    the preset text in its XMP chunk."""

    path: Path
    width: int
    height: int
    fps: int
    loop: int
    comment: str

    format: ClassVar[str] = "webp"
    reads: ClassVar[str] = "rgb"


@dataclass(frozen=True)
class PngSpec:
    """A PNG still of the last frame, the preset text in a text chunk; dpi: its print
    resolution (None: no pHYs chunk)."""

    path: Path
    width: int
    height: int
    comment: str
    dpi: int | None = None

    format: ClassVar[str] = "png"
    reads: ClassVar[str] = "last_rgb"


@dataclass(frozen=True)
class FramesDirSpec:
    """Every frame as a numbered PNG in `folder`: <stem>-00001.png, ..."""

    folder: Path
    stem: str
    comment: str

    format: ClassVar[str] = "frames"
    reads: ClassVar[str] = "rgb"

    @property
    def path(self) -> Path:
        return Path(self.folder) / f"{self.stem}-%05d.png"


Spec = GifSpec | Mp4Spec | WebpSpec | PngSpec | FramesDirSpec
