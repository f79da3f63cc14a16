"""The writers of the output formats (render/out/outputs.py's Writer, each opened from its spec):
GIF from index frames with the exact palette, H.264 MP4, lossless animated WebP, PNG still,
numbered PNG frames.

Every writer writes to a hidden temporary file beside its target, created exclusively
(render/base/files.py), and renames it only when the file is complete, so a killed render never leaves
a truncated file under the final name: complete() finishes the file under its temporary name and
returns it, for the runner to rename with the render's other files at once (files.commit_together);
commit() does both, for a writer used alone. Every
output carries the resolved preset (GIF comment, PNG text chunk, MP4 metadata, WebP XMP) so that
`physarum render --from FILE` renders it again.
"""

from __future__ import annotations

import html
import json
import os
import re
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import BinaryIO

import av
import numpy as np
from PIL import Image, PngImagePlugin, _webp

from physarum.render.base.files import PartialFile, commit_together
from physarum.render.base.inputs import read_text
from physarum.render.formats import gif_file as gif
from physarum.render.formats.gif_budget import Budgeter, FrameStore
from physarum.render.formats.gif_file import Digits, Reduction, delay_ms
from physarum.render.formats.gif_pool import CompressPool, FrameTask
from physarum.render.out.outputs import (
    Frame,
    FramesDirSpec,
    GifSpec,
    Mp4Spec,
    PngSpec,
    Spec,
    WebpSpec,
    Writer,
)

EMBED_KEY = "physarum"
# x264's threads, fixed: its bytes are the same for a given thread count on every machine (with
# any number of cores), not across counts. Frame threads (not sliced), 16 to fill a 16-core host;
# lookahead threads pinned too rather than left to x264's rule (docs/benchmarks.md, "MP4 threads").
MP4_THREADS = 16
MP4_LOOKAHEAD_THREADS = 2
MP4_SLICED_THREADS = False
MP4_CRF = 18


@dataclass(frozen=True)
class Mp4Setting:
    """How an MP4 setting (output.mp4) encodes: the codec, its pixel format, the factor the frames
    are enlarged by (nearest neighbour: 2 keeps every pixel's colour through 4:2:0 chroma) and
    the codec's options (docs/outputs.md says where each plays)."""

    codec: str
    pix_fmt: str
    scale: int
    options: tuple[tuple[str, str], ...]


MP4_SETTINGS = {
    "browser": Mp4Setting("libx264", "yuv420p", 1, (("crf", str(MP4_CRF)), ("preset", "medium"))),
    "browser-sharp": Mp4Setting("libx264", "yuv420p", 2, (("crf", str(MP4_CRF)), ("preset", "medium"))),
    "master": Mp4Setting("libx264rgb", "rgb24", 1, (("qp", "0"), ("preset", "medium"))),
}


def x264_params() -> str:
    """The x264-params every MP4 setting shares: mbtree off (with it on, x264's bytes depend on
    what else the process has encoded: docs/benchmarks.md, "Measurements behind the code: the
    render pipeline"; it costs a little compression) and the fixed threads."""
    return (
        f"mbtree=0:threads={MP4_THREADS}:lookahead-threads={MP4_LOOKAHEAD_THREADS}"
        f":sliced-threads={int(MP4_SLICED_THREADS)}"
    )


class GifWriter(PartialFile):
    """Streams index frames into a GIF89a: one global colour table for the first palette and
    a local table on every frame shown with another; no re-quantization, no frame merging.
    Reads a frame's preview and palette.

    Frames are compressed in spec.processes worker processes (render/formats/gif_pool.py) and written in
    order: the same bytes as one process. With spec.max_bytes the frames are kept (compressed, in
    a temporary file) and the file is written when they are all in, at the best reduction that
    fits (render/formats/gif_budget.py); `report` then says what was chosen and why."""

    def __init__(self, spec: GifSpec):
        super().__init__(spec.path)
        self.spec = spec
        self.global_palette = spec.palette
        self.duration_ms = delay_ms(spec.fps)
        self.file = self.open("wb")
        self.store = FrameStore() if spec.max_bytes is not None else None
        self.report: dict | None = None
        # the workers start now, so that they have imported what they need while the simulation
        # runs, also where a budgeted GIF compresses only once every frame is in
        self.pool = CompressPool(spec.processes)
        if self.store is None:
            self.file.write(gif.header(spec.width, spec.height, spec.palette, spec.loop, spec.comment))

    def write(self, frame: Frame) -> None:
        if self.store is not None:
            self.store.append(frame.preview, frame.palette)
            return
        palette = frame.palette.tobytes()
        local = palette != self.global_palette
        task = FrameTask(frame.preview.copy(), palette, Reduction(), Digits(), local, self.duration_ms)
        for block in self.pool.submit(task):  # the caller reuses its buffers: hence the copy
            self.file.write(block)

    def complete(self) -> list[PartialFile]:
        if self.store is None:
            for block in self.pool.drain():
                self.file.write(block)
            self.file.write(gif.TRAILER)
        else:
            budgeter = Budgeter(self.store, self.spec, Digits(*self.spec.digits), self.pool)
            try:
                self.report = budgeter.write(self.file).report()
            except OverflowError as error:  # an OSError names the file, so the job fails alone
                raise OSError(0, str(error), str(self.spec.path)) from None
            self.store.close()
        self.pool.close()
        self.file.close()
        return [self]

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        self.pool.kill()
        if self.store is not None:
            self.store.close()
        self.file.close()
        super().abort()


