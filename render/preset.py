"""Presets: the YAML schema, loading with layered overrides, and errors a user can act on.

Precedence: defaults < preset file < `--set key=value` < explicit flags. Every problem found is
reported at once as one PresetError naming the file, the key path, the bad value and what is
allowed; nothing is rendered or written until a preset is valid.
"""

from __future__ import annotations

import copy
import difflib
import math
import re
from pathlib import Path
from typing import Any, Literal, Union

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from physarum.kernels.api import MAX_CANVAS, MAX_DISTANCE, ModelParams
from physarum.render.palette import PALETTES, parse_hex

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
FORMATS = ("gif", "mp4", "png")
MAX_AGENTS = 1 << 28
MP4_MAX_SIDE = 8192  # beyond H.264's largest level; players refuse such streams


class PresetError(Exception):
    """One or more problems with a preset; str() is the full, user-facing report."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class Canvas(_Section):
    width: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")
    height: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")


class Agents(_Section):
    count: int = Field(100_000, ge=1, le=MAX_AGENTS)
    spawn: Literal["random", "disk", "ring", "center"] = "random"
    radius: float = Field(0.35, gt=0, le=0.5, description="disk/ring radius, fraction of the short side")


class Model(_Section):
    sensor_angle: float = Field(22.5, ge=0, le=180, description="degrees")
    sensor_distance: float = Field(9.0, gt=0, le=MAX_DISTANCE, description="pixels")
    turn_angle: float = Field(45.0, ge=0, le=180, description="degrees")
    step_size: float = Field(1.0, gt=0, le=MAX_DISTANCE, description="pixels per step")
    deposit: float = Field(5.0, gt=0, le=1e6, description="trail added per agent per step")
    diffuse: float = Field(1.0, ge=0, le=1, description="share of the 3x3 mean blended in")
    decay: float = Field(0.1, ge=0, lt=1, description="share of the trail lost per step")


class Run(_Section):
    steps: int = Field(500, ge=1, le=10_000_000)
    steps_per_frame: int = Field(5, ge=1, le=100_000)
    warmup: int = Field(0, ge=0, le=10_000_000, description="steps simulated before the first frame")


class Levels(_Section):
    low: float = Field(0.0, ge=0)
    high: Union[float, Literal["auto"]] = "auto"
    quantile: float = Field(0.99, gt=0, le=1, description="with high: auto, the trail quantile shown at full brightness")


PaletteEntry = Union[str, list[str]]


class Palette(_Section):
    names: list[PaletteEntry] = Field(default_factory=lambda: ["magma"], min_length=1, max_length=16)
    every: int = Field(60, ge=1, description="frames shown with one palette before the next")
    gamma: float = Field(1.0, gt=0.05, le=20)
    levels: Levels = Levels()

    @field_validator("names")
    @classmethod
    def _known_palettes(cls, names: list[PaletteEntry]) -> list[PaletteEntry]:
        for entry in names:
            if isinstance(entry, str) and entry not in PALETTES:
                close = difflib.get_close_matches(entry, PALETTES, n=1)
                hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ValueError(f"unknown palette {entry!r}{hint}; named palettes: "
                                 f"{', '.join(sorted(PALETTES))}, or a list of 2 to 256 hex colours")
            if isinstance(entry, list):
                if not 2 <= len(entry) <= 256:
                    raise ValueError(f"a colour list needs 2 to 256 hex colours, got {len(entry)}")
                for colour in entry:
                    parse_hex(colour)
        return names


class Output(_Section):
    formats: list[Literal["gif", "mp4", "png"]] = Field(default_factory=lambda: list(FORMATS), min_length=1)
    fps: int = Field(30, ge=1, le=100)
    loop: int = Field(0, ge=0, le=65535, description="GIF repeats, 0 = forever")
    gif_scale: float = Field(1.0, gt=0, le=1, description="GIF size as a fraction of the canvas")


class Preset(_Section):
    name: str
    description: str = ""
    seed: int = Field(0, ge=0, le=2**32 - 1)
    canvas: Canvas = Canvas()
    agents: Agents = Agents()
    model: Model = Model()
    run: Run = Run()
    palette: Palette = Palette()
    output: Output = Output()

    @field_validator("name")
    @classmethod
    def _file_safe_name(cls, name: str) -> str:
        if not NAME_PATTERN.match(name):
            raise ValueError("names become file names: 1 to 64 of a-z, 0-9, '_' and '-', "
                             "starting with a letter or digit")
        return name

    @property
    def frames(self) -> int:
        return math.ceil(self.run.steps / self.run.steps_per_frame)

    def model_params(self) -> ModelParams:
        m = self.model
        return ModelParams(m.sensor_angle, m.sensor_distance, m.turn_angle, m.step_size,
                           m.deposit, m.diffuse, m.decay, self.seed)

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.model_dump(mode="json"), sort_keys=False)


# ---------------------------------------------------------------------------------------------
# Loading


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The schema section at a key path, to suggest the keys it allows."""
    model: Any = Preset
    for key in loc:
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is None or not (isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel)):
            return None
        model = field.annotation
    return model


