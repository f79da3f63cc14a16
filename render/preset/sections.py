"""The preset's sections of the world and its run: canvas, agents, model, run, with their bounds
(palette, output and checkpoint: preset/output_sections.py).

Sections are frozen pydantic models that forbid unknown keys; image paths are made absolute
against the preset file's folder when validated (and relative to the working directory again
when embedded in outputs, by `portable`).
"""

from __future__ import annotations

import copy
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationInfo,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from ...kernels.limits import MAX_CANVAS, MAX_DISTANCE, MAX_SIDE_3D
from ..base.errors import printable
from ..base.inputs import NamedValueError
from .catalog import PRESETS
from .images import image_size
from .schedule import optional_form, scheduled
from .units import REFERENCE_SIDE

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # of the whole name: NAME_PATTERN.fullmatch
MAX_AGENTS = 1 << 28


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class OptionalSection(Section):
    """A section whose unset (None) keys are left out of dumps, so that presets without the
    world keys dump (and embed in outputs) exactly as before they existed."""

    @model_serializer(mode="wrap")
    def _drop_none(self, handler):
        return {k: v for k, v in handler(self).items() if v is not None}


IMAGE_KEYS = ("path", "image")  # the keys whose values name image files (trail, walls, food, spawns)


def portable(node, cwd: Path, keep=()):
    """A dump with every absolute image path under `cwd` made relative to it, but those in
    `keep` (the paths of images a `render --from` file carries, kept as that file names them)."""
    return paths_changed(node, lambda path: portable_path(path, cwd, keep))


def saved_in(node, folder: Path, keep=()):
    """A dump as a preset file saved in `folder` names its files: every absolute image and sound
    path relative to `folder`, since a preset's paths are read against its own folder (located),
    so the saved file finds them from any working directory; those in `keep` (what a
    `render --from` file carries: no files) as they are."""
    return paths_changed(node, lambda path: saved_path(path, folder, keep))


def saved_path(path: str, folder: Path, keep=()) -> str:
    """One path as saved_in writes it: relative to `folder` (taken absolute, '..' collapsed as
    located reads it back); as it is where it is relative, in `keep`, on another drive, or one of
    the files that ship with the curated presets (an absolute path into the installed package
    stays right when the saved file's project moves; a relative one would not)."""
    if path in keep or not Path(path).is_absolute() or shipped(path):
        return path
    try:
        return Path(os.path.relpath(path, os.path.abspath(folder))).as_posix()
    except ValueError:  # another drive (Windows): no relative path leads there
        return path


def shipped(path: str) -> bool:
    """Whether an absolute path names a file under the curated presets' folder (their images and
    sounds, shipped in the package)."""
    folder = os.path.realpath(PRESETS.folder())
    return os.path.realpath(path).startswith(folder + os.sep)


