"""MOV: Apple ProRes 4444 (FFmpeg's prores_ks) for editors and VJ hosts, with an alpha channel
where output.alpha is set (yuva444p10le: 10-bit 4:4:4 colour and a 16-bit alpha plane), opaque
4:4:4 otherwise; the preset in the container's comment tag. Large files: an intermediate for
editing, not for sharing."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from .alpha import reads
from .av_video import AvVideoSpec, VideoSetting, read_comment
from .contract import Format, Shared, refuse_side_over

MOV_MAX_SIDE = 8192  # ProRes as Apple's decoders take it (8K); prores_ks itself goes further
# prores_ks at fixed settings: profile 4444 (4: "4444"), Apple's vendor tag so that Apple's
# decoders take it as their own, its default quantiser range; slice threads, a fixed count (its
# slices are coded independently: measured the same bytes at 1 and 16 threads, docs/outputs.md)
MOV_THREADS = 16
MOV_OPTIONS = (("profile", "4"), ("vendor", "apl0"))
MOV_SETTINGS = {
    "opaque": VideoSetting("prores_ks", "yuv444p10le", MOV_OPTIONS, MOV_THREADS, "SLICE", even=False),
    "alpha": VideoSetting(
        "prores_ks", "yuva444p10le", (*MOV_OPTIONS, ("alpha_bits", "16")), MOV_THREADS, "SLICE", even=False
    ),
}


@dataclass(frozen=True)
class MovSpec(AvVideoSpec):
    """A ProRes 4444 MOV of RGB frames, or RGBA ones with alpha (output.alpha's mode)."""

    format: ClassVar[str] = "mov"
    container: ClassVar[str] = "mov"
    settings: ClassVar[dict[str, VideoSetting]] = MOV_SETTINGS
    codec_tag: ClassVar[str | None] = "ap4h"


def make_spec(preset, path: Path, shared: Shared) -> MovSpec:
    """The MOV of a validated preset: the whole canvas, output.fps, output.alpha."""
    width, height = preset.frame_size
    alpha = preset.output.alpha
    return MovSpec(path, width, height, preset.output.fps, shared.text, alpha, reads(alpha))


def check(preset) -> list[str]:
    """Refuse a side over MOV_MAX_SIDE before the render."""
    refuse_side_over(preset, MOV_MAX_SIDE, "mov", "MOV (ProRes 4444)")
    return []


FORMAT = Format(
    name="mov",
    position=4,
    default=False,
    summary="ProRes 4444 for editors and VJ hosts, transparent with output.alpha",
    max_side=MOV_MAX_SIDE,
    max_frames=None,
    spec=MovSpec,
    make_spec=make_spec,
    check=check,
    read_text=read_comment,
)