def _describe(error: dict) -> str:
    loc = tuple(error["loc"])
    path = ".".join(str(part) for part in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        section = _model_at(loc[:-1])
        allowed = list(section.model_fields) if section else []
        close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        return f"{path}: unknown key; {hint}allowed here: {', '.join(allowed)}"
    message = error["msg"].removeprefix("Value error, ")
    if isinstance(error.get("input"), float) and not math.isfinite(error["input"]):
        message = "must be a finite number"
    return f"{path}: {message} (got {error.get('input')!r})"


def _relations(preset: Preset) -> list[str]:
    """Problems that involve several keys at once."""
    problems = []
    short = min(preset.canvas.width, preset.canvas.height)
    for key in ("sensor_distance", "step_size"):
        value = getattr(preset.model, key)
        if value >= short / 2:
            problems.append(f"model.{key}: must be less than half the canvas's short side "
                            f"({short / 2:g} pixels) (got {value!r})")
    if preset.run.steps + preset.run.warmup > 10_000_000:
        problems.append("run: steps + warmup must be at most 10000000")
    return problems


def _parse_yaml(text: str, source: str) -> dict:
    try:
        data = yaml.safe_load(text)
    except yaml.constructor.ConstructorError as error:
        where = f" at line {error.problem_mark.line + 1}" if error.problem_mark else ""
        raise PresetError([f"{source}: YAML tag not allowed{where}: {error.problem}; presets are "
                           "plain data (mappings, lists, numbers, strings)"]) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise PresetError([f"{source}: malformed YAML{where}: {problem}"]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PresetError([f"{source}: a preset is a mapping of keys to values, got {type(data).__name__}"])
    return data


def read_preset_file(path: str | Path) -> dict:
    """The raw mapping of a YAML preset file (not yet validated)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PresetError([f"{path}: no such preset file"]) from None
    except IsADirectoryError:
        raise PresetError([f"{path}: is a folder, not a preset file"]) from None
    except (OSError, UnicodeDecodeError) as error:
        raise PresetError([f"{path}: cannot read preset: {error}"]) from None
    return _parse_yaml(text, str(path))


def apply_setting(data: dict, setting: str) -> None:
    """Apply one `key.path=value` override in place; the value is parsed as YAML."""
    key, sep, raw = setting.partition("=")
    if not sep or not key.strip():
        raise PresetError([f"--set {setting!r}: expected key.path=value, e.g. model.decay=0.05"])
    value = _parse_yaml(f"v: {raw}", f"--set {key}")["v"] if raw.strip() else None
    node = data
    parts = key.strip().split(".")
    for part in parts[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise PresetError([f"--set {key}: {part!r} is not a section"])
        node = child
    node[parts[-1]] = value


def build_preset(data: dict, source: str, settings: list[str] = (), overrides: dict | None = None) -> Preset:
    """Validate raw data plus `--set` settings and explicit flag overrides into a Preset."""
    data = copy.deepcopy(data)
    problems = []
    for setting in settings:
        try:
            apply_setting(data, setting)
        except PresetError as error:
            problems.extend(error.problems)
    for key, value in (overrides or {}).items():
        if value is not None:
            data[key] = value
    try:
        preset = Preset.model_validate(data)
    except ValidationError as error:
        problems.extend(f"{source}: {_describe(e)}" for e in error.errors())
        raise PresetError(problems) from None
    problems.extend(f"{source}: {p}" for p in _relations(preset))
    if problems:
        raise PresetError(problems)
    return preset


def load_preset(path: str | Path, settings: list[str] = (), overrides: dict | None = None) -> Preset:
    """Read, override and validate a preset file."""
    return build_preset(read_preset_file(path), str(path), settings, overrides)
