"""Loading a preset: YAML read safely, `--set` overrides and flags layered on, every problem
reported at once.

Precedence: defaults < preset file < `--set key=value` < explicit flags. Every problem found is
reported at once as one PresetError naming the file, the key path, the bad value and what is
allowed; nothing is rendered or written until a preset is valid.
"""

from __future__ import annotations

import copy
import math
from fractions import Fraction
from pathlib import Path

from pydantic import ValidationError

from ...kernels.limits import MAX_DISTANCE
from ..base.errors import PresetError, did_you_mean
from ..base.inputs import NamedValueError, excerpt, read_text, shorten
from .images import image_problems
from .safe_yaml import parse_yaml
from .schedule import TAGS as SCHEDULE_TAGS
from .schedule import Follow, Wave, keyframe_values
from .schema import Preset, section_at
from .sections import MAX_AGENTS, REFERENCE_SIDE

FORMS = {"follow": Follow, "wave": Wave}  # the tags of the forms a scheduled value may take (schedule.TAGS)


def _describe(error: dict) -> str:
    loc = tuple(part for part in error["loc"] if part not in SCHEDULE_TAGS)
    path = ".".join(shorten(str(part)) for part in loc) or "(top level)"
    if error["type"] == "extra_forbidden":
        section = section_at(loc[:-1])
        if FORMS.get(error["loc"][-2] if len(error["loc"]) > 1 else None):  # in a followed or periodic value
            section = FORMS[error["loc"][-2]]
        allowed = list(section.model_fields) if section else []
        hint = did_you_mean(shorten(str(loc[-1])), allowed)
        return f"{path}: unknown key; {hint}allowed here: {', '.join(allowed)}"
    message = error["msg"].removeprefix("Value error, ")
    if isinstance(error.get("input"), float) and not math.isfinite(error["input"]):
        message = "must be a finite number"
    if isinstance((error.get("ctx") or {}).get("error"), NamedValueError):
        return f"{path}: {message}"
    return f"{path}: {message} (got {excerpt(error.get('input'))})"


def _relations(preset: Preset) -> list[str]:
    """Problems that involve several keys at once."""
    problems = []
    short = preset.short_side
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
            problems.extend(_distance_problems(model, key, where, short))
        where = f"species.{s}.model.diffuse" if overridden and "diffuse" in overridden else "model.diffuse"
        if s == 0 or where.startswith("species"):
            problems.extend(_diffuse_problems(model, where, short))
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
    problems.extend(_dimension_problems(preset))
    problems.extend(_loop_problems(preset))
    problems.extend(_stop_problems(preset))
    return problems


SPAWNS_3D = ("random", "center", "ball", "sphere")  # kernels/spawn3d.py SPAWNS_3D


def _dimension_problems(preset: Preset) -> list[str]:
    """What a 3D preset (canvas.depth) may not use: world images, walls, food, species, render
    layers, schedules, 2D spawns; and the 3D spawns in a 2D preset."""
    spawn = preset.agents.spawn
    if preset.dims == 2:
        if spawn in ("ball", "sphere"):
            return [
                f"agents.spawn: {spawn} is a 3D spawn (set canvas.depth); 2D presets use random, disk, ring, center or image"
            ]
        return []
    problems = []
    world = preset.world
    if world is not None and (world.trail_image or world.walls or world.food):
        problems.append(
            "world: a 3D preset (canvas.depth set) has no trail image, walls or food; only world.boundary "
            "(wrap, reflect or clamp) applies to a volume"
        )
    if preset.species is not None or preset.interaction is not None:
        problems.append(
            "species: a 3D preset (canvas.depth set) has one species; remove species and interaction"
        )
    if preset.palette.layer != "trail":
        problems.append(
            f"palette.layer: a 3D preset shows its trail volume only (got {preset.palette.layer!r})"
        )
    if spawn not in SPAWNS_3D:
        problems.append(f"agents.spawn: a 3D preset spawns {', '.join(SPAWNS_3D)} (got {spawn!r})")
    if preset.schedules:
        keys = ", ".join(key for key, _ in preset.schedules)
        problems.append(f"{keys}: a 3D preset's values are numbers; schedules are for 2D presets (for now)")
    return problems