def paths_changed(node, change):
    """A dump with every string under an image key replaced by change(path): the images' paths
    and the sound file's (audio.path is under a key of IMAGE_KEYS too)."""
    if isinstance(node, list):
        return [paths_changed(item, change) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in IMAGE_KEYS and isinstance(value, str):
            value = change(value)
        out[key] = paths_changed(value, change)
    return out


def portable_path(path: str, cwd: Path, keep=()) -> str:
    """An image path as outputs embed it: relative to `cwd` where it lies under it, else as it is;
    a path in `keep` as it is."""
    if path not in keep and Path(path).is_absolute() and Path(path).is_relative_to(cwd):
        return Path(path).relative_to(cwd).as_posix()
    return path


def located(path: str, info: ValidationInfo, what: str) -> str | None:
    """An input file's path (`what`: "an image file", "a sound file") made absolute: relative
    paths are relative to the preset file's folder (the validation context's `base`), '..'
    collapsed as the shell would show it. None where the context's `carried` entries hold it
    (`render --from`, render/preset/carried.py): the render reads those bytes, not a file, and the
    path is kept as it is. ValueError for an empty path."""
    if not path.strip():
        raise ValueError(f"{what} path is required")
    if path in (info.context or {}).get("carried", {}):
        return None
    resolved = Path(path).expanduser()
    if not resolved.is_absolute():
        resolved = Path((info.context or {}).get("base") or ".") / resolved
    return os.path.abspath(resolved)


def image_path(path: str | None, info: ValidationInfo) -> str | None:
    """An image path made absolute: relative paths are relative to the preset file's folder
    (the validation context's `base`). Outputs embed it through Preset.portable_dump. Only the
    header is read here; images.image_problems decodes it once the canvas is known. A path the
    context's `carried` images hold (`render --from`, render/preset/carried.py) is kept as it is: the
    render reads that image, not a file. An optional image given as null (`agents.image: null`)
    is no image."""
    if path is None:
        return None
    resolved = located(path, info, "an image file")
    if resolved is None:
        return path
    try:
        image_size(resolved)  # its header only: ValueError naming the problem; decoded on the canvas later
    except ValueError as error:  # a lone surrogate in the message: no UTF-8 for pydantic's message
        raise NamedValueError(printable(error)) from None
    return resolved


class Canvas(OptionalSection):
    """width and height; depth set makes the world a volume of depth x height x width voxels
    (the 3D model, docs/model.md section 13), each side then at most MAX_SIDE_3D. Unset, it is
    left out of dumps, so 2D presets dump as before."""

    width: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")
    height: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")
    depth: int | None = Field(None, ge=8, le=MAX_SIDE_3D, description="voxels: set, the world is 3D")

    @model_validator(mode="after")
    def _volume_sides(self) -> Canvas:
        if self.depth is not None and max(self.width, self.height) > MAX_SIDE_3D:
            raise ValueError(
                f"a 3D canvas (depth set) has sides of at most {MAX_SIDE_3D} voxels "
                f"(got width {self.width}, height {self.height})"
            )
        return self


SPAWN_NAMES = Literal["random", "disk", "ring", "center", "image", "ball", "sphere"]  # ball, sphere: 3D
DEFAULT_AGENTS = 100_000


class Agents(Section):
    """count, or density (agents per cell; the count is then round-half-even(density * W * H),
    set by the Preset; with model.units: short_side, per cell of a 512-pixel short side). With
    species, the count is the total: each species has count // S."""

    count: int | None = Field(None, ge=1, le=MAX_AGENTS)
    spawn: SPAWN_NAMES = "random"
    radius: float = Field(
        0.35, gt=0, le=0.5, description="disk/ring (3D: ball/sphere) radius, fraction of the short side"
    )
    density: float | None = Field(
        None,
        gt=0,
        le=1024,
        description="agents per cell (of a 512-pixel short side with units: short_side), instead of count",
    )
    image: str | None = Field(None, description="greyscale image: agent density of spawn: image")

    _image = field_validator("image")(image_path)

    @model_validator(mode="after")
    def _count_or_density(self) -> Agents:
        if self.count is not None and self.density is not None:
            raise ValueError("give count or density, not both")
        if self.count is None and self.density is None:
            object.__setattr__(self, "count", DEFAULT_AGENTS)
        return self

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        data = handler(self)
        if self.density is not None:
            data.pop("count", None)  # derived from the density and the canvas on loading
        return {k: v for k, v in data.items() if v is not None}


Angle = scheduled(ge=0, le=180)
Distance = scheduled(gt=0, le=MAX_DISTANCE)


class Model(Section):
    """The model's parameters. Each but units may be a number or a Schedule (keyframes,
    render/preset/schedule.py)."""

    sensor_angle: Angle = Field(22.5, description="degrees")
    sensor_distance: Distance = Field(9.0, description="pixels")
    turn_angle: Angle = Field(45.0, description="degrees")
    step_size: Distance = Field(1.0, description="pixels per step")
    deposit: scheduled(gt=0, le=1e6) = Field(5.0, description="trail added per agent per step")
    diffuse: scheduled(ge=0, le=1) = Field(1.0, description="share of the 3x3 mean blended in")
    decay: scheduled(ge=0, lt=1) = Field(0.1, description="share of the trail lost per step")
    units: Literal["pixels", "short_side"] = Field(
        "pixels", description="sensor_distance and step_size in pixels or fractions of the short side"
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        data = handler(self)
        if data.get("units") == "pixels":
            data.pop("units")  # the default: dumps stay as they were before units existed
        return data

    def pixels(self, key: str, short_side: int) -> float:
        """sensor_distance or step_size in pixels: exact (Fraction) conversion, one rounding."""
        return self.to_pixels(getattr(self, key), short_side)

    def to_pixels(self, value: float, short_side: int) -> float:
        """A distance in this model's units as pixels (exact, one rounding)."""
        return value if self.units == "pixels" else float(Fraction(value) * short_side)

    def canvas_diffuse(self, short_side: int) -> float:
        """diffuse on this canvas (see diffuse_on)."""
        return self.diffuse_on(self.diffuse, short_side)

    def diffuse_on(self, diffuse: float, short_side: int) -> float:
        """A diffuse value on this canvas. With units: short_side it is given for a
        REFERENCE_SIDE-pixel short side and grows with the canvas's area, (short_side /
        REFERENCE_SIDE)^2: the 3x3 blend spreads trail by a fixed number of pixels a step, so a
        canvas k times larger needs k^2 times the diffusion for the trail to spread the same
        fraction of it (exact, one rounding)."""
        if self.units == "pixels":
            return diffuse
        return float(Fraction(diffuse) * Fraction(short_side, REFERENCE_SIDE) ** 2)


def all_optional(model: type[BaseModel], name: str) -> type[BaseModel]:
    """A section with model's keys and bounds, every key optional (None: not overridden)."""
    fields = {}
    for key, field in model.model_fields.items():
        optional = optional_form(field.rebuild_annotation())
        if optional is not None:  # a scheduled() type: its bounds live in the type, not the field
            fields[key] = (optional, Field(None, description=field.description))
            continue
        info = copy.copy(field)
        info.default, info.default_factory = None, None
        fields[key] = (field.annotation | None, info)
    return create_model(name, __base__=OptionalSection, **fields)


ModelOverride = all_optional(Model, "ModelOverride")


# run.steps: a count, or `audio` (the soundtrack's frames: render/preset/audio.py); the tags are
# schedule.TAGS, which error paths drop (run.steps, not run.steps.number)
Steps = Annotated[
    Annotated[int, Field(ge=1, le=10_000_000), Tag("number")] | Annotated[Literal["audio"], Tag("track")],
    Discriminator(lambda value: "track" if isinstance(value, str) else "number"),
]


class Run(Section):
    steps: Steps = Field(500, description="steps recorded; audio: the soundtrack's frames (docs/audio.md)")
    steps_per_frame: int = Field(5, ge=1, le=100_000)
    warmup: int = Field(0, ge=0, le=10_000_000, description="steps simulated before the first frame")
