"""Presets: the YAML schema, loading with layered overrides, and errors a user can act on.

Precedence: defaults < preset file < `--set key=value` < explicit flags. Every problem found is
reported at once as one PresetError naming the file, the key path, the bad value and what is
allowed; nothing is rendered or written until a preset is valid.
"""

from __future__ import annotations

import copy
import difflib
import math
import os
import re
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    create_model,
    field_validator,
    model_serializer,
    model_validator,
)

from physarum.kernels.api import MAX_CANVAS, MAX_DISTANCE, MAX_SPECIES, ModelParams, species_seed
from physarum.render.palette import PALETTES, parse_hex

NAME_PATTERN = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
FORMATS = ("gif", "mp4", "png")
MAX_AGENTS = 1 << 28
REFERENCE_SIDE = 512  # the short side at which short_side units give `diffuse` as written
MP4_MAX_SIDE = 8192  # beyond H.264's largest level; players refuse such streams


class PresetError(Exception):
    """One or more problems with a preset; str() is the full, user-facing report."""

    def __init__(self, problems: list[str]):
        self.problems = problems
        super().__init__("\n".join(problems))


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class _Optional(_Section):
    """A section whose unset (None) keys are left out of dumps, so that presets without the
    world keys dump (and embed in outputs) exactly as before they existed."""

    @model_serializer(mode="wrap")
    def _drop_none(self, handler):
        return {k: v for k, v in handler(self).items() if v is not None}


_PATH_KEYS = ("path", "image")


