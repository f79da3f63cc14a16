"""The writers of the output formats (render/outputs.py's Writer, each opened from its spec):
GIF from index frames with the exact palette, H.264 MP4, PNG still, numbered PNG frames.

Every writer writes to a hidden temporary file beside its target, created exclusively
(render/files.py), and renames it only when the file is complete, so a killed render never leaves
a truncated file under the final name: complete() finishes the file under its temporary name and
returns it, for the runner to rename with the render's other files at once (files.commit_together);
commit() does both, for a writer used alone. Every
output carries the resolved preset (GIF comment, PNG text chunk, MP4 metadata) so that
`physarum render --from FILE` renders it again.
"""

from __future__ import annotations

import json
import os
import struct
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

import av
import numpy as np
from PIL import GifImagePlugin, Image, PngImagePlugin

from physarum.render.files import PartialFile, commit_together
from physarum.render.outputs import Frame, FramesDirSpec, GifSpec, Mp4Spec, PngSpec, Spec, Writer

EMBED_KEY = "physarum"
MP4_THREADS = 4  # fixed: x264 output is deterministic for a given thread count, not across counts
MP4_CRF = 18


class GifWriter(PartialFile):
    """Streams index frames into a GIF89a: one global colour table for the first palette and
    a local table on every frame shown with another; no re-quantization, no frame merging.
    Reads a frame's preview and palette."""

    def __init__(self, spec: GifSpec):
        super().__init__(spec.path)
        self.global_palette = spec.palette
        self.duration_ms = 10 * max(1, round(100 / spec.fps))  # GIF delays are whole centiseconds
        self.file = self.open("wb")
        self.file.write(b"GIF89a" + struct.pack("<HHBBB", spec.width, spec.height, 0xF7, 0, 0))
        self.file.write(self.global_palette)
        self.file.write(b"!\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", spec.loop) + b"\x00")
        data = spec.comment.encode("utf-8")
        blocks = b"".join(
            bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255)
        )
        self.file.write(b"!\xfe" + blocks + b"\x00")

    def write(self, frame: Frame) -> None:
        palette = frame.palette.tobytes()
        image = Image.fromarray(frame.preview, mode="P")
        image.putpalette(palette)
        local = palette != self.global_palette
        for chunk in GifImagePlugin.getdata(image, duration=self.duration_ms, include_color_table=local):
            self.file.write(chunk)

    def complete(self) -> list[PartialFile]:
        self.file.write(b";")
        self.file.close()
        return [self]

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        self.file.close()
        super().abort()


def even_size(width: int, height: int) -> tuple[int, int]:
    """The size an H.264 yuv420p stream of a canvas takes: odd sides are padded by one pixel."""
    return width + width % 2, height + height % 2


