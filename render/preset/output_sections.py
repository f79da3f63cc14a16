"""The sections that say how a render looks and what it writes: palette (and its levels),
output (formats, GIF budget, loops, MP4 setting, raw fields) and checkpoint, with their bounds.
The formats and MP4 settings are the format registry's (render/formats/)."""

from __future__ import annotations

import re
from fractions import Fraction
from typing import Literal

from pydantic import Field, field_validator, model_serializer, model_validator

from ..base.errors import did_you_mean
from ..base.inputs import excerpt, shorten
from ..formats.alpha import ALPHA_MODES
from ..formats.gif_targets import GIF_TARGETS  # named budgets, re-exported here
from ..formats.mp4 import MP4_SETTINGS as MP4_SETTING_TABLE
from ..formats.registry import ALL_FORMATS, DEFAULT_FORMATS
from ..formats.still import STILL_FORMATS
from ..formats.targets import FITS, TARGETS
from .palettes import PALETTES, parse_hex
from .sections import OptionalSection, Section

FORMATS = DEFAULT_FORMATS  # the default output.formats (render/formats/registry.py)
MP4_SETTINGS = tuple(MP4_SETTING_TABLE)  # output.mp4's values (render/formats/mp4.py: how each encodes)
GIF_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "kib": 1024, "mib": 1024**2}
GIF_MIN_BUDGET = 1024
LOOP_MODES = Literal["none", "ping-pong", "crossfade", "closest"]
MAX_LOOP_FRAMES = 100_000
LOOP_SHARE = re.compile(r"(\d{1,3}(?:\.\d{1,6})?)%")  # output.loop_frames as a share of the frames


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
    space: Literal["srgb", "oklab"] = Field(
        "srgb",
        description="where smooth palettes interpolate their stops: srgb, or oklab (perceptual, "
        "exact integer arithmetic: render/look/oklab.py)",
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
        if data.get("space") == "srgb":
            data.pop("space")  # the default: dumps (and embedded presets) stay as they were
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


class Volume(Stops):
    """output.volume: the trail volume at chosen steps as float32 .npz/.npy and an isosurface
    mesh (marching cubes at palette level `level`) as OBJ and binary STL; a 2D preset writes its
    space-time stack (the GIF's index frames, T x H x W) once instead (docs/3d.md)."""

    formats: list[Literal["npz", "npy", "obj", "stl"]] = Field(
        default_factory=lambda: ["npz"], min_length=1, max_length=4
    )
    level: int = Field(64, ge=1, le=255, description="the isosurface's palette level (mesh formats)")


BEATS_PER_BAR = 4  # output.loop_bars counts 4/4 bars


def bar_frames(bars: int, bpm: float, fps: int) -> tuple[int, Fraction]:
    """(frames, exact) of `bars` 4/4 bars at `bpm` and `fps`: exact = bars * 4 * 60 * fps / bpm
    frames as a fraction (bpm read as written in decimal), frames = exact rounded to the nearest
    whole frame, halves up (at least 1)."""
    exact = Fraction(bars * BEATS_PER_BAR * 60 * fps) / Fraction(str(bpm))
    return max(1, int(exact + Fraction(1, 2))), exact


class Still(OptionalSection):
    """output.still: the last frame as a print (render/formats/still.py, docs/outputs.md)."""

    scale: int = Field(
        1, ge=1, le=64, description="the print's size: the canvas times this (pixels repeated)"
    )
    dpi: int | None = Field(None, ge=1, le=4800, description="the print resolution in the files")
    formats: list[Literal[STILL_FORMATS]] = Field(
        default_factory=lambda: list(STILL_FORMATS), min_length=1, max_length=3
    )


class Output(OptionalSection):
    formats: list[Literal[ALL_FORMATS]] = Field(default_factory=lambda: list(FORMATS), min_length=1)
    fps: int = Field(30, ge=1, le=100)
    loop: int = Field(0, ge=0, le=65535, description="GIF and WebP repeats, 0 = forever")
    gif_scale: float = Field(1.0, gt=0, le=1, description="GIF size as a fraction of the canvas")
    gif_resample: Literal["nearest", "area"] | None = Field(
        None,
        description="how a GIF smaller than the canvas is made: nearest (unset) or area (exact integer "
        "area averages of the palette indices); not embedded when unset",
    )
    png_dpi: int | None = Field(None, ge=1, le=4800, description="print resolution of the PNG still")
    gif_max_bytes: int | None = Field(
        None, description="GIF byte budget: bytes, a size like '10MB', or a target name (GIF_TARGETS)"
    )

    loop_mode: LOOP_MODES | None = Field(
        None, description="none (default), ping-pong, crossfade or closest: how the animation loops"
    )
    loop_frames: int | str | None = Field(
        None,
        description="crossfade: frames blended into the first ones; closest: the shortest loop; "
        "a count, or a share of the run's frames ('50%'), which a shortened run keeps",
    )

    @field_validator("loop_frames")
    @classmethod
    def _loop_frames(cls, value: int | str | None) -> int | str | None:
        """A count 1 .. MAX_LOOP_FRAMES, or 'P%' with 0 < P <= 100 (Preset.loop turns it into
        frames: floor(frames * P / 100), exactly)."""
        allowed = f"a count 1 to {MAX_LOOP_FRAMES}, or a share of the frames like '50%'"
        if isinstance(value, str):
            share = LOOP_SHARE.fullmatch(value)
            if share is None or not 0 < Fraction(share.group(1)) <= 100:
                raise ValueError(f"must be {allowed} (got {excerpt(value)})")
        elif value is not None and not 1 <= value <= MAX_LOOP_FRAMES:
            raise ValueError(f"must be {allowed} (got {value!r})")
        return value

    sound: bool | None = Field(
        None, description="the MP4 carries the audio section's sound file (unset: yes); false: silent"
    )
    mp4: Literal[MP4_SETTINGS] | None = Field(
        None,
        description="the MP4's encoding: browser (unset), browser-sharp, browser-fast (x264 veryfast: "
        "under half the encoder's time, a little less quality) or master (lossless) in H.264; "
        "hevc (libx265) or av1 (SVT-AV1)",
    )

    alpha: Literal[ALPHA_MODES] | None = Field(
        None,
        description="a transparent background, the trail's light as the alpha: straight or "
        "premultiplied colour (mov, webm, apng, webp, png and --frames-dir keep it; docs/outputs.md)",
    )

    target: Literal[tuple(TARGETS)] | None = Field(
        None, description="fit the MP4 to a platform (render --target): size, aspect, duration, bytes"
    )
    target_fit: Literal[FITS] | None = Field(
        None, description="with output.target: pad (unset: the whole picture, bars) or crop to its aspect"
    )
    still: Still | None = Field(None, description="the last frame as a 16-bit print still (png, tiff, exr)")
    loop_bars: int | None = Field(
        None, ge=1, le=1024, description="the loop's length in 4/4 bars at output.bpm (a VJ host's grid)"
    )
    bpm: float | None = Field(
        None,
        ge=20,
        le=999,
        description="beats a minute of output.loop_bars; unset with an audio section: its tempo (docs/audio.md)",
    )

    @model_validator(mode="after")
    def _bars_and_bpm(self) -> Output:
        """bpm is loop_bars' tempo; loop_bars without it takes the audio section's (audio.resolve
        refuses it without one)."""
        if self.bpm is not None and self.loop_bars is None:
            raise ValueError(
                "output.bpm is the tempo of output.loop_bars: set loop_bars too, or leave bpm out"
            )
        return self

    @field_validator("gif_max_bytes", mode="before")
    @classmethod
    def _gif_budget(cls, value):
        """Bytes, '<number><unit>' (B, KB, MB, KiB, MiB) or a named target, as bytes."""
        return parse_gif_budget(value)

    fields: Fields | None = Field(None, description="raw trail and agent counts at chosen steps")
    volume: Volume | None = Field(None, description="trail volumes and meshes (docs/3d.md)")

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        """Unset keys are left out, and fields always is: like checkpoints, raw fields are
        saved beside a render's outputs and change none of their bytes (docs/outputs.md)."""
        return {k: v for k, v in handler(self).items() if v is not None and k not in ("fields", "volume")}

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
