"""The preset's sections: canvas, agents, model, run, palette and output, with their bounds.

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
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from physarum.kernels.api import MAX_CANVAS, MAX_DISTANCE
from physarum.render.base.errors import did_you_mean
from physarum.render.base.inputs import excerpt, shorten
from physarum.render.formats.mp4 import MP4_SETTINGS as MP4_SETTING_TABLE
from physarum.render.formats.registry import ALL_FORMATS, DEFAULT_FORMATS
from physarum.render.preset.images import image_size
from physarum.render.preset.palettes import PALETTES, parse_hex
from physarum.render.preset.schedule import optional_form, scheduled

NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # of the whole name: NAME_PATTERN.fullmatch
FORMATS = DEFAULT_FORMATS  # the default output.formats (render/formats/registry.py)
MP4_SETTINGS = tuple(MP4_SETTING_TABLE)  # output.mp4's values (render/formats/mp4.py: how each encodes)
MAX_AGENTS = 1 << 28
REFERENCE_SIDE = 512  # the short side at which short_side units give `diffuse` as written
# Named GIF byte budgets: published upload limits as of 2026, which may change (docs/outputs.md,
# "GIF byte budgets", says where each comes from). Decimal megabytes: the smaller reading of "MB".
GIF_TARGETS = {
    "x": 15_000_000,
    "discord": 10_000_000,
    "slack": 5_000_000,
    "telegram": 5_000_000,
    "phone": 5_000_000,
    "preview": 2_000_000,
}
GIF_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "kib": 1024, "mib": 1024**2}
GIF_MIN_BUDGET = 1024
LOOP_MODES = Literal["none", "ping-pong", "crossfade", "closest"]
MAX_LOOP_FRAMES = 100_000


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
    if isinstance(node, list):
        return [portable(item, cwd, keep) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in IMAGE_KEYS and isinstance(value, str):
            value = portable_path(value, cwd, keep)
        out[key] = portable(value, cwd, keep)
    return out


def portable_path(path: str, cwd: Path, keep=()) -> str:
    """An image path as outputs embed it: relative to `cwd` where it lies under it, else as it is;
    a path in `keep` as it is."""
    if path not in keep and Path(path).is_absolute() and Path(path).is_relative_to(cwd):
        return Path(path).relative_to(cwd).as_posix()
    return path


def image_path(path: str | None, info: ValidationInfo) -> str | None:
    """An image path made absolute: relative paths are relative to the preset file's folder
    (the validation context's `base`). Outputs embed it through Preset.portable_dump. Only the
    header is read here; world.image_problems decodes it once the canvas is known. A path the
    context's `carried` images hold (`render --from`, render/preset/carried.py) is kept as it is: the
    render reads that image, not a file. An optional image given as null (`agents.image: null`)
    is no image."""
    if path is None:
        return None
    if not path.strip():
        raise ValueError("an image file path is required")
    if path in (info.context or {}).get("carried", {}):
        return path
    base = (info.context or {}).get("base")
    resolved = Path(path).expanduser()
    if not resolved.is_absolute():
        resolved = Path(base or ".") / resolved
    resolved = os.path.abspath(resolved)  # '..' collapsed, as the shell would show it
    image_size(resolved)  # its header only: ValueError naming the problem; decoded on the canvas later
    return resolved


class Canvas(Section):
    width: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")
    height: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")


SPAWN_NAMES = Literal["random", "disk", "ring", "center", "image"]
DEFAULT_AGENTS = 100_000


class Agents(Section):
    """count, or density (agents per cell; the count is then round-half-even(density * W * H),
    set by the Preset; with model.units: short_side, per cell of a 512-pixel short side). With
    species, the count is the total: each species has count // S."""

    count: int | None = Field(None, ge=1, le=MAX_AGENTS)
    spawn: SPAWN_NAMES = "random"
    radius: float = Field(0.35, gt=0, le=0.5, description="disk/ring radius, fraction of the short side")
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


class Run(Section):
    steps: int = Field(500, ge=1, le=10_000_000)
    steps_per_frame: int = Field(5, ge=1, le=100_000)
    warmup: int = Field(0, ge=0, le=10_000_000, description="steps simulated before the first frame")


class Levels(Section):
    low: float = Field(0.0, ge=0)
    high: float | Literal["auto"] = "auto"
    quantile: float = Field(
        0.99, gt=0, le=1, description="with high: auto, the trail quantile shown at full brightness"
    )

    @model_validator(mode="after")
    def _high_above_low(self) -> Levels:
        if self.high != "auto" and self.high <= self.low:
            raise ValueError(
                f"high must be greater than low, or auto (got high: {self.high!r}, low: {self.low!r})"
            )
        return self


PaletteEntry = str | list[str]


class Palette(Section):
    names: list[PaletteEntry] = Field(default_factory=lambda: ["magma"], min_length=1, max_length=16)
    every: int = Field(60, ge=1, description="frames shown with one palette before the next")
    gamma: float = Field(1.0, gt=0.05, le=20)
    levels: Levels = Levels()
    blend: int = Field(
        0,
        ge=0,
        le=10_000,
        description="frames at the end of each `every` block cross-fading to the next palette",
    )
    layer: Literal["trail", "density", "heading", "mix"] = Field(
        "trail",
        description="what the frames show: the trail, agents per cell, the hue of their mean heading, "
        "or a mix of trail and density",
    )
    layer_mix: float | None = Field(
        None, ge=0, le=1, description="with layer: mix, the density's share of the index (unset: 0.5)"
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        data = handler(self)
        if data.get("blend") == 0:
            data.pop("blend")  # the default (a hard cut): dumps stay as they were before blend existed
        if data.get("layer") == "trail":
            data.pop("layer")  # the default: dumps (and embedded presets) stay as they were
        if data.get("layer_mix") is None:
            data.pop("layer_mix", None)
        return data

    @field_validator("names")
    @classmethod
    def _known_palettes(cls, names: list[PaletteEntry]) -> list[PaletteEntry]:
        for entry in names:
            check_palette_entry(entry)
        return names


def check_palette_entry(entry: PaletteEntry) -> PaletteEntry:
    if isinstance(entry, str) and entry not in PALETTES:
        close = did_you_mean(shorten(entry), PALETTES).strip()
        hint = f" ({close})" if close else ""
        raise ValueError(
            f"unknown palette {excerpt(entry)}{hint}; named palettes: "
            f"{', '.join(sorted(PALETTES))}, or a list of 2 to 256 hex colours"
        )
    if isinstance(entry, list):
        if not 2 <= len(entry) <= 256:
            raise ValueError(f"a colour list needs 2 to 256 hex colours, got {len(entry)}")
        for colour in entry:
            parse_hex(colour)
    return entry


def parse_gif_budget(value) -> int | None:
    """A GIF byte budget as bytes: an integer, a size like '10MB' or '512KiB', or a name of
    GIF_TARGETS; at least GIF_MIN_BUDGET. ValueError names what is allowed."""
    if value is None:
        return None
    allowed = f"bytes (at least {GIF_MIN_BUDGET}), a size like '10MB', or one of {', '.join(GIF_TARGETS)}"
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a budget: {allowed}")
    if isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        if text in GIF_TARGETS:
            return GIF_TARGETS[text]
        match = re.fullmatch(r"(\d+(?:\.\d+)?)(b|kb|mb|kib|mib)?", text)
        if not match:
            raise ValueError(f"{value!r} is not a budget: {allowed}")
        value = int(float(match.group(1)) * GIF_UNITS[match.group(2) or "b"])
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or value < GIF_MIN_BUDGET:
        raise ValueError(f"{value!r} is not a budget: {allowed}")
    return value


MAX_STOPS = 1000  # chosen steps of checkpoints or fields: each writes a file


class Stops(OptionalSection):
    """Steps at which a render stops between frames to write a file: every N steps (N, 2N, ...)
    and at the chosen steps. Step s is the state after s steps, warmup included."""

    every: int | None = Field(None, ge=1, le=10_000_000, description="a file every N steps")
    at: list[int] | None = Field(
        None, max_length=MAX_STOPS, description="steps (warmup included) that write a file"
    )

    @field_validator("at")
    @classmethod
    def _each_step_once(cls, steps: list[int] | None) -> list[int] | None:
        """Chosen steps are at least 1 (step 0 is the spawned state) and named once each."""
        if not steps:
            return steps
        if min(steps) < 1:
            raise ValueError(f"steps are at least 1, the state after the first step (got {min(steps)})")
        twice = sorted({s for s in steps if steps.count(s) > 1})
        if twice:
            raise ValueError(f"names step {', '.join(map(str, twice))} more than once; name each step once")
        return steps

    def steps(self, end: int) -> frozenset[int]:
        """The steps of 1 .. end at which a file is written."""
        every = range(self.every, end + 1, self.every) if self.every else ()
        return frozenset(s for s in (*every, *(self.at or ())) if 1 <= s <= end)


class Checkpoint(Stops):
    """checkpoint: the whole simulation state written to <stem>-checkpoint-<step>.npz
    (docs/checkpoints.md)."""


class Fields(Stops):
    """output.fields: the raw trail and agent counts at chosen steps (docs/outputs.md)."""

    formats: list[Literal["npz", "png"]] = Field(default_factory=lambda: ["npz"], min_length=1, max_length=2)


class Output(OptionalSection):
    formats: list[Literal[ALL_FORMATS]] = Field(default_factory=lambda: list(FORMATS), min_length=1)
    fps: int = Field(30, ge=1, le=100)
    loop: int = Field(0, ge=0, le=65535, description="GIF and WebP repeats, 0 = forever")
    gif_scale: float = Field(1.0, gt=0, le=1, description="GIF size as a fraction of the canvas")
    png_dpi: int | None = Field(None, ge=1, le=4800, description="print resolution of the PNG still")
    gif_max_bytes: int | None = Field(
        None, description="GIF byte budget: bytes, a size like '10MB', or a target name (GIF_TARGETS)"
    )

    loop_mode: LOOP_MODES | None = Field(
        None, description="none (default), ping-pong, crossfade or closest: how the animation loops"
    )
    loop_frames: int | None = Field(
        None,
        ge=1,
        le=MAX_LOOP_FRAMES,
        description="crossfade: frames blended into the first ones; closest: the shortest loop",
    )
    mp4: Literal[MP4_SETTINGS] | None = Field(
        None, description="the MP4's encoding: browser (unset), browser-sharp or master (lossless)"
    )

    @field_validator("gif_max_bytes", mode="before")
    @classmethod
    def _gif_budget(cls, value):
        """Bytes, '<number><unit>' (B, KB, MB, KiB, MiB) or a named target, as bytes."""
        return parse_gif_budget(value)

    fields: Fields | None = Field(None, description="raw trail and agent counts at chosen steps")

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        """Unset keys are left out, and fields always is: like checkpoints, raw fields are
        saved beside a render's outputs and change none of their bytes (docs/outputs.md)."""
        return {k: v for k, v in handler(self).items() if v is not None and k != "fields"}

    @field_validator("formats")
    @classmethod
    def _each_format_once(cls, formats: list[str]) -> list[str]:
        """Two outputs of one format would be one file written twice."""
        twice = sorted({fmt for fmt in formats if formats.count(fmt) > 1})
        if twice:
            raise ValueError(
                f"lists {' and '.join(twice)} more than once; name each format once, "
                f"e.g. {sorted(set(formats), key=list(ALL_FORMATS).index)}"
            )
        return formats
