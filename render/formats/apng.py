"""APNG: an animated PNG (FFmpeg's apng encoder and muxer through PyAV: frames are compressed as
they come, memory flat, where Pillow's APNG writer holds every frame until the end), lossless,
RGBA with output.alpha (PNG's alpha is straight; a premultiplied file says so in its preset),
RGB otherwise; `loop` repeats; the preset in an iTXt chunk after the header, where a PNG reader
finds it (render/formats/png.py read_text).

The muxer writes a scratch file; complete() copies it into the output with the preset's chunk
inserted after IHDR (the muxer seeks back to count the frames at its end, so the chunk cannot
be written in its stream)."""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from ..base.files import PartialFile, commit_together
from .av_video import AvVideoWriter, VideoSetting
from .contract import AnimationSpec, Format, Frame, Shared, refuse_side_over
from .png import EMBED_KEY
from .png import read_text as png_text

APNG_MAX_SIDE = 16384  # browsers' limit on an image's side (PNG's own is 2^31 - 1)
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
IHDR_END = len(PNG_SIGNATURE) + 8 + 13 + 4  # signature, IHDR's length and type, its 13 bytes, CRC
COPY_BLOCK = 1 << 20
# FFmpeg's apng encoder at its defaults (zlib level: FFmpeg's default; prediction: paeth), one thread
APNG_SETTINGS = {
    "opaque": VideoSetting("apng", "rgb24", (("pred", "paeth"),), 1, even=False),
    "alpha": VideoSetting("apng", "rgba", (("pred", "paeth"),), 1, even=False),
}


def itxt_chunk(keyword: str, text: str) -> bytes:
    """A PNG iTXt chunk: uncompressed UTF-8 text under `keyword`, no language, its CRC."""
    data = keyword.encode("latin-1") + b"\x00\x00\x00\x00\x00" + text.encode("utf-8")
    body = b"iTXt" + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))


@dataclass(frozen=True)
class ApngSpec(AnimationSpec):
    """A lossless APNG of RGB frames, or RGBA ones with alpha (output.alpha's mode), `loop`
    repeats (0: forever)."""

    format: ClassVar[str] = "apng"

    def open(self) -> ApngWriter:
        return ApngWriter(self)


class ApngWriter(PartialFile):
    """The APNG: PyAV's apng muxer into a scratch file beside it, then the output (the preset's
    chunk inserted after IHDR)."""

    def __init__(self, spec: ApngSpec):
        super().__init__(spec.path)
        self.comment = spec.comment
        self.scratch = Path(spec.path).with_name(Path(spec.path).name + ".stream")
        setting = APNG_SETTINGS["opaque" if spec.alpha is None else "alpha"]
        self.stream = AvVideoWriter(
            self.scratch,
            "apng",
            setting,
            (spec.width, spec.height),
            spec.fps,
            spec.comment,
            spec.alpha,
            container_options={"plays": str(spec.loop)},
        )

    def write(self, frame: Frame) -> None:
        self.stream.write(frame)

    def complete(self) -> list[PartialFile]:
        self.stream.complete()
        try:
            with open(self.stream.temporary, "rb") as source, self.open("wb") as file:
                head = source.read(IHDR_END)
                if head[: len(PNG_SIGNATURE)] != PNG_SIGNATURE or head[12:16] != b"IHDR":
                    raise OSError(f"{self.path}: the APNG muxer wrote no PNG header")
                file.write(head + itxt_chunk(EMBED_KEY, self.comment))
                while block := source.read(COPY_BLOCK):
                    file.write(block)
        finally:
            self.stream.abort_file()
        return [self]

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        self.stream.abort()
        super().abort()


def make_spec(preset, path: Path, shared: Shared) -> ApngSpec:
    """The APNG of a validated preset: the whole canvas, output.fps, output.loop, output.alpha."""
    return ApngSpec.of(preset, path, shared)


def check(preset) -> list[str]:
    """Refuse a side over APNG_MAX_SIDE before the render."""
    refuse_side_over(preset, APNG_MAX_SIDE, "apng", "APNG")
    return []


FORMAT = Format(
    name="apng",
    position=6,
    default=False,
    summary="a lossless animated PNG, transparent with output.alpha",
    max_side=APNG_MAX_SIDE,
    max_frames=None,
    spec=ApngSpec,
    make_spec=make_spec,
    check=check,
    read_text=png_text,
)
