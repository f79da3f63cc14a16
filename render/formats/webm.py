"""WebM: VP9 (libvpx) that plays in browsers, with an alpha channel where output.alpha is set
(yuva420p: browsers composite it over the page), opaque yuv420p otherwise; constant quality at
fixed settings and threads, odd sides padded (4:2:0 needs even sides); the preset in the
container's COMMENT tag."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from .alpha import reads
from .av_video import AvVideoSpec, VideoSetting, padded_size, read_comment
from .contract import Format, Shared, refuse_side_over

WEBM_MAX_SIDE = 16384  # VP9 allows 65536; beyond 16384 no browser decodes it
WEBM_CRF = 20  # constant quality (b=0): the VP9 counterpart of the MP4's CRF 18
# libvpx-vp9 at fixed settings: good quality at speed 4 (2 for the first pass is for two-pass
# encodes, which this is not), row multithreading, a fixed thread count, 2^1 tile columns, the
# alternate reference frames libvpx chooses (they keep the alpha plane, measured)
WEBM_THREADS = 8
WEBM_OPTIONS = (
    ("crf", str(WEBM_CRF)),
    ("b", "0"),
    ("deadline", "good"),
    ("cpu-used", "4"),
    ("row-mt", "1"),
    ("tile-columns", "1"),
)
# Matroska draws a random segment UID for every file unless asked for bit-exact output
WEBM_CONTAINER = {"fflags": "+bitexact"}
WEBM_SETTINGS = {
    "opaque": VideoSetting("libvpx-vp9", "yuv420p", WEBM_OPTIONS, WEBM_THREADS),
    "alpha": VideoSetting("libvpx-vp9", "yuva420p", WEBM_OPTIONS, WEBM_THREADS),
}


@dataclass(frozen=True)
class WebmSpec(AvVideoSpec):
    """A VP9 WebM of RGB frames, or RGBA ones with alpha (output.alpha's mode)."""

    format: ClassVar[str] = "webm"
    container: ClassVar[str] = "webm"
    settings: ClassVar[dict[str, VideoSetting]] = WEBM_SETTINGS
    container_options: ClassVar[dict[str, str] | None] = WEBM_CONTAINER


def make_spec(preset, path: Path, shared: Shared) -> WebmSpec:
    """The WebM of a validated preset: the whole canvas, output.fps, output.alpha."""
    width, height = preset.frame_size
    alpha = preset.output.alpha
    return WebmSpec(path, width, height, preset.output.fps, shared.text, alpha, reads(alpha))


def check(preset) -> list[str]:
    """Refuse a side over WEBM_MAX_SIDE; note odd-side padding."""
    refuse_side_over(preset, WEBM_MAX_SIDE, "webm", "WebM (VP9)")
    width, height = preset.frame_size
    video = padded_size(width, height, True)
    if video != (width, height):
        return ["webm padded from {}x{} to {}x{} (VP9 4:2:0 needs even sides)".format(width, height, *video)]
    return []


FORMAT = Format(
    name="webm",
    position=5,
    default=False,
    summary="VP9 video that plays in browsers, transparent with output.alpha",
    max_side=WEBM_MAX_SIDE,
    max_frames=None,
    spec=WebmSpec,
    make_spec=make_spec,
    check=check,
    read_text=read_comment,
)