def _distance_problems(model, key: str, where: str, short: int) -> list[str]:
    """A distance (each keyframe of a scheduled one, which bound its values) against the canvas."""
    for value in keyframe_values(getattr(model, key)):
        pixels = model.to_pixels(value, short)
        unit = "" if model.units == "pixels" else f" ({pixels:g} pixels with units: short_side)"
        if pixels >= short / 2:
            return [
                f"{where}: must be less than half the canvas's short side "
                f"({short / 2:g} pixels) (got {value!r}{unit})"
            ]
        if pixels > MAX_DISTANCE or pixels <= 0:
            return [f"{where}: must be more than 0 and at most {MAX_DISTANCE:g} pixels (got {value!r}{unit})"]
    return []


def _diffuse_problems(model, where: str, short: int) -> list[str]:
    """diffuse (each keyframe of a scheduled one) on this canvas, at most 1."""
    for value in keyframe_values(model.diffuse):
        diffuse = model.diffuse_on(value, short)
        if diffuse > 1:
            most = float(Fraction(REFERENCE_SIDE, short) ** 2)
            return [
                f"{where}: with units: short_side, diffuse is given for a {REFERENCE_SIDE}-pixel "
                f"short side and grows with the canvas area; on a {short}-pixel short side "
                f"it becomes {diffuse:g}, more than 1: use at most {most:.4g} (got {value!r})"
            ]
    return []


