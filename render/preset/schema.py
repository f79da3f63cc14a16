"""The whole preset: its sections, what the kernels take from it, and the walk through its schema
that error messages, --set and sweeps use to name keys."""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)

from ...kernels.limits import MAX_SPECIES, ONE, ModelParams
from ..base.errors import did_you_mean
from ..base.inputs import excerpt, shorten
from ..formats.mp4_audio import Soundtrack
from . import audio as soundtrack
from .audio import Audio
from .camera import Camera
from .look_section import Look
from .output_sections import Checkpoint, Output, Palette
from .schedule import (
    Schedule,
    is_scheduled,
    key_fraction,
    needs_its_preset,
    optional_form,
    scheduled,
    schedules_in,
    value_at,
)
from .sections import (
    NAME_PATTERN,
    Agents,
    Canvas,
    Model,
    Run,
    Section,
    portable,
    portable_path,
    saved_in,
)
from .units import density_count
from .worlds import Species, World

Weight = scheduled(allow_inf_nan=False)  # an interaction weight; load.py checks its range


class Preset(Section):
    name: str
    description: str = ""
    seed: int = Field(0, ge=0, le=2**32 - 1)
    canvas: Canvas = Canvas()
    agents: Agents = Agents()
    model: Model = Model()
    run: Run = Run()
    palette: Palette = Palette()
    look: Look | None = Field(None, description="the exact HDR look (render/look/hdr.py); unset: flat")
    output: Output = Output()
    world: World | None = None
    species: list[Species] | None = Field(None, min_length=1, max_length=MAX_SPECIES)
    interaction: list[list[Weight]] | None = Field(
        None, description="S x S: row s holds the weights species s gives each species' trail"
    )
    checkpoint: Checkpoint | None = Field(None, description="the simulation state written at chosen steps")
    camera: Camera | None = Field(None, description="3D presets: how the trail volume is seen (docs/3d.md)")
    audio: Audio | None = Field(None, description="the soundtrack schedules follow (docs/audio.md)")

    _carried: dict = PrivateAttr(default_factory=dict)  # path -> image: what `render --from` reads
    _audio_problems: list = PrivateAttr(default_factory=list)

    @model_validator(mode="after")
    def _keep_carried(self, info: ValidationInfo) -> Preset:
        """The images the validation context carries (`render --from`), by path, for preset/images.py."""
        self._carried = dict((info.context or {}).get("carried", {}))
        return self

    @property
    def carried(self) -> dict:
        """The images this preset reads instead of files, by path (render/preset/carried.py); empty but for
        a preset `render --from` read from a file."""
        return self._carried

    @model_serializer(mode="wrap")
    def _dump(self, handler):
        """Unset world keys are left out; checkpoint always is: it says how a render keeps its
        state, not what it renders, so outputs (which embed the dump) are the same bytes with
        and without checkpoints (docs/checkpoints.md)."""
        return {
            k: v
            for k, v in handler(self).items()
            if (v is not None or k not in ("world", "species", "interaction", "camera", "look", "audio"))
            and k != "checkpoint"
        }

    @model_validator(mode="after")
    def _follow_audio(self, info: ValidationInfo) -> Preset:
        """Followed and periodic keys get their curves, run.steps: audio its steps
        (render/preset/audio.py); what cannot be resolved is kept for load.py to report."""
        self._carried = dict((info.context or {}).get("carried", {}))
        self._audio_problems = soundtrack.resolve(self, info.context)
        return self

    @property
    def audio_problems(self) -> list[str]:
        """Why the preset's audio section or followed keys cannot be resolved (empty: resolved)."""
        return self._audio_problems

    @property
    def sound(self) -> bool:
        """Whether the MP4 carries the soundtrack: a sound file is there (a file, or carried) and
        output.sound is not false."""
        return self.audio is not None and self.audio.path is not None and self.output.sound is not False

    @property
    def soundtrack(self) -> Soundtrack | None:
        """What the MP4 carries as its audio stream (render/formats/mp4_audio.py): the sound file,
        or the bytes a --from file carries (audio.carry); None where the preset has no sound file
        or output.sound is false, and where a --from file carries only the features."""
        if not self.sound:
            return None
        entry = self._carried.get(self.audio.path)
        if entry is not None:
            sound = getattr(entry, "sound", None)
            return None if sound is None else Soundtrack(sound, self.audio.path)
        return Soundtrack(self.audio.path, self.audio.path)

    @model_validator(mode="after")
    def _look_of_one_map(self) -> Preset:
        """A look colours one map (the trail or density layer of a preset without species)."""
        if self.look is not None and (self.species is not None or self.palette.layer in ("heading", "mix")):
            raise ValueError(
                "look: colours one map, the trail or density layer of a preset without species; "
                f"remove the look section (palette.layer is {self.palette.layer!r}, species "
                f"{'set' if self.species else 'unset'})"
            )
        return self

    @model_validator(mode="after")
    def _agent_density(self) -> Preset:
        """agents.density becomes agents.count (round half to even, exact), at least 1."""
        if self.agents.density is not None:
            object.__setattr__(self.agents, "count", max(1, round(self._density_count())))
        return self

    def _density_count(self) -> Fraction:
        """The exact agent count agents.density gives (units.density_count)."""
        canvas = self.canvas
        sides = (canvas.width, canvas.height, *(() if canvas.depth is None else (canvas.depth,)))
        return density_count(self.agents.density, sides, self.model.units)

    @field_validator("name")
    @classmethod
    def _file_safe_name(cls, name: str) -> str:
        if not NAME_PATTERN.fullmatch(name):
            raise ValueError(
                "names become file names: 1 to 64 of a-z, 0-9, '_' and '-', starting with a letter or digit"
            )
        return name

    @property
    def frames(self) -> int:
        return math.ceil(self.run.steps / self.run.steps_per_frame)

    @property
    def loop(self) -> tuple[str, int]:
        """(output.loop_mode, output.loop_frames) with their defaults: none; for crossfade, the
        frames blended (frames // 8, at least 1); for closest, the shortest loop (frames // 8, at
        least 2); 0 where the mode takes no count. A share ('50%') is floor(frames * P / 100),
        exactly, at least those least counts."""
        mode, count = self.output.loop_mode or "none", self.output.loop_frames
        if mode in ("none", "ping-pong"):
            return mode, 0
        least = 1 if mode == "crossfade" else 2
        if isinstance(count, str):
            return mode, max(least, math.floor(self.frames * Fraction(count[:-1]) / 100))
        return mode, count if count is not None else max(least, self.frames // 8)

    @property
    def dims(self) -> int:
        """The spatial dimensions of the preset's world: 2 (a canvas of width and height), or 3
        where canvas.depth is set; the simulation's backend must simulate as many
        (kernels/api.py, Simulation.dims)."""
        return 2 if self.canvas.depth is None else 3

    @property
    def short_side(self) -> int:
        """The canvas's shortest side (of the volume's three in 3D): short_side units and the
        distance bounds are measured in it."""
        return min(self.canvas.width, self.canvas.height, self.canvas.depth or self.canvas.width)

    @property
    def frame_size(self) -> tuple[int, int]:
        """(width, height) of the frames the outputs show: the canvas in 2D; in 3D the camera's
        image (camera.width/height, each unset side the canvas's; docs/3d.md)."""
        if self.dims == 3:
            return (self.camera or Camera()).size(self.canvas.width, self.canvas.height)
        return self.canvas.width, self.canvas.height

    @property
    def end_step(self) -> int:
        """The step of the last frame: warmup + steps."""
        return self.run.warmup + self.run.steps

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
        species = self.species[s].model
        if any(
            needs_its_preset(getattr(m, key)) for m in (self.model, species) for key in Model.model_fields
        ):
            # the values themselves (what the preset resolved is no part of their dump), checked already
            values = {key: getattr(self.model, key) for key in Model.model_fields}
            values.update({k: v for k in Model.model_fields if (v := getattr(species, k)) is not None})
            return Model.model_construct(**values)
        override = species.model_dump(exclude_none=True)
        return Model.model_validate({**self.model.model_dump(), "units": self.model.units, **override})

    def species_agents(self, s: int) -> Agents:
        """agents of species s: spawn, radius and image may be overridden (not the count)."""
        if not self.species:
            return self.agents
        override = self.species[s].agents.model_dump(exclude_none=True)
        return self.agents.model_copy(update=override)

    def model_params(self, s: int = 0, step: int = 0) -> ModelParams:
        """The kernels' parameters of species s at `step` (distances in pixels, the species' own
        seed). A scheduled value is exact until it is rounded here once: a distance to a whole
        1/65536 pixel (the agents' fixed point, so a ramp's tables are quick to build), the rest
        to the nearest float."""
        from ...kernels.spawn import species_seed  # start-up: torch loads only for a simulation

        m = self.species_model(s)
        short = self.short_side
        end = self.end_step

        def plain(key: str) -> float:
            value = getattr(m, key)
            return float(value_at(value, step, end)) if is_scheduled(value) else value

        def distance(key: str) -> float:
            value = getattr(m, key)
            if not is_scheduled(value):
                return m.pixels(key, short)
            pixels = value_at(value, step, end) * (short if m.units == "short_side" else 1)
            return float(Fraction(max(1, round(pixels * ONE)), ONE))

        return ModelParams(
            plain("sensor_angle"),
            distance("sensor_distance"),
            plain("turn_angle"),
            distance("step_size"),
            plain("deposit"),
            m.diffuse_on(plain("diffuse"), short),
            plain("decay"),
            species_seed(self.seed, s),
        )

    def interaction_at(self, step: int = 0) -> list[list[Fraction]] | None:
        """The interaction matrix at `step`, exact; None where the preset gives none."""
        if self.interaction is None:
            return None
        return [[value_at(v, step, self.end_step) for v in row] for row in self.interaction]

    @property
    def schedules(self) -> list[tuple[str, Schedule]]:
        """(dotted key, schedule) of every scheduled value of the preset, in schema order."""
        return list(schedules_in(self))

    @property
    def simulation_schedules(self) -> list[tuple[str, Schedule]]:
        """The schedules the simulation follows: all but the look's (render/look/hdr.py values
        those at each frame)."""
        return [(path, s) for path, s in self.schedules if not path.startswith("look.")]

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.portable_dump(), sort_keys=False)

    def portable_dump(self) -> dict:
        """The preset as plain data, with image paths under the working directory written
        relative to it (what outputs embed: the same bytes on every machine that renders from
        the same relative place). Images elsewhere keep their absolute paths, and the images a
        `render --from` file carries the paths it names them by (so its outputs are the same bytes)."""
        return portable(self.model_dump(mode="json"), Path.cwd(), self._carried)

    def portable_path(self, path: str) -> str:
        """One image path as portable_dump writes it."""
        return portable_path(path, Path.cwd(), self._carried)

    def saved_yaml(self, folder: Path) -> str:
        """The preset as a preset file saved in `folder` reads it back: every image and sound path
        relative to `folder` (a preset's paths are read against its own folder), so it renders
        the same from any working directory; carried images as `render --from` names them."""
        data = saved_in(self.model_dump(mode="json"), folder, self._carried)
        return yaml.safe_dump(data, sort_keys=False)