class Mp4Writer(PartialFile):
    """H.264, yuv420p, faststart, with the preset in the container's comment tag.

    Odd canvas sides are padded by repeating the last row or column (yuv420p needs even sizes).
    Reads a frame's RGB.
    """

    def __init__(self, spec: Mp4Spec):
        super().__init__(spec.path)
        self.size = even_size(spec.width, spec.height)
        # FFmpeg opens files by name: it is handed the descriptor's name where the OS has one, so
        # that it writes (and reopens, for faststart) the file created here, whatever the name
        # points at meanwhile
        self.descriptor = self.create()
        target = f"/proc/self/fd/{self.descriptor}"
        if not os.path.exists(target):
            target = str(self.temporary)
        try:
            self.container = av.open(target, mode="w", format="mp4", options={"movflags": "+faststart"})
        except BaseException:
            self._close_descriptor()
            super().abort()
            raise
        self.container.metadata["comment"] = spec.comment
        stream = self.container.add_stream("libx264", rate=Fraction(spec.fps))
        stream.width, stream.height = self.size
        stream.pix_fmt = "yuv420p"
        # mbtree off: with it on, x264's bytes depend on what else the process has encoded
        # (docs/benchmarks.md, "Measurements behind the code: the render pipeline"). It costs a
        # little compression.
        stream.options = {"crf": str(MP4_CRF), "preset": "medium", "x264-params": "mbtree=0"}
        stream.codec_context.thread_count = MP4_THREADS
        self.stream = stream

    def write(self, frame: Frame) -> None:
        rgb = frame.rgb
        pad_y, pad_x = self.size[1] - rgb.shape[0], self.size[0] - rgb.shape[1]
        if pad_x or pad_y:
            rgb = np.pad(rgb, ((0, pad_y), (0, pad_x), (0, 0)), mode="edge")
        video = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        for packet in self.stream.encode(video):
            self.container.mux(packet)

    def complete(self) -> list[PartialFile]:
        for packet in self.stream.encode():
            self.container.mux(packet)
        self.container.close()
        self._close_descriptor()
        return [self]

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        try:
            self.container.close()
        except Exception:  # a broken container is being thrown away anyway
            pass
        self._close_descriptor()
        super().abort()

    def _close_descriptor(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


class PngWriter(PartialFile):
    """A PNG still of the last frame written with an RGB, with the preset in a text chunk, and
    with dpi its print resolution (a pHYs chunk, so print software sizes it: pixels / dpi
    inches). Frames without an RGB pass by."""

    def __init__(self, spec: PngSpec):
        super().__init__(spec.path)
        self.comment = spec.comment
        self.dpi = spec.dpi
        self.last: np.ndarray | None = None

    def write(self, frame: Frame) -> None:
        if frame.rgb is None:
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
    """rgb [H, W, 3] uint8 as a PNG into an open file, the preset text in an iTXt chunk."""
    info = PngImagePlugin.PngInfo()
    info.add_itxt(EMBED_KEY, comment)
    extra = {} if dpi is None else {"dpi": (dpi, dpi)}
    Image.fromarray(rgb, mode="RGB").save(
        file, format="PNG", pnginfo=info, compress_level=compress_level, **extra
    )


class FramesDirWriter:
    """Every frame as a numbered PNG (<stem>-00001.png, ...: frame number + 1, so that a render
    resumed from a checkpoint names its frames as the uninterrupted render does) for editing in
    other tools.

    Each frame is written under its temporary name; they appear under their names with the
    render's other files (complete() returns them all); on abort none is left. Reads a frame's RGB.
    """

    COMPRESS_LEVEL = 1  # a sequence is an intermediate: fast to write matters more than size

    def __init__(self, spec: FramesDirSpec):
        self.folder, self.stem, self.comment = Path(spec.folder), spec.stem, spec.comment
        self.path = spec.path
        self.frames: list[PartialFile] = []

    def write(self, frame: Frame) -> None:
        partial = PartialFile(self.folder / f"{self.stem}-{frame.number + 1:05d}.png")
        try:
            with partial.open("wb") as file:
                save_png(file, frame.rgb, self.comment, self.COMPRESS_LEVEL)
        except BaseException:
            partial.abort()
            raise
        self.frames.append(partial)

    def complete(self) -> list[PartialFile]:
        return list(self.frames)

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        for partial in self.frames:
            partial.abort()


WRITERS = {GifSpec: GifWriter, Mp4Spec: Mp4Writer, PngSpec: PngWriter, FramesDirSpec: FramesDirWriter}


def open_writer(spec: Spec) -> Writer:
    """The writer of a spec (render/outputs.py), its file opened under a temporary name."""
    writer = WRITERS.get(type(spec))
    if writer is None:
        raise ValueError(f"no writer for {spec!r}")
    return writer(spec)


def read_embedded(path: Path) -> str:
    """The preset text a rendered file carries (GIF, MP4, PNG or JSON sidecar)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return json.loads(path.read_text(encoding="utf-8"))["preset_yaml"]
    if suffix == ".mp4":
        with av.open(str(path)) as container:
            return container.metadata["comment"]
    with Image.open(path) as image:
        if suffix == ".gif":
            return image.info["comment"].decode("utf-8")
        return image.text[EMBED_KEY]
