"""MP4: H.264 in one of four settings, HEVC or AV1 (the one place they are defined), faststart, the preset
in the container's comment tag, and a preset's soundtrack as its audio stream (mp4_audio.py).
Odd sides are padded (H.264 needs even sizes)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import ClassVar

from ..base import lazy
from ..base.errors import RenderError
from ..base.files import PartialFile
from .av_video import AvContainerFile, scheduling_kept
from .contract import Format, Frame, Shared
from .mp4_audio import Soundtrack, open_sound
from .targets import FittedFrames, FrameFit, frame_fit

# start-up: loaded at first use (base/lazy.py)
av = lazy.module("av")
np = lazy.module("numpy")

MP4_MAX_SIDE = 8192  # beyond H.264's largest level; players refuse such streams
# x264's threads, fixed: its bytes are the same for a given thread count on every machine (with
# any number of cores), not across counts. Frame threads (not sliced), 16 to fill a 16-core host;
# lookahead threads pinned too rather than left to x264's rule (docs/benchmarks.md, "MP4 threads").
MP4_THREADS = 16
MP4_LOOKAHEAD_THREADS = 2
MP4_SLICED_THREADS = False
MP4_CRF = 18
DEFAULT_SETTING = "browser"  # output.mp4 unset
# HEVC (libx265) and AV1 (SVT-AV1), each at fixed settings and threads (docs/outputs.md, "MP4
# settings", says which are byte-identical across runs and thread counts, from measurement).
# x265: a pool of HEVC_POOL_THREADS worker threads and HEVC_FRAME_THREADS frames in flight, both
# fixed; its log quiet but for errors.
HEVC_CRF = 22
HEVC_POOL_THREADS = 16
HEVC_FRAME_THREADS = 4
# SVT-AV1: preset 8 (of 0 slowest .. 13 fastest), CRF 32, its logical processors fixed
AV1_CRF = 32
AV1_PRESET = 8
AV1_THREADS = 16


@dataclass(frozen=True)
class Mp4Setting:
    """How an MP4 setting (output.mp4) encodes: the codec, its pixel format, the factor the frames
    are enlarged by (nearest neighbour: 2 keeps every pixel's colour through 4:2:0 chroma) and
    the codec's options (docs/outputs.md says where each plays); params: (the codec's option
    of its own parameters, their value; None: x264_params()); tag: the MP4 sample entry's tag
    (None: FFmpeg's; hvc1 for HEVC, which Apple's players require); note: the sidecar's word on
    its bytes where they are not the same for every thread count (None: they are)."""

    codec: str
    pix_fmt: str
    scale: int
    options: tuple[tuple[str, str], ...]
    params: tuple[str, str] | None = None
    tag: str | None = None
    note: str | None = None


# output.mp4's values, in this order in the schema and its messages
MP4_SETTINGS = {
    "browser": Mp4Setting("libx264", "yuv420p", 1, (("crf", str(MP4_CRF)), ("preset", "medium"))),
    "browser-sharp": Mp4Setting("libx264", "yuv420p", 2, (("crf", str(MP4_CRF)), ("preset", "medium"))),
    "browser-fast": Mp4Setting("libx264", "yuv420p", 1, (("crf", str(MP4_CRF)), ("preset", "veryfast"))),
    "master": Mp4Setting("libx264rgb", "rgb24", 1, (("qp", "0"), ("preset", "medium"))),
    "hevc": Mp4Setting(
        "libx265",
        "yuv420p",
        1,
        (("crf", str(HEVC_CRF)), ("preset", "medium")),
        (
            "x265-params",
            f"pools={HEVC_POOL_THREADS}:frame-threads={HEVC_FRAME_THREADS}:log-level=error",
        ),
        tag="hvc1",
        note="mp4 hevc: libx265's bytes repeat run to run at its pinned threads (pools "
        f"{HEVC_POOL_THREADS}, frame threads {HEVC_FRAME_THREADS}), not at other thread counts, "
        "and on x86-64 CPUs with AVX2 or AVX-512 alike, not in C alone (measured); HEVC plays in "
        "Safari, and in Chrome and Edge where the hardware decodes it",
    ),
    "av1": Mp4Setting(
        "libsvtav1",
        "yuv420p",
        1,
        (("crf", str(AV1_CRF)), ("preset", str(AV1_PRESET))),
        ("svtav1-params", f"lp={AV1_THREADS}"),
        note="mp4 av1: SVT-AV1's bytes repeat run to run, at any thread count (measured at 16 and "
        "2) and with its assembly off as on (measured: the RGB-to-YUV conversion, FFmpeg's, needs "
        "AVX2 or AVX-512 alike); AV1 plays in current Chrome, Firefox and Edge, in Safari where the "
        "hardware decodes it",
    ),
}


def x264_params() -> str:
    """The x264-params every MP4 setting shares: mbtree off (with it on, x264's bytes depend on
    what else the process has encoded: docs/benchmarks.md, "Measurements behind the code: the
    render pipeline"; it costs a little compression) and the fixed threads."""
    return (
        f"mbtree=0:threads={MP4_THREADS}:lookahead-threads={MP4_LOOKAHEAD_THREADS}"
        f":sliced-threads={int(MP4_SLICED_THREADS)}"
    )


def even_size(width: int, height: int) -> tuple[int, int]:
    """The size an H.264 yuv420p stream of a canvas takes: odd sides are padded by one pixel."""
    return width + width % 2, height + height % 2


def mp4_size(width: int, height: int, setting: str) -> tuple[int, int]:
    """The video size of a canvas in an MP4 setting: enlarged by its scale, odd sides padded."""
    scale = MP4_SETTINGS[setting].scale
    return even_size(width * scale, height * scale)


def mp4_setting(preset) -> str:
    """A preset's MP4 setting (output.mp4; unset: browser)."""
    return preset.output.mp4 or DEFAULT_SETTING


@dataclass(frozen=True)
class Mp4Spec:
    """An H.264 MP4 of RGB frames (odd sides padded) with the preset text in its metadata;
    setting: which encoding (MP4_SETTINGS: "browser", "browser-sharp", "browser-fast", "master",
    "hevc" or "av1")."""

    path: Path
    width: int
    height: int
    fps: int
    comment: str
    setting: str = DEFAULT_SETTING
    sound: Soundtrack | None = None  # the audio stream: the preset's sound file (docs/audio.md)
    fit: FrameFit | None = None  # output.target: the frames fitted to a platform (targets.py)

    format: ClassVar[str] = "mp4"
    reads: ClassVar[str] = "rgb"

    def open(self) -> Mp4Writer:
        return Mp4Writer(self)


class Mp4Writer(AvContainerFile):
    """H.264 in the spec's setting (MP4_SETTINGS), faststart, with the preset in the container's
    comment tag.

    Frames are enlarged by the setting's scale (each pixel repeated); odd sides are then padded
    by repeating the last row or column (H.264 needs even sizes). Reads a frame's RGB.
    """

    def __init__(self, spec: Mp4Spec):
        self.setting = MP4_SETTINGS[spec.setting]
        self.size = mp4_size(spec.width, spec.height, spec.setting) if spec.fit is None else spec.fit.size
        self.fitted = None if spec.fit is None else FittedFrames(spec.fit)
        self.sound = None
        super().__init__(spec.path, "mp4", {"movflags": "+faststart"})
        self.container.metadata["comment"] = spec.comment
        self.fps, self.frames, self.sound = spec.fps, 0, None
        stream = self.container.add_stream(self.setting.codec, rate=Fraction(spec.fps))
        stream.width, stream.height = self.size
        stream.pix_fmt = self.setting.pix_fmt
        key, params = self.setting.params or ("x264-params", x264_params())
        stream.options = {
            **dict(self.setting.options),
            key: params,
            **(spec.fit.options() if spec.fit else {}),
        }
        if self.setting.tag is not None:
            stream.codec_tag = self.setting.tag
        stream.codec_context.thread_count = MP4_THREADS
        stream.codec_context.thread_type = "SLICE" if MP4_SLICED_THREADS else "FRAME"
        self.stream = stream
        if spec.sound is not None:
            try:
                self.sound = open_sound(spec.sound)
                self.sound.add(self.container)
            except ValueError as error:
                self.abort()
                raise RenderError(str(error)) from None
            except BaseException:
                self.abort()
                raise

    def write(self, frame: Frame) -> None:
        rgb = frame.rgb
        if self.fitted is not None:  # a platform target's size, trim and loop (targets.py)
            rgb = self.fitted.take(rgb)
            if rgb is not None:
                self._encode(rgb)
            return
        scale = self.setting.scale
        if scale > 1:
            rgb = np.repeat(np.repeat(rgb, scale, axis=0), scale, axis=1)
        pad_y, pad_x = self.size[1] - rgb.shape[0], self.size[0] - rgb.shape[1]
        if pad_x or pad_y:
            rgb = np.pad(rgb, ((0, pad_y), (0, pad_x), (0, 0)), mode="edge")
        self._encode(rgb)

    def _encode(self, rgb: np.ndarray) -> None:
        video = av.VideoFrame.from_ndarray(np.ascontiguousarray(rgb), format="rgb24")
        opening = scheduling_kept() if self.frames == 0 else contextlib.nullcontext()
        with self._naming_the_file(), opening:  # the first frame opens the encoder
            for packet in self.stream.encode(video):
                self.container.mux(packet)
            self.frames += 1
            if self.sound is not None:  # the sound of the frames so far, interleaved
                self.sound.until(self.container, Fraction(self.frames, self.fps))

    def complete(self) -> list[PartialFile]:
        if self.fitted is not None:
            for rgb in self.fitted.replay():  # a target's loop: the frames again, whole passes
                self._encode(rgb)
        with self._naming_the_file(), scheduling_kept():  # with no frame, the flush opens it
            for packet in self.stream.encode():
                self.container.mux(packet)
            if self.sound is not None:  # ends with the video
                self.sound.until(self.container, Fraction(self.frames, self.fps))
                self.sound.close()
        self.close_container()
        return [self]

    def abort(self) -> None:
        if self.sound is not None:
            self.sound.close()
        super().abort()


def make_spec(preset, path: Path, shared: Shared) -> Mp4Spec:
    """The MP4 of a validated preset: the whole canvas, output.fps, output.mp4's setting."""
    width, height = preset.frame_size  # the canvas, or a 3D preset's camera image
    sound = getattr(preset, "soundtrack", None)  # the preset's sound file, where it has one and wants it
    fit = None
    if preset.output.target is not None:  # a platform's size, duration and bytes (targets.py)
        fit = frame_fit(preset, preset.output.target, shared.frames, tuple(int(c) for c in shared.palette[0]))
    return Mp4Spec(path, width, height, preset.output.fps, shared.text, mp4_setting(preset), sound, fit)


def check(preset) -> list[str]:
    """Refuse a video side over MP4_MAX_SIDE (after the setting's scale); note odd-side padding."""
    notes = []
    width, height = preset.frame_size
    setting = mp4_setting(preset)
    video = mp4_size(width, height, setting)
    if max(video) > MP4_MAX_SIDE:
        scaled = (
            "" if video == even_size(width, height) else f" (output.mp4 {setting}: {video[0]}x{video[1]})"
        )
        raise RenderError(
            f"{preset.name}: MP4 (H.264) allows at most {MP4_MAX_SIDE} pixels per side, "
            f"the canvas is {width}x{height}{scaled}; remove mp4 from output.formats"
            + ("" if not scaled else " or set output.mp4: browser")
        )
    if even_size(width, height) != (width, height) and video == even_size(width, height):
        notes.append("mp4 padded from {}x{} to {}x{} (H.264 needs even sides)".format(width, height, *video))
    if MP4_SETTINGS[setting].note is not None:
        notes.append(MP4_SETTINGS[setting].note)
    return notes


def read_text(path: Path) -> str:
    """The preset an MP4 carries: its container's comment tag, read by the MOV/MP4 demuxer only
    (av_video.read_comment)."""
    with av.open(str(path), options={"format_whitelist": "mov"}) as container:
        return container.metadata["comment"]


FORMAT = Format(
    name="mp4",
    position=1,
    default=True,
    summary="H.264 video that plays in a browser (settings browser, browser-sharp, browser-fast, master; hevc, av1)",
    max_side=MP4_MAX_SIDE,
    max_frames=None,
    spec=Mp4Spec,
    make_spec=make_spec,
    check=check,
    read_text=read_text,
)
