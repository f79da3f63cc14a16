"""The look section: an exact HDR look between the trail and the palette (docs/model.md, "The
look"): exposure, an adaptive black point, bloom, a tone curve, vignette, film grain and ordered
dithering. Its arithmetic is render/look/hdr.py's; a preset without the section looks as before.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .schedule import scheduled
from .sections import OptionalSection

CURVES = ("linear", "log", "reinhard", "aces", "agx")


class Look(OptionalSection):
    """look: how linear trail intensity becomes a palette position. The intensity is
    (trail - low) / (high - low) * exposure (palette.levels give low and high), in 1/4096 steps
    up to 16; bloom adds a glow of what exceeds bloom_threshold; the tone curve maps 0 .. 16 to
    the palette; vignette darkens the corners; grain and dither perturb the 16-bit display value
    before it becomes one of the palette's 256 entries. exposure, bloom, bloom_threshold, vignette
    and grain may be schedules (docs/presets.md, "Schedules"), valued at each frame's step."""

    curve: Literal[CURVES] = Field(
        "aces", description="tone curve: linear (clips at 1), log, reinhard, aces (Narkowicz) or agx"
    )
    exposure: scheduled(gt=0, le=64) = Field(1.0, description="multiplies the linear intensity")
    black: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="the trail quantile shown as black in each frame (adaptive black point); "
        "unset: palette.levels.low",
    )
    bloom: scheduled(ge=0, le=8) = Field(0.0, description="strength of the glow (0: none)")
    bloom_radius: float = Field(
        0.03, gt=0, le=0.5, description="the glow's reach as a share of the canvas's short side"
    )
    bloom_threshold: scheduled(ge=0, le=16) = Field(
        0.5, description="intensity (1 = the white level) above which areas glow"
    )
    vignette: scheduled(ge=0, le=1) = Field(0.0, description="darkening of the corners (1: black)")
    grain: scheduled(ge=0, le=0.25) = Field(
        0.0, description="film grain amplitude, a share of the display range"
    )
    dither: bool = Field(True, description="ordered (Bayer 8x8) dithering to the 256 palette entries")
