"""A video written through PyAV (FFmpeg) frame by frame: the writer the MOV (ProRes) and WebM
(VP9) formats share. One codec at fixed settings (`VideoSetting`: the codec, its pixel format,
its options and a fixed thread count, so its bytes do not follow the machine's cores), the
frames' RGB or RGBA (output.alpha, render/formats/alpha.py), odd sides padded where the pixel
format halves the chroma, the preset in the container's comment tag; and `AvVideoSpec`, the spec
both formats' specs are (their container, settings and options as class constants).

Not a format (no FORMAT): the format modules declare theirs."""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import ClassVar

from ..base import lazy
from ..base.files import PartialFile, commit_together
from .alpha import join
from .contract import Frame

# start-up: loaded at first use (base/lazy.py)
av = lazy.module("av")
np = lazy.module("numpy")


@contextlib.contextmanager
def scheduling_kept():
    """Around a call that may open an encoder: where the calling thread was time-shared
    (SCHED_OTHER) before it, every thread of this process that runs under a real-time policy
    after it is made time-shared again. SVT-AV1 (`output.mp4: av1`), run as root, sets the thread
    that opens it, and so the threads it starts, to SCHED_FIFO at priority 99: a render's own
    thread, its simulation with it, then held a core against every other process of the machine
    and passed the policy to every process it started (a test run's Chromium, started by such a
    process, starved it for over 10 minutes). No encoder's bytes depend on its threads' policy. A
    process its user runs real-time (chrt) is left as it is."""
    shared = not hasattr(os, "sched_getscheduler") or os.sched_getscheduler(0) == os.SCHED_OTHER
    try:
        yield
    finally:
        if shared and hasattr(os, "sched_getscheduler"):
            for task in os.listdir("/proc/self/task"):
                with contextlib.suppress(OSError):  # a thread that ended meanwhile
                    if os.sched_getscheduler(int(task)) in (os.SCHED_FIFO, os.SCHED_RR):
                        os.sched_setscheduler(int(task), os.SCHED_OTHER, os.sched_param(0))


@dataclass(frozen=True)
class VideoSetting:
    """How a video stream encodes: codec, pixel format, the codec's options, its thread count
    and threading (fixed), and whether its sides must be even (4:2:0 chroma)."""

    codec: str
    pix_fmt: str
    options: tuple[tuple[str, str], ...]
    threads: int
    thread_type: str = "FRAME"
    even: bool = True


def padded_size(width: int, height: int, even: bool) -> tuple[int, int]:
    """The video size of a frame: odd sides padded by one pixel where the setting needs even ones."""
    return (width + width % 2, height + height % 2) if even else (width, height)


class AvContainerFile(PartialFile):
    """A file FFmpeg writes through PyAV: created here, exclusively, under its temporary name and
    handed to FFmpeg by its descriptor's name where the OS has one (/proc/self/fd/N), so that
    FFmpeg writes (and reopens, for an MP4's faststart) the file created here whatever the name
    points at meanwhile. FFmpeg's OSErrors name the file the user asked for (_naming_the_file).
    The MP4 writer (mp4.py) and the MOV, WebM and APNG writers stand on it."""

    def __init__(self, path: Path, container_format: str, options: dict[str, str] | None = None):
        super().__init__(path)
        self.descriptor = self.create()
        self.target = f"/proc/self/fd/{self.descriptor}"
        if not os.path.exists(self.target):
            self.target = str(self.temporary)
        try:
            with self._naming_the_file():
                self.container = av.open(
                    self.target, mode="w", format=container_format, options=options or {}
                )
        except BaseException:
            self._close_descriptor()
            PartialFile.abort(self)
            raise

    def close_container(self) -> None:
        """The container closed (its file complete under the temporary name)."""
        with self._naming_the_file():
            self.container.close()
        self._close_descriptor()

    @contextlib.contextmanager
    def _naming_the_file(self):
        """FFmpeg's OSErrors (a full disk) name the file it was handed, /proc/self/fd/N, or none:
        they are raised naming the output the user asked for (errors.os_error_message)."""
        try:
            yield
        except OSError as error:
            if error.filename is not None and str(error.filename) not in (self.target, str(self.temporary)):
                raise
            raise OSError(error.errno, error.strerror or str(error), str(self.path)) from error

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        try:
            self.container.close()
        except Exception:  # a broken container is being thrown away anyway
            pass
        self._close_descriptor()
        super().abort()

    def abort_file(self) -> None:
        """Remove the complete temporary file (a scratch file whose bytes were copied)."""
        self._close_descriptor()
        PartialFile.abort(self)

    def _close_descriptor(self) -> None:
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None


