"""The camera and transfer keys of a 3D preset (`camera:`), with their bounds
(docs/3d.md).

A camera is an orbit (one line: `camera: {orbit: {turns: 1, elevation: 20}, fov: 40}`) or a
fixed position and target; coordinates are in units of half the volume's longest side, the
volume's centre at (0, 0, 0), x to the right, y down (the canvas's rows), z toward the viewer
of the first orbit frame. Everything here is read on the host and turned into exact integers
by render/look/camera.py; nothing here imports torch.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from .palettes import parse_hex
from .sections import MAX_CANVAS, OptionalSection

MAX_SAMPLES = 4096  # samples along each ray
MAX_TURNS = 1000


class Orbit(OptionalSection):
    """The camera circles the vertical (y) axis through `target`, `turns` times over the shown
    frames, `elevation` degrees above the horizontal, starting `start` degrees round from +z."""

    turns: float = Field(1.0, ge=-MAX_TURNS, le=MAX_TURNS, description="turns over the animation")
    elevation: float = Field(20.0, ge=-89, le=89, description="degrees above the horizontal")
    start: float = Field(0.0, ge=-360, le=360, description="degrees round the y axis at frame 0")
    distance: float | None = Field(
        None, gt=0, le=1000, description="from the target, in half longest sides (unset: the volume fits)"
    )


MAX_LENS_RAYS = 64  # views averaged for depth of field


class DepthOfField(OptionalSection):
    """A thin lens: each frame is the rounded mean of `rays` views from points of a lens of radius
    `aperture` (half longest sides) round the camera, all meeting on the plane `focus` ahead of
    it (render/look/camera.py, lens_views): what lies on that plane stays sharp."""

    focus: float | None = Field(
        None, gt=0, le=1000, description="distance of the sharp plane (unset: the distance to the target)"
    )
    aperture: float = Field(0.05, gt=0, le=10, description="lens radius, in half longest sides")
    rays: int = Field(16, ge=2, le=MAX_LENS_RAYS, description="views averaged (each costs one frame's march)")


class Camera(OptionalSection):
    """camera: how a 3D preset's trail volume is seen (render/look/volume.py)."""

    orbit: Orbit | None = Field(None, description="an orbit (instead of position)")
    position: list[float] | None = Field(None, min_length=3, max_length=3, description="[x, y, z]")
    target: list[float] = Field(default_factory=lambda: [0.0, 0.0, 0.0], min_length=3, max_length=3)
    fov: float = Field(40.0, ge=1, le=150, description="vertical field of view, degrees")
    width: int | None = Field(None, ge=8, le=MAX_CANVAS, description="frame width (unset: canvas width)")
    height: int | None = Field(None, ge=8, le=MAX_CANVAS, description="frame height (unset: canvas height)")
    samples: int | None = Field(
        None,
        ge=1,
        le=MAX_SAMPLES,
        description="samples along each ray (unset: the volume's diagonal in voxels)",
    )
    sample: Literal["nearest", "trilinear"] = Field("trilinear", description="voxel sampling")
    opacity: float = Field(0.08, gt=0, le=1, description="opacity of a sample at level 255")
    floor: int = Field(1, ge=0, le=255, description="levels below this are transparent")
    curve: int = Field(1, ge=1, le=4, description="opacity grows as (level / 255) ** curve")
    gain: float = Field(1.0, ge=0.0625, le=64, description="emitted light times this (a glow)")
    background: str = Field("#000000", description="hex colour behind the volume")
    depth_of_field: DepthOfField | None = Field(None, description="a thin lens (unset: a pinhole, all sharp)")

    @field_validator("background")
    @classmethod
    def _hex(cls, value: str) -> str:
        parse_hex(value)
        return value

    @field_validator("position", "target")
    @classmethod
    def _bounded(cls, value: list[float] | None) -> list[float] | None:
        if value is not None and any(abs(v) > 1000 for v in value):
            raise ValueError("coordinates are in half longest sides, at most 1000 from the centre")
        return value

    @model_validator(mode="after")
    def _orbit_or_position(self) -> Camera:
        if self.position is not None and self.orbit is not None:
            raise ValueError("give orbit or position, not both")
        if self.position is not None and self.position == self.target:
            raise ValueError("position and target are the same point; the camera looks nowhere")
        return self

    def size(self, canvas_width: int, canvas_height: int) -> tuple[int, int]:
        """(width, height) of the frames: camera.width/height, each unset side the canvas's."""
        return self.width or canvas_width, self.height or canvas_height
