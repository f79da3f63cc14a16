"""PNG: a still of the last frame simulated, the preset in an iTXt chunk, optionally its print
resolution (output.png_dpi); RGBA with output.alpha (render/formats/alpha.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, ClassVar

from ..base import lazy
from ..base.files import PartialFile, commit_together
from .alpha import join, reads
from .contract import Format, Frame, Shared, no_notes

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")
Image = lazy.module("PIL.Image")
PngImagePlugin = lazy.module("PIL.PngImagePlugin")

PNG_MAX_SIDE = (1 << 31) - 1  # PNG's own limit; the canvas's bound is far below it
EMBED_KEY = "physarum"  # the text chunk's keyword (also the raw fields' 16-bit PNGs')


@dataclass(frozen=True)
class PngSpec:
    """A PNG still of the last frame, the preset text in a text chunk; dpi: its print
    resolution (None: no pHYs chunk); alpha: output.alpha's mode (None: an RGB still)."""

    path: Path
    width: int
    height: int
    comment: str
    dpi: int | None = None
    alpha: str | None = None
    reads: str = "last_rgb"

    format: ClassVar[str] = "png"

    def open(self) -> PngWriter:
        return PngWriter(self)


class PngWriter(PartialFile):
    """A PNG still of the last frame written with an RGB, with the preset in a text chunk, and
    with dpi its print resolution (a pHYs chunk, so print software sizes it: pixels / dpi
    inches). Frames without an RGB pass by, and so do a ping-pong loop's replayed frames: the
    still is the last frame simulated."""

    def __init__(self, spec: PngSpec):
        super().__init__(spec.path)
        self.comment = spec.comment
        self.dpi, self.alpha = spec.dpi, spec.alpha
        self.last: np.ndarray | None = None

    def write(self, frame: Frame) -> None:
        if frame.rgb is None or frame.replay or (self.alpha is not None and frame.alpha is None):
            return
        if self.alpha is not None:
            self.last = join(frame.rgb, frame.alpha, self.alpha)  # a new array: the caller reuses its
            return
        if self.last is None or self.last.shape != frame.rgb.shape:
            self.last = np.empty_like(frame.rgb)
        np.copyto(self.last, frame.rgb)  # the caller reuses its buffer

    def complete(self) -> list[PartialFile]:
        with self.open("wb") as file:
            save_png(file, self.last, self.comment, dpi=self.dpi)
        return [self]

    def commit(self) -> None:
        commit_together(self.complete())


def save_png(
    file: BinaryIO, rgb: np.ndarray, comment: str, compress_level: int = 6, dpi: int | None = None
) -> None:
    """rgb [H, W, 3] uint8 (or RGBA [H, W, 4]) as a PNG into an open file, the preset text in an
    iTXt chunk."""
    info = PngImagePlugin.PngInfo()
    info.add_itxt(EMBED_KEY, comment)
    extra = {} if dpi is None else {"dpi": (dpi, dpi)}
    Image.fromarray(rgb, mode="RGBA" if rgb.shape[-1] == 4 else "RGB").save(
        file, format="PNG", pnginfo=info, compress_level=compress_level, **extra
    )


def make_spec(preset, path: Path, shared: Shared) -> PngSpec:
    """The PNG still of a validated preset: the whole canvas, output.png_dpi, output.alpha."""
    width, height = preset.frame_size  # the canvas, or a 3D preset's camera image
    alpha = preset.output.alpha
    return PngSpec(path, width, height, shared.text, preset.output.png_dpi, alpha, reads(alpha, "last_rgb"))


def read_text(path: Path) -> str:
    """The preset a PNG carries: its physarum text chunk (read before the pixels, none decoded)."""
    with Image.open(path) as image:
        return str(image.info[EMBED_KEY])


FORMAT = Format(
    name="png",
    position=3,
    default=True,
    summary="a still of the last frame, with its print resolution if output.png_dpi is set",
    max_side=PNG_MAX_SIDE,
    max_frames=1,
    spec=PngSpec,
    make_spec=make_spec,
    check=no_notes,
    read_text=read_text,
)