class AvVideoWriter(AvContainerFile):
    """A video file of one stream in `setting`, written by PyAV into the temporary file. Reads a
    frame's RGB, or its RGBA with `alpha` (a mode of output.alpha). Odd sides are padded by
    repeating the last row or column (the alpha plane too) where the setting needs even sides."""

    def __init__(
        self,
        path: Path,
        container_format: str,
        setting: VideoSetting,
        size: tuple[int, int],
        fps: int,
        comment: str,
        alpha: str | None = None,
        container_options: dict[str, str] | None = None,
        codec_tag: str | None = None,
    ):
        self.alpha = alpha
        self.size = padded_size(*size, setting.even)
        super().__init__(path, container_format, container_options)
        self.container.metadata["comment"] = comment
        stream = self.container.add_stream(setting.codec, rate=Fraction(fps))
        stream.width, stream.height = self.size
        stream.pix_fmt = setting.pix_fmt
        stream.options = dict(setting.options)
        if codec_tag is not None:
            stream.codec_tag = codec_tag
        stream.codec_context.thread_count = setting.threads
        stream.codec_context.thread_type = setting.thread_type
        self.stream = stream

    def picture(self, frame: Frame) -> np.ndarray:
        """The frame's RGB, or RGBA with alpha, padded to the video's size."""
        picture = frame.rgb if self.alpha is None else join(frame.rgb, frame.alpha, self.alpha)
        pad_y, pad_x = self.size[1] - picture.shape[0], self.size[0] - picture.shape[1]
        if pad_x or pad_y:
            picture = np.pad(picture, ((0, pad_y), (0, pad_x), (0, 0)), mode="edge")
        return np.ascontiguousarray(picture)

    def write(self, frame: Frame) -> None:
        fmt = "rgb24" if self.alpha is None else "rgba"
        video = av.VideoFrame.from_ndarray(self.picture(frame), format=fmt)
        with self._naming_the_file():
            for packet in self.stream.encode(video):
                self.container.mux(packet)

    def complete(self) -> list[PartialFile]:
        with self._naming_the_file():
            for packet in self.stream.encode():
                self.container.mux(packet)
        self.close_container()
        return [self]


@dataclass(frozen=True)
class AvVideoSpec:
    """A video of RGB frames, or RGBA ones with alpha (output.alpha's mode), written by
    AvVideoWriter. A format's spec is a frozen subclass that names its `format`, its `container`
    (FFmpeg's muxer), its `settings` ("opaque" and "alpha" VideoSettings) and, where it needs
    them, its container options and codec tag; the fields are the same for every such format."""

    path: Path
    width: int
    height: int
    fps: int
    comment: str
    alpha: str | None = None
    reads: str = "rgb"

    format: ClassVar[str]
    container: ClassVar[str]
    settings: ClassVar[dict[str, VideoSetting]]
    container_options: ClassVar[dict[str, str] | None] = None
    codec_tag: ClassVar[str | None] = None

    def open(self) -> AvVideoWriter:
        setting = self.settings["opaque" if self.alpha is None else "alpha"]
        return AvVideoWriter(
            self.path,
            self.container,
            setting,
            (self.width, self.height),
            self.fps,
            self.comment,
            self.alpha,
            container_options=self.container_options,
            codec_tag=self.codec_tag,
        )


VIDEO_DEMUXERS = "mov,matroska"  # a --from video is read by these alone (FFmpeg's format_whitelist)


def read_comment(path: Path) -> str:
    """The preset a video carries: its container's comment tag (any case: Matroska upper-cases
    it), read by VIDEO_DEMUXERS only: a file from a stranger named x.mp4 that is an ffconcat or
    HLS text would have FFmpeg open the files it names."""
    with av.open(str(path), options={"format_whitelist": VIDEO_DEMUXERS}) as container:
        tags = {key.lower(): value for key, value in container.metadata.items()}
    return tags["comment"]