def _loop_problems(preset: Preset) -> list[str]:
    """palette.blend against palette.every, output.loop_frames against the mode and the frames."""
    problems = []
    palette, output, frames = preset.palette, preset.output, preset.frames
    if palette.blend >= palette.every:
        problems.append(
            f"palette.blend: must be less than palette.every ({palette.every}): the last blend "
            f"frames of each block of every frames cross-fade to the next palette (got {palette.blend!r})"
        )
    mode, count = preset.loop
    if palette.layer != "trail" and preset.species is not None:
        problems.append(
            f"palette.layer: a species preset shows its species' trails; layers density, heading and mix "
            f"are for presets without a species section (got {palette.layer!r})"
        )
    if palette.layer_mix is not None and palette.layer != "mix":
        problems.append(
            f"palette.layer_mix: only used with palette.layer: mix (layer is {palette.layer!r}) "
            f"(got {palette.layer_mix!r})"
        )
    if palette.layer == "heading" and mode == "crossfade":
        problems.append(
            "palette.layer: heading frames are hue indices, which a crossfade loop cannot blend; "
            "use output.loop_mode none, ping-pong or closest with it (got 'heading')"
        )
    if output.loop_frames is not None and mode in ("none", "ping-pong"):
        problems.append(
            f"output.loop_frames: only used with output.loop_mode crossfade or closest "
            f"(loop_mode is {mode!r}) (got {output.loop_frames!r})"
        )
    elif mode == "crossfade" and (frames < 2 or count > frames // 2):
        problems.append(
            f"output.loop_frames: a crossfade blends the last loop_frames frames into the first ones, "
            f"so it allows 1 to frames // 2 = {frames // 2} of the run's {frames} frames (got {count!r})"
        )
    elif mode == "closest" and (count < 2 or count > frames - 1 - frames // 2):
        most = frames - 1 - frames // 2
        allowed = f"2 to {most}" if most >= 2 else "none: the run needs at least 5 frames"
        problems.append(
            f"output.loop_frames: closest looks for its loop in the second half of the run's {frames} "
            f"frames, so the shortest loop allows {allowed} (got {count!r})"
        )
    return problems


def _stop_problems(preset: Preset) -> list[str]:
    """Chosen checkpoint and field steps lie within the run (1 .. warmup + steps)."""
    problems = []
    for where, stops in (("checkpoint", preset.checkpoint), ("output.fields", preset.output.fields)):
        late = [s for s in (stops.at or ()) if s > preset.end_step] if stops else []
        if late:
            problems.append(
                f"{where}.at: steps after the run's last step {preset.end_step} (warmup + steps) "
                f"write nothing (got {excerpt(late)})"
            )
    return problems


def _interaction_problems(preset: Preset) -> list[str]:
    matrix = preset.interaction
    if matrix is None:
        return []
    if preset.species is None:
        return [
            f"interaction: needs a species list (one row and column per species) "
            f"(got {excerpt(matrix)} without species)"
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
            f"found {found} (got {excerpt(matrix)})"
        ]
    problems = []
    for s, row in enumerate(matrix):
        for j, weight in enumerate(row):
            for value in keyframe_values(weight):
                if not -1e3 <= value <= 1e3:
                    problems.append(f"interaction.{s}.{j}: must be from -1000 to 1000 (got {value!r})")
                    break
    if species == 1 and matrix != [[1.0]]:
        problems.append(
            f"interaction: one species senses its own trail as it is: [[1]] or no "
            f"interaction (got {excerpt(matrix)})"
        )
    return problems


def read_preset_file(path: str | Path) -> dict:
    """The raw mapping of a YAML preset (or sweep) file, not yet validated: a regular file of at
    most MAX_TEXT_BYTES (inputs.read_text), read by the safe loader (safe_yaml.parse_yaml)."""
    path = Path(path)
    try:
        text = read_text(path)
    except ValueError as error:
        problem = str(error)
        if problem == "no such file":
            problem = "no such preset file"
        raise PresetError([f"{path}: {problem}"]) from None
    return parse_yaml(text, str(path))


def set_dotted(data: dict, key: str, value) -> None:
    """Set `a.b.c` in a nested mapping in place (a copy of `value`), making the sections that
    are missing or null; ValueError names a part that holds a value, not a section."""
    node = data
    *sections, last = key.split(".")
    for depth, part in enumerate(sections):
        if node.get(part) is None:
            node[part] = {}
        if depth == len(sections) - 1 and isinstance(node[part], list) and last.isdigit():
            if int(last) >= len(node[part]):  # an entry of a list (a followed value's range.1)
                raise ValueError(f"{excerpt(part)} has {len(node[part])} entries, no entry {last}")
            node[part][int(last)] = copy.deepcopy(value)
            return
        if not isinstance(node[part], dict):
            if sections[depth + 1 :] + [last] in (["ease"], ["keys", last]):
                raise ValueError(
                    f"{excerpt(part)} is a number, not a schedule: give it one first "
                    f"({'.'.join(sections[: depth + 1])}={{keys: {{0: {excerpt(node[part])}}}}})"
                )
            raise ValueError(f"{excerpt(part)} is not a section")
        node = node[part]
    if sections and sections[-1] == "keys" and last.isdigit():
        last = int(last)  # a schedule's step, as the file's own keys are (render/preset/schedule.py)
    node[last] = copy.deepcopy(value)


def apply_setting(data: dict, setting: str) -> None:
    """Apply one `key.path=value` override in place; the value is parsed as YAML."""
    key, sep, raw = setting.partition("=")
    if not sep or not key.strip():
        raise PresetError([f"--set {excerpt(setting)}: expected key.path=value, e.g. model.decay=0.05"])
    value = parse_yaml(f"v: {raw}", f"--set {shorten(key)}")["v"] if raw.strip() else None
    try:
        set_dotted(data, key.strip(), value)
    except ValueError as error:
        raise PresetError([f"--set {shorten(key)}: {error}"]) from None


def build_preset(
    data: dict,
    source: str,
    settings: list[str] = (),
    overrides: dict | None = None,
    base: str | Path | None = None,
    carried: dict | None = None,
) -> Preset:
    """Validate raw data plus `--set` settings and explicit flag overrides into a Preset.

    Relative image paths are relative to `base` (default: the folder of `source`) and become
    absolute. Images are opened and checked here too, so every problem is reported at once.
    `carried` (path -> image, render/preset/carried.py): the images `render --from` reads instead of
    the files those paths name; such paths are kept as they are."""
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
        preset = Preset.model_validate(data, context={"base": base, "carried": carried or {}})
    except ValidationError as error:
        problems.extend(f"{source}: {_describe(e)}" for e in error.errors())
        raise PresetError(problems) from None
    problems.extend(f"{source}: {p}" for p in preset.audio_problems)  # the soundtrack (preset/audio.py)
    problems.extend(f"{source}: {p}" for p in _relations(preset))
    problems.extend(f"{source}: {p}" for p in image_problems(preset))  # the images on this canvas
    if problems:
        raise PresetError(problems)
    return preset


def load_preset(path: str | Path, settings: list[str] = (), overrides: dict | None = None) -> Preset:
    """Read, override and validate a preset file."""
    return build_preset(read_preset_file(path), str(path), settings, overrides, Path(path).parent)