def section_at(loc: tuple) -> type[BaseModel] | None:
    """The schema section at a key path, to suggest the keys it allows."""
    model: Any = Preset
    for key in loc:
        if isinstance(model, list):  # a list of sections: the key is an index
            model = model[0] if isinstance(key, int) else None
            continue
        field = model.model_fields.get(key) if isinstance(key, str) else None
        if field is not None and scheduled_field(field):
            model = Schedule  # error paths run through the schedule (its tags are dropped)
            continue
        annotation = section_type(field.annotation) if field is not None else None
        if annotation is None:
            return None
        model = annotation
    return model if isinstance(model, type) else None


def section_type(annotation: Any) -> Any:
    """The section class of an annotation (X, Optional[X]) or [X] for list[X]; else None."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    if getattr(annotation, "__origin__", None) is list and len(args) == 1:
        inner = section_type(args[0])
        return [inner] if inner is not None else None
    if len(args) == 1:
        return section_type(args[0])
    return None


def key_problem(key: str) -> str | None:
    """Why a dotted key (model.decay, world.walls.threshold, model.decay.keys.600) names nothing
    in the preset schema; None where it names a key."""
    model: Any = Preset
    parts = key.split(".")
    for depth, part in enumerate(parts):
        fields = model.model_fields
        if part not in fields:
            where = ".".join(parts[:depth]) or "a preset"
            return f"unknown key {excerpt(part)} in {where}; {did_you_mean(shorten(part), fields)}allowed there: {', '.join(fields)}"
        if depth < len(parts) - 1 and scheduled_field(fields[part]):
            return schedule_key_problem(".".join(parts[: depth + 1]), parts[depth + 1 :])
        if depth < len(parts) - 1:
            model = section_type(fields[part].annotation)  # a section, or an optional one (world)
            if not (isinstance(model, type) and issubclass(model, BaseModel)):
                return f"{'.'.join(parts[: depth + 1])} is a value, not a section"
    return None


def scheduled_field(field) -> bool:
    """Whether a field's value may be a Schedule (a scheduled() type)."""
    return optional_form(field.rebuild_annotation()) is not None


