"""The preset's world sections (docs/presets.md, "Worlds"): boundaries, images, walls, food and
species."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from .output_sections import PaletteEntry, check_palette_entry
from .palettes import parse_hex
from .schedule import scheduled
from .sections import SPAWN_NAMES, ModelOverride, OptionalSection, Section, image_path


class TrailImage(Section):
    path: str = Field(
        description="greyscale image; brightness v seeds every species' trail with v / 255 * scale"
    )
    scale: float = Field(1.0, gt=0, le=1e6)

    _path = field_validator("path")(image_path)


class Walls(Section):
    path: str = Field(description="greyscale image: brightness >= threshold is wall")
    threshold: int = Field(128, ge=1, le=255)
    invert: bool = Field(False, description="walls where brightness < threshold instead")

    _path = field_validator("path")(image_path)


class FoodPoint(Section):
    x: float = Field(ge=0, le=1, description="fraction of the width")
    y: float = Field(ge=0, le=1, description="fraction of the height")
    radius: float = Field(0.02, ge=0, le=0.5, description="fraction of the short side")
    amount: scheduled(ge=1e-6, le=1e6) = Field(1.0, description="trail added per cell per step")


class FoodImage(Section):
    path: str = Field(description="greyscale image; brightness v adds v / 255 * amount per step")
    amount: scheduled(gt=0, le=1e6) = Field(1.0, description="brightness 255 adds this per step")

    _path = field_validator("path")(image_path)


class Food(OptionalSection):
    points: list[FoodPoint] = Field(default_factory=list, max_length=256)
    image: FoodImage | None = None


class World(OptionalSection):
    boundary: Literal["wrap", "reflect", "clamp"] = "wrap"
    trail_image: TrailImage | None = None
    walls: Walls | None = None
    food: Food | None = None


class SpeciesAgents(OptionalSection):
    """What a species may set for its own agents (the count is shared: count // S each)."""

    spawn: SPAWN_NAMES | None = None
    radius: float | None = Field(None, gt=0, le=0.5)
    image: str | None = None

    _image = field_validator("image")(image_path)


class Species(OptionalSection):
    name: str = Field("", max_length=64)
    colour: str | None = Field(None, description="'#rrggbb': level v shows (v * c) // 255 per channel")
    palette: PaletteEntry | None = Field(
        None, description="a palette name or hex stops: level v shows its entry v"
    )
    model: ModelOverride = ModelOverride()  # type: ignore[valid-type]
    agents: SpeciesAgents = SpeciesAgents()

    @field_validator("colour")
    @classmethod
    def _hex(cls, colour: str) -> str:
        parse_hex(colour)
        return colour

    @field_validator("palette")
    @classmethod
    def _palette(cls, entry: PaletteEntry) -> PaletteEntry:
        return check_palette_entry(entry)

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return {k: v for k, v in handler(self).items() if v not in (None, {}, "")}

    @model_validator(mode="after")
    def _one_colouring(self) -> Species:
        if self.colour is not None and self.palette is not None:
            raise ValueError("give colour or palette, not both")
        return self


DEFAULT_SPECIES_COLOURS = ("#ff5a1f", "#1fa2ff", "#7dff3a", "#ffd21f")