def even_size(width: int, height: int) -> tuple[int, int]:
    """The size an H.264 yuv420p stream of a canvas takes: odd sides are padded by one pixel."""
    return width + width % 2, height + height % 2


def mp4_size(width: int, height: int, setting: str) -> tuple[int, int]:
    """The video size of a canvas in an MP4 setting: enlarged by its scale, odd sides padded."""
    scale = MP4_SETTINGS[setting].scale
    return even_size(width * scale, height * scale)


class Mp4Writer(PartialFile):
    """H.264 in the spec's setting (MP4_SETTINGS), faststart, with the preset in the container's
    comment tag.

    Frames are enlarged by the setting's scale (each pixel repeated); odd sides are then padded
    by repeating the last row or column (H.264 needs even sizes). Reads a frame's RGB.
    """

    def __init__(self, spec: Mp4Spec):
        super().__init__(spec.path)
        self.setting = MP4_SETTINGS[spec.setting]
        self.size = mp4_size(spec.width, spec.height, spec.setting)
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
        stream = self.container.add_stream(self.setting.codec, rate=Fraction(spec.fps))
        stream.width, stream.height = self.size
        stream.pix_fmt = self.setting.pix_fmt
        stream.options = {**dict(self.setting.options), "x264-params": x264_params()}
        stream.codec_context.thread_count = MP4_THREADS
        stream.codec_context.thread_type = "SLICE" if MP4_SLICED_THREADS else "FRAME"
        self.stream = stream

    def write(self, frame: Frame) -> None:
        rgb = frame.rgb
        scale = self.setting.scale
        if scale > 1:
            rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
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


WEBP_METHOD = 0  # libwebp's effort, fixed (0: fastest; the bytes depend on it, never the colours)
WEBP_KEYFRAMES = (9, 17)  # kmin, kmax: Pillow's defaults for lossless animations, fixed here
XMP_PRESET = re.compile(rb"<physarum:preset>(.*?)</physarum:preset>", re.DOTALL)


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
        self.fps, self.comment, self.frames = spec.fps, spec.comment, 0
        self.encoder = _webp.WebPAnimEncoder(
            (spec.width, spec.height), 0xFF000000, spec.loop, False, *WEBP_KEYFRAMES, False, False
        )

    def _timestamp(self, number: int) -> int:
        return round(1000 * number / self.fps)

    def write(self, frame: Frame) -> None:
        image = Image.fromarray(np.ascontiguousarray(frame.rgb), mode="RGB")
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


class PngWriter(PartialFile):
    """A PNG still of the last frame written with an RGB, with the preset in a text chunk, and
    with dpi its print resolution (a pHYs chunk, so print software sizes it: pixels / dpi
    inches). Frames without an RGB pass by, and so do a ping-pong loop's replayed frames: the
    still is the last frame simulated."""

    def __init__(self, spec: PngSpec):
        super().__init__(spec.path)
        self.comment = spec.comment
        self.dpi = spec.dpi
        self.last: np.ndarray | None = None

    def write(self, frame: Frame) -> None:
        if frame.rgb is None or frame.replay:
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


WRITERS = {
    GifSpec: GifWriter,
    Mp4Spec: Mp4Writer,
    WebpSpec: WebpWriter,
    PngSpec: PngWriter,
    FramesDirSpec: FramesDirWriter,
}


def open_writer(spec: Spec) -> Writer:
    """The writer of a spec (render/out/outputs.py), its file opened under a temporary name."""
    writer = WRITERS.get(type(spec))
    if writer is None:
        raise ValueError(f"no writer for {spec!r}")
    return writer(spec)


def read_embedded(path: Path, limit: int = 40 << 20) -> str:
    """The text a rendered file carries (GIF, MP4, WebP, PNG or JSON sidecar): the preset and, after it,
    its carried images (render/preset/carried.py). A sidecar is read only up to `limit` bytes; a PNG's
    text is the chunk before its pixels (nothing is decoded)."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix == ".json":
        return json.loads(read_text(path, limit))["preset_yaml"]
    if suffix == ".mp4":
        with av.open(str(path)) as container:
            return container.metadata["comment"]
    with Image.open(path) as image:
        if suffix == ".webp":
            found = XMP_PRESET.search(image.info.get("xmp") or b"")
            if found is None:
                raise KeyError("no physarum preset in the WebP's XMP")
            return html.unescape(found.group(1).decode("utf-8"))
        if suffix == ".gif":
            return image.info["comment"].decode("utf-8")
        return str(image.info[EMBED_KEY])