def _portable(node, cwd: Path):
    """A dump with every absolute image path under `cwd` made relative to it."""
    if isinstance(node, list):
        return [_portable(item, cwd) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in _PATH_KEYS and isinstance(value, str) and Path(value).is_absolute():
            if Path(value).is_relative_to(cwd):
                value = Path(value).relative_to(cwd).as_posix()
        out[key] = _portable(value, cwd)
    return out


def _image_path(path: str, info: ValidationInfo) -> str:
    """An image path made absolute: relative paths are relative to the preset file's folder
    (the validation context's `base`). Outputs embed it through Preset.portable_dump."""
    if not path.strip():
        raise ValueError("an image file path is required")
    base = (info.context or {}).get("base")
    resolved = Path(path).expanduser()
    if not resolved.is_absolute():
        resolved = Path(base or ".") / resolved
    resolved = os.path.abspath(resolved)  # '..' collapsed, as the shell would show it
    from physarum.render.world import read_grey  # raises ValueError naming the problem

    read_grey(resolved)
    return resolved


class Canvas(_Section):
    width: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")
    height: int = Field(512, ge=8, le=MAX_CANVAS, description="pixels")


SPAWN_NAMES = Literal["random", "disk", "ring", "center", "image"]
DEFAULT_AGENTS = 100_000


class Agents(_Section):
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

    _image = field_validator("image")(_image_path)

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


class Model(_Section):
    sensor_angle: float = Field(22.5, ge=0, le=180, description="degrees")
    sensor_distance: float = Field(9.0, gt=0, le=MAX_DISTANCE, description="pixels")
    turn_angle: float = Field(45.0, ge=0, le=180, description="degrees")
    step_size: float = Field(1.0, gt=0, le=MAX_DISTANCE, description="pixels per step")
    deposit: float = Field(5.0, gt=0, le=1e6, description="trail added per agent per step")
    diffuse: float = Field(1.0, ge=0, le=1, description="share of the 3x3 mean blended in")
    decay: float = Field(0.1, ge=0, lt=1, description="share of the trail lost per step")
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
        value = getattr(self, key)
        return value if self.units == "pixels" else float(Fraction(value) * short_side)

    def canvas_diffuse(self, short_side: int) -> float:
        """diffuse on this canvas. With units: short_side it is given for a REFERENCE_SIDE-pixel
        short side and grows with the canvas's area, (short_side / REFERENCE_SIDE)^2: the 3x3
        blend spreads trail by a fixed number of pixels a step, so a canvas k times larger needs
        k^2 times the diffusion for the trail to spread the same fraction of it (exact, one
        rounding)."""
        if self.units == "pixels":
            return self.diffuse
        return float(Fraction(self.diffuse) * Fraction(short_side, REFERENCE_SIDE) ** 2)


def _all_optional(model: type[BaseModel], name: str) -> type[BaseModel]:
    """A section with model's keys and bounds, every key optional (None: not overridden)."""
    fields = {}
    for key, field in model.model_fields.items():
        info = copy.copy(field)
        info.default, info.default_factory = None, None
        fields[key] = (field.annotation | None, info)
    return create_model(name, __base__=_Optional, **fields)


ModelOverride = _all_optional(Model, "ModelOverride")


class Run(_Section):
    steps: int = Field(500, ge=1, le=10_000_000)
    steps_per_frame: int = Field(5, ge=1, le=100_000)
    warmup: int = Field(0, ge=0, le=10_000_000, description="steps simulated before the first frame")


class Levels(_Section):
    low: float = Field(0.0, ge=0)
    high: float | Literal["auto"] = "auto"
    quantile: float = Field(
        0.99, gt=0, le=1, description="with high: auto, the trail quantile shown at full brightness"
    )


PaletteEntry = str | list[str]


class Palette(_Section):
    names: list[PaletteEntry] = Field(default_factory=lambda: ["magma"], min_length=1, max_length=16)
    every: int = Field(60, ge=1, description="frames shown with one palette before the next")
    gamma: float = Field(1.0, gt=0.05, le=20)
    levels: Levels = Levels()

    @field_validator("names")
    @classmethod
    def _known_palettes(cls, names: list[PaletteEntry]) -> list[PaletteEntry]:
        for entry in names:
            check_palette_entry(entry)
        return names


def check_palette_entry(entry: PaletteEntry) -> PaletteEntry:
    if isinstance(entry, str) and entry not in PALETTES:
        close = difflib.get_close_matches(entry, PALETTES, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise ValueError(
            f"unknown palette {entry!r}{hint}; named palettes: "
            f"{', '.join(sorted(PALETTES))}, or a list of 2 to 256 hex colours"
        )
    if isinstance(entry, list):
        if not 2 <= len(entry) <= 256:
            raise ValueError(f"a colour list needs 2 to 256 hex colours, got {len(entry)}")
        for colour in entry:
            parse_hex(colour)
    return entry


class Output(_Optional):
    formats: list[Literal["gif", "mp4", "png"]] = Field(default_factory=lambda: list(FORMATS), min_length=1)
    fps: int = Field(30, ge=1, le=100)
    loop: int = Field(0, ge=0, le=65535, description="GIF repeats, 0 = forever")
    gif_scale: float = Field(1.0, gt=0, le=1, description="GIF size as a fraction of the canvas")
    png_dpi: int | None = Field(None, ge=1, le=4800, description="print resolution of the PNG still")


# ---------------------------------------------------------------------------------------------
# Worlds (docs/presets.md, "Worlds"): boundaries, images, walls, food, species


class TrailImage(_Section):
    path: str = Field(
        description="greyscale image; brightness v seeds every species' trail with v / 255 * scale"
    )
    scale: float = Field(1.0, gt=0, le=1e6)

    _path = field_validator("path")(_image_path)


class Walls(_Section):
    path: str = Field(description="greyscale image: brightness >= threshold is wall")
    threshold: int = Field(128, ge=1, le=255)
    invert: bool = Field(False, description="walls where brightness < threshold instead")

    _path = field_validator("path")(_image_path)


class FoodPoint(_Section):
    x: float = Field(ge=0, le=1, description="fraction of the width")
    y: float = Field(ge=0, le=1, description="fraction of the height")
    radius: float = Field(0.02, ge=0, le=0.5, description="fraction of the short side")
    amount: float = Field(1.0, ge=1e-6, le=1e6, description="trail added per cell per step")


class FoodImage(_Section):
    path: str = Field(description="greyscale image; brightness v adds v / 255 * amount per step")
    amount: float = Field(1.0, gt=0, le=1e6)

    _path = field_validator("path")(_image_path)


class Food(_Optional):
    points: list[FoodPoint] = Field(default_factory=list, max_length=256)
    image: FoodImage | None = None


class World(_Optional):
    boundary: Literal["wrap", "reflect", "clamp"] = "wrap"
    trail_image: TrailImage | None = None
    walls: Walls | None = None
    food: Food | None = None


class SpeciesAgents(_Optional):
    """What a species may set for its own agents (the count is shared: count // S each)."""

    spawn: SPAWN_NAMES | None = None
    radius: float | None = Field(None, gt=0, le=0.5)
    image: str | None = None

    _image = field_validator("image")(_image_path)


class Species(_Optional):
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
    world: World | None = None
    species: list[Species] | None = Field(None, min_length=1, max_length=MAX_SPECIES)
    interaction: list[list[float]] | None = Field(
        None, description="S x S: row s holds the weights species s gives each species' trail"
    )

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        return {
            k: v
            for k, v in handler(self).items()
            if v is not None or k not in ("world", "species", "interaction")
        }

    @model_validator(mode="after")
    def _agent_density(self) -> Preset:
        """agents.density becomes agents.count (round half to even, exact), at least 1."""
        if self.agents.density is not None:
            object.__setattr__(self.agents, "count", max(1, round(self._density_count())))
        return self

    def _density_count(self) -> Fraction:
        """The exact agent count agents.density gives: density * W * H; with units: short_side,
        density per pixel of a REFERENCE_SIDE short side, density * W * H * (REFERENCE_SIDE / short)^2.
        The pattern's scale follows the number of agents per unit of *canvas* area (measured:
        docs/presets.md, "Resolution independence"), so a preset in canvas units keeps that fixed."""
        width, height = self.canvas.width, self.canvas.height
        cells = Fraction(width * height)
        if self.model.units == "short_side":
            cells *= Fraction(REFERENCE_SIDE, min(width, height)) ** 2
        return Fraction(self.agents.density) * cells

    @field_validator("name")
    @classmethod
    def _file_safe_name(cls, name: str) -> str:
        if not NAME_PATTERN.match(name):
            raise ValueError(
                "names become file names: 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or digit"
            )
        return name

    @property
    def frames(self) -> int:
        return math.ceil(self.run.steps / self.run.steps_per_frame)

    @property
    def species_count(self) -> int:
        """S, the species per simulation (1 without a species section)."""
        return len(self.species) if self.species else 1

    @property
    def agents_per_species(self) -> int:
        return self.agents.count // self.species_count

    @property
    def boundary(self) -> str:
        return self.world.boundary if self.world else "wrap"

    @property
    def has_world(self) -> bool:
        """Whether anything beyond the plain model is set (world, species or an image spawn)."""
        return (
            self.world is not None
            or self.species is not None
            or any(self.species_agents(s).spawn == "image" for s in range(self.species_count))
        )

    def species_model(self, s: int) -> Model:
        """The model of species s: the top-level model with the species' overrides."""
        if not self.species:
            return self.model
        override = self.species[s].model.model_dump(exclude_none=True)
        return Model.model_validate({**self.model.model_dump(), "units": self.model.units, **override})

    def species_agents(self, s: int) -> Agents:
        """agents of species s: spawn, radius and image may be overridden (not the count)."""
        if not self.species:
            return self.agents
        override = self.species[s].agents.model_dump(exclude_none=True)
        return self.agents.model_copy(update=override)

    def model_params(self, s: int = 0) -> ModelParams:
        """The kernels' parameters of species s (distances in pixels, the species' own seed)."""
        m = self.species_model(s)
        short = min(self.canvas.width, self.canvas.height)
        return ModelParams(
            m.sensor_angle,
            m.pixels("sensor_distance", short),
            m.turn_angle,
            m.pixels("step_size", short),
            m.deposit,
            m.canvas_diffuse(short),
            m.decay,
            species_seed(self.seed, s),
        )

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.portable_dump(), sort_keys=False)

    def portable_dump(self) -> dict:
        """The preset as plain data, with image paths under the working directory written
        relative to it (what outputs embed: the same bytes on every machine that renders from
        the same relative place; `render --from` reads them relative to its working directory).
        Images elsewhere keep their absolute paths."""
        return _portable(self.model_dump(mode="json"), Path.cwd())


# ---------------------------------------------------------------------------------------------
# Loading


def _model_at(loc: tuple) -> type[BaseModel] | None:
    """The schema section at a key path, to suggest the keys it allows."""
    model: Any = Preset
    for key in loc:
        if isinstance(model, list):  # a list of sections: the key is an index
            model = model[0] if isinstance(key, int) else None
            continue
        field = model.model_fields.get(key) if isinstance(key, str) else None
        annotation = _section_type(field.annotation) if field is not None else None
        if annotation is None:
            return None
        model = annotation
    return model if isinstance(model, type) else None


def _section_type(annotation: Any) -> Any:
    """The section class of an annotation (X, Optional[X]) or [X] for list[X]; else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    if getattr(annotation, "__origin__", None) is list and len(args) == 1:
        inner = _section_type(args[0])
        return [inner] if inner is not None else None
    if len(args) == 1:
        return _section_type(args[0])
    return None


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
    species = preset.species_count
    for s in range(species):
        model = preset.species_model(s)
        overridden = preset.species is not None and preset.species[s].model.model_dump(exclude_none=True)
        for key in ("sensor_distance", "step_size"):
            where = (
                f"species.{s}.model.{key}"
                if overridden and (key in overridden or "units" in overridden)
                else f"model.{key}"
            )
            if s > 0 and where.startswith("model."):
                continue  # the same value as species 0's: reported once
            value, pixels = getattr(model, key), model.pixels(key, short)
            unit = "" if model.units == "pixels" else f" ({pixels:g} pixels with units: short_side)"
            if pixels >= short / 2:
                problems.append(
                    f"{where}: must be less than half the canvas's short side "
                    f"({short / 2:g} pixels) (got {value!r}{unit})"
                )
            elif pixels > MAX_DISTANCE or pixels <= 0:
                problems.append(
                    f"{where}: must be more than 0 and at most {MAX_DISTANCE:g} pixels (got {value!r}{unit})"
                )
        diffuse = model.canvas_diffuse(short)
        where = f"species.{s}.model.diffuse" if overridden and "diffuse" in overridden else "model.diffuse"
        if diffuse > 1 and (s == 0 or where.startswith("species")):
            most = float(Fraction(REFERENCE_SIDE, short) ** 2)
            problems.append(
                f"{where}: with units: short_side, diffuse is given for a {REFERENCE_SIDE}-pixel "
                f"short side and grows with the canvas area; on a {short}-pixel short side "
                f"it becomes {diffuse:g}, more than 1: use at most {most:.4g} (got {model.diffuse!r})"
            )
    if preset.run.steps + preset.run.warmup > 10_000_000:
        problems.append("run: steps + warmup must be at most 10000000")
    agents = preset.agents
    if agents.density is not None and agents.count > MAX_AGENTS:
        problems.append(
            f"agents.density: gives {agents.count} agents on {preset.canvas.width}x"
            f"{preset.canvas.height}; at most {MAX_AGENTS} are allowed (got {agents.density!r})"
        )
    if agents.count // species < 1:
        problems.append(
            f"agents.count: {species} species share the agents equally (count // {species} "
            f"each), so at least {species} are needed (got {agents.count!r})"
        )
    for s in range(species):
        spawn = preset.species_agents(s)
        where = (
            f"species.{s}.agents" if preset.species and preset.species[s].agents.model_dump() else "agents"
        )
        if s > 0 and where == "agents":
            continue
        if spawn.spawn == "image" and spawn.image is None:
            problems.append(f"{where}.image: spawn: image needs an image file of agent density (got none)")
        if spawn.spawn != "image" and spawn.image is not None:
            problems.append(f"{where}.image: only used with spawn: image (spawn is {spawn.spawn!r})")
    problems.extend(_interaction_problems(preset))
    return problems


def _interaction_problems(preset: Preset) -> list[str]:
    matrix = preset.interaction
    if matrix is None:
        return []
    if preset.species is None:
        return [
            f"interaction: needs a species list (one row and column per species) "
            f"(got {matrix!r} without species)"
        ]
    species = preset.species_count
    rows, columns = len(matrix), sorted({len(row) for row in matrix})
    if rows != species or columns != [species]:
        found = (
            f"{rows} x {columns[0]}"
            if len(columns) == 1
            else f"{rows} rows of {', '.join(map(str, columns))}"
        )
        return [
            f"interaction: must be {species} x {species} (one row and column per species), "
            f"found {found} (got {matrix!r})"
        ]
    problems = []
    for s, row in enumerate(matrix):
        for j, value in enumerate(row):
            if not -1e3 <= value <= 1e3:
                problems.append(f"interaction.{s}.{j}: must be from -1000 to 1000 (got {value!r})")
    if species == 1 and matrix != [[1.0]]:
        problems.append(
            f"interaction: one species senses its own trail as it is: [[1]] or no "
            f"interaction (got {matrix!r})"
        )
    return problems


def _parse_yaml(text: str, source: str) -> dict:
    try:
        data = yaml.safe_load(text)
    except yaml.constructor.ConstructorError as error:
        where = f" at line {error.problem_mark.line + 1}" if error.problem_mark else ""
        raise PresetError(
            [
                f"{source}: YAML tag not allowed{where}: {error.problem}; presets are "
                "plain data (mappings, lists, numbers, strings)"
            ]
        ) from None
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


def build_preset(
    data: dict,
    source: str,
    settings: list[str] = (),
    overrides: dict | None = None,
    base: str | Path | None = None,
) -> Preset:
    """Validate raw data plus `--set` settings and explicit flag overrides into a Preset.

    Relative image paths are relative to `base` (default: the folder of `source`) and become
    absolute. Images are opened and checked here too, so every problem is reported at once."""
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
    base = Path(source).parent if base is None else Path(base)
    try:
        preset = Preset.model_validate(data, context={"base": base})
    except ValidationError as error:
        problems.extend(f"{source}: {_describe(e)}" for e in error.errors())
        raise PresetError(problems) from None
    problems.extend(f"{source}: {p}" for p in _relations(preset))
    from physarum.render.world import image_problems  # what the images mean on this canvas

    problems.extend(f"{source}: {p}" for p in image_problems(preset))
    if problems:
        raise PresetError(problems)
    return preset


def load_preset(path: str | Path, settings: list[str] = (), overrides: dict | None = None) -> Preset:
    """Read, override and validate a preset file."""
    return build_preset(read_preset_file(path), str(path), settings, overrides, Path(path).parent)
