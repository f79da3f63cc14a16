"""What a format is: the Frame every writer is given, the Writer protocol it is written through,
the Spec it is opened from, and the Format record each format module declares (its name, limits,
spec and writer) for render/formats/registry.py to find.

This module imports neither torch nor a writer, so that the encoder child
(render/out/encoder_process.py), which unpickles the specs, starts without loading torch.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar, Protocol

from ..base import lazy
from ..base.errors import RenderError
from .alpha import reads

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")


@dataclass(frozen=True)
class Frame:
    """One frame for the writers, on the host.

    preview: the GIF's (scaled) index frame [h, w] uint8, with palette its [256, 3] uint8 palette;
    rgb: the RGB frame [H, W, 3] uint8; alpha: with output.alpha, the frame's alpha plane [H, W]
    uint8, the trail's light (render/look/alpha.py), which the writers of "rgba" join to the RGB
    (render/formats/alpha.py). What no output of the render reads is None (a PNG still alone gets
    only the last frame's RGB). The arrays are buffers the frame path reuses a few
    frames later: a writer copies what it keeps beyond write(). replay: a frame shown again,
    backwards, by a ping-pong loop (render/look/loops.py); the PNG still passes it by.
    """

    number: int
    preview: np.ndarray | None = None
    palette: np.ndarray | None = None
    rgb: np.ndarray | None = None
    replay: bool = False
    alpha: np.ndarray | None = None
    still: tuple | None = None  # output.still: the last frame's (16-bit colour, linear light or None)


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


class Spec(Protocol):
    """How to open one output: a frozen, picklable record (the encoder child unpickles it).
    `format` names it; `reads` says which arrays of a Frame its writer needs: "preview" (and
    palette), "rgb" on every frame, or "last_rgb": the RGB of the last frame at least, "rgba" and
    "last_rgba" the same with the alpha plane (output.alpha), "last_still" the last frame's print
    still (output.still, render/formats/still.py); open()
    opens its writer, the file under a temporary name."""

    path: Path
    format: str
    reads: str

    def open(self) -> Writer: ...


@dataclass(frozen=True)
class Shared:
    """What every output of one render shares, worked out once by the out stage
    (render/out/specs.py) from the preset and its look: text, the embedded preset (and images);
    palette, the first frame's [256, 3] uint8 palette; gif_size, the GIF's (scaled) size;
    digits, (base, count) of the GIF's indices; jobs, the renders writing at once (a batch's);
    frames, the frames each output is handed (a platform target's trim and loop, targets.py)."""

    text: str
    palette: np.ndarray
    gif_size: tuple[int, int]
    digits: tuple[int, int]
    jobs: int = 1
    frames: int = 0  # the frames the video outputs are handed (a ping-pong loop's replays counted)


@dataclass(frozen=True)
class AnimationSpec:
    """A looping animation of RGB frames, or RGBA ones with alpha (output.alpha's mode), `loop`
    repeats (0: forever), the preset text as `comment`: the spec the APNG and the WebP are
    (render/formats/apng.py, webp.py), each a frozen subclass that names its `format` and opens
    its writer; the fields are the same for both."""

    path: Path
    width: int
    height: int
    fps: int
    loop: int
    comment: str
    alpha: str | None = None
    reads: str = "rgb"

    format: ClassVar[str]

    @classmethod
    def of(cls, preset, path: Path, shared: Shared):
        """The spec of a validated preset's output: its whole picture (a 3D preset's camera
        image), output.fps, output.loop, output.alpha."""
        (width, height), out = preset.frame_size, preset.output
        return cls(path, width, height, out.fps, out.loop, shared.text, out.alpha, reads(out.alpha))


@dataclass(frozen=True)
class Format:
    """An output format, as its module declares it (FORMAT = Format(...)).

    name: as output.formats lists it, and its files' suffix; position: its place in every list
    of formats (the schema, messages, docs); default: in output.formats when a preset names none;
    summary: one line for the docs and help; max_side: the most pixels a side of its picture may
    have; max_frames: the most frames it may hold (None: no limit of its own); spec: the
    spec class; make_spec(preset, path, shared) -> spec: the spec of a validated preset's output;
    check(preset) -> notes: refuses (RenderError) what the format cannot hold, before a render,
    and notes what it adjusts; read_text(path) -> the text an output of it carries."""

    name: str
    position: int
    default: bool
    summary: str
    max_side: int
    max_frames: int | None
    spec: type
    make_spec: Callable[[object, Path, Shared], object]
    check: Callable[[object], list[str]]
    read_text: Callable[[Path], str]


def refuse_side_over(preset, max_side: int, name: str, label: str, here: bool = True) -> None:
    """A format's check of its largest side: RenderError naming the format (`label`), its limit
    (`here`: a limit of this writer's settings, not of the format itself), the picture's size and
    the way out (remove `name` from output.formats), where a side of the picture is over
    `max_side`."""
    width, height = preset.frame_size
    if max(width, height) > max_side:
        raise RenderError(
            f"{preset.name}: {label} allows at most {max_side} pixels per side{' here' if here else ''}, "
            f"the canvas is {width}x{height}; remove {name} from output.formats"
        )


def no_notes(preset) -> list[str]:
    """The check of a format whose limits the preset's own bounds already keep."""
    return []
