"""WebP: a lossless animated WebP (the exact colours of every frame), the preset in an XMP chunk.

The writer feeds Pillow's libwebp animation encoder frame by frame; WebP's canvas is at most
WEBP_MAX_SIDE pixels a side, refused before a render starts."""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..base import lazy
from ..base.files import PartialFile, commit_together
from .alpha import join
from .contract import AnimationSpec, Format, Frame, Shared, refuse_side_over

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")
Image = lazy.module("PIL.Image")
_webp = lazy.module("PIL._webp")

WEBP_MAX_SIDE = 16383  # libwebp's limit on a side
WEBP_METHOD = 0  # libwebp's effort, fixed (0: fastest; the bytes depend on it, never the colours)
WEBP_KEYFRAMES = (9, 17)  # kmin, kmax: Pillow's defaults for lossless animations, fixed here
XMP_PRESET = re.compile(rb"<physarum:preset>(.*?)</physarum:preset>", re.DOTALL)


@dataclass(frozen=True)
class WebpSpec(AnimationSpec):
    """A lossless animated WebP of RGB frames (the exact colours), `loop` repeats (0: forever),
    the preset text in its XMP chunk; alpha: output.alpha's mode (RGBA frames; None: RGB)."""

    format: ClassVar[str] = "webp"

    def open(self) -> WebpWriter:
        return WebpWriter(self)


def preset_xmp(comment: str) -> bytes:
    """An XMP packet carrying the preset text (WebP keeps metadata in XMP)."""
    return (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        '<rdf:Description rdf:about="" xmlns:physarum="https://github.com/physarum/ns/1.0/">'
        f"<physarum:preset>{html.escape(comment, quote=False)}</physarum:preset>"
        "</rdf:Description></rdf:RDF></x:xmpmeta>"
    ).encode()


class WebpWriter(PartialFile):
    """A lossless animated WebP (Pillow's libwebp animation encoder, fed frame by frame): the
    exact RGB of every frame, `loop` repeats, each frame shown 1/fps s (WebP counts whole
    milliseconds: frame n starts at round(1000 n / fps)); the preset in an XMP chunk. libwebp keeps
    the compressed frames in memory until complete() writes the file. Reads a frame's RGB."""

    def __init__(self, spec: WebpSpec):
        super().__init__(spec.path)
        self.fps, self.comment, self.frames, self.alpha = spec.fps, spec.comment, 0, spec.alpha
        background = 0xFF000000 if spec.alpha is None else 0x00000000  # ARGB: opaque, or transparent
        self.encoder = _webp.WebPAnimEncoder(
            (spec.width, spec.height), background, spec.loop, False, *WEBP_KEYFRAMES, False, False
        )

    def _timestamp(self, number: int) -> int:
        return round(1000 * number / self.fps)

    def write(self, frame: Frame) -> None:
        if self.alpha is None:
            image = Image.fromarray(np.ascontiguousarray(frame.rgb), mode="RGB")
        else:
            image = Image.fromarray(join(frame.rgb, frame.alpha, self.alpha), mode="RGBA")
        self.encoder.add(image.getim(), self._timestamp(self.frames), True, 100, 100, WEBP_METHOD)
        self.frames += 1

    def complete(self) -> list[PartialFile]:
        self.encoder.add(None, self._timestamp(self.frames), True, 100, 100, WEBP_METHOD)
        data = self.encoder.assemble("", "", preset_xmp(self.comment))
        if data is None:
            raise OSError("libwebp could not assemble the animation")
        with self.open("wb") as file:
            file.write(data)
        return [self]

    def commit(self) -> None:
        commit_together(self.complete())


def make_spec(preset, path: Path, shared: Shared) -> WebpSpec:
    """The WebP of a validated preset: the whole canvas, output.fps, output.loop, output.alpha."""
    return WebpSpec.of(preset, path, shared)  # a 3D preset's size: its camera image


def check(preset) -> list[str]:
    """Refuse a canvas side over WEBP_MAX_SIDE before the render (libwebp would fail at its end)."""
    refuse_side_over(preset, WEBP_MAX_SIDE, "webp", "WebP", here=False)
    return []


def read_text(path: Path) -> str:
    """The preset a WebP carries: its XMP chunk's physarum:preset element."""
    with Image.open(path) as image:
        found = XMP_PRESET.search(image.info.get("xmp") or b"")
    if found is None:
        raise KeyError("no physarum preset in the WebP's XMP")
    return html.unescape(found.group(1).decode("utf-8"))


FORMAT = Format(
    name="webp",
    position=2,
    default=False,
    summary="a lossless animated WebP: every frame's exact colours, transparent with output.alpha",
    max_side=WEBP_MAX_SIDE,
    max_frames=None,
    spec=WebpSpec,
    make_spec=make_spec,
    check=check,
    read_text=read_text,
)