def schedule_key_problem(where: str, rest: list[str]) -> str | None:
    """Why the parts after a scheduled value name nothing in a schedule: `ease`, or `keys.K`
    with K a step or a percentage; or in a followed or periodic value (docs/audio.md): `audio`,
    `attack`, `release`, `wave`, `period`, `phase`, `range` or `range.0` / `range.1`."""
    if rest == ["ease"] or (len(rest) == 1 and rest[0] in RESOLVED_KEYS):
        return None
    if len(rest) == 2 and rest[0] == "range" and rest[1] in ("0", "1"):
        return None
    if len(rest) == 2 and rest[0] == "keys":
        try:
            key_fraction(rest[1])
        except ValueError as error:
            return f"{where}.keys: {error}"
        return None
    return (
        f"{where} is a number or a schedule: below it only ease and keys.STEP (or keys.P%) may be set "
        f"(or, where it follows audio or a wave, {', '.join(RESOLVED_KEYS)} and range.0 or range.1)"
    )


# the keys of a followed (Follow) or periodic (Wave) value that --set and sweeps may reach
RESOLVED_KEYS = ("audio", "range", "attack", "release", "wave", "period", "phase")


def key_annotation(key: str) -> Any:
    """The type of the value a dotted key names (int for agents.count, whose None default
    means 'not set'; float for a keyframe, str for a schedule's ease); None where the key names
    no value."""
    if key_problem(key) is not None:
        return None
    model: Any = Preset
    *sections, last = key.split(".")
    for part in sections:
        field = model.model_fields[part]
        if scheduled_field(field):
            return str if last in ("ease", "audio", "attack", "release", "wave", "period") else float
        model = section_type(field.annotation)
    if scheduled_field(model.model_fields[last]):
        return float  # a number, or a schedule of numbers
    annotation = model.model_fields[last].annotation
    args = [a for a in getattr(annotation, "__args__", ()) if a is not type(None)]
    if type(None) in getattr(annotation, "__args__", ()) and len(args) == 1:
        annotation = args[0]
    return annotation
