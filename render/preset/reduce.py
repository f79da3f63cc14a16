"""A preset reduced: the same picture on a smaller canvas, faster (`render --preview`, `--reduce`).

The reduction by a ratio r < 1 of the short side is an ordinary preset, so a reduced render is
exact and reproducible like any other and its outputs embed the reduced preset (`--from` renders
it again). It keeps what the model's dynamics depend on, per unit of canvas:

- canvas: each side round(side * r) (at least 8); r is then exactly short' / short (of width and
  height; a 3D preset's depth is reduced by r too, and its camera's frame sides and samples where
  set; its agents are kept per voxel; a 3D preview's frame is its full frame brought to at most
  PREVIEW_FRAME_3D pixels on its long side, its samples the reduced volume's diagonal unless set);
- agents: the same agents per pixel, count' = round(count * W'H' / WH) (at least one per species),
  written as a count (a density is dropped), so the trail a pixel receives a step is the same and
  levels, deposits, food amounts and trail images mean what they meant;
- distances (sensor_distance, step_size, in pixel units): times r; diffuse (pixel units): times
  r^2, the rule units: short_side applies by itself (Model.diffuse_on: the 3x3 blend spreads
  trail a fixed number of pixels a step). In short_side units nothing changes. Scheduled values
  are scaled keyframe by keyframe; species' own models by their own units;
- images (walls, trail, food, spawn) are resized onto the new canvas by the loader's exact box
  resize; food points, radii and spawn radii are canvas fractions already;
- steps, warmup, decay, deposit, angles and the look stay: a step means the same at every size
  (the look's bloom radius is a share of the canvas already; a 3D camera's opacity is raised so
  that a ray through the smaller volume is as opaque: kept_opacity).

The preset's description says how it was reduced (`note`), so its outputs and sidecar do too.

A preview (kind 'preview') of one species' texture that is the same everywhere, in pixel units
(random spawn, no world; 2D: is_texture), whose sensor the reduction would bring under
MIN_SENSOR_PIXELS (6) pixels (is_window) is a window instead: a canvas of the requested side
(256) with the same agents per pixel, showing a piece of the texture reduced only as far as
keeps its smallest sensor at TEXTURE_SENSOR_PIXELS (12) pixels (window_scale: cave's 18 -> 12, a
piece of its texture at 683), or at its full scale where the sensor is 12 pixels or fewer
already (labyrinth, journey, cells, quickstart: the model kept). Such presets' look depends on
the pixel grid: scaled to 256, labyrinth, journey or cells came out a much finer network than
the full render, cave's and quickstart's sensors fell to 4.5 pixels and their textures came out
finer. A window costs what a 256 preview costs, unless a curated texture states a larger one
(LARGER_WINDOWS: cells's and labyrinth's 512, four times the work, past PREVIEW_WORK: their 256
windows held too few of their cells for the texture to coarsen as in the full render);
docs/figures/previews.png tiles it to its texture's scale. Another preset's preview size
(preview_ratio) is the requested short side (256), made larger where that would bring a sensor
under MIN_SENSOR_PIXELS (6) pixels (maze 436, feast 384, lettering 616x308, rivals 308) or,
where a species spawns in a shape (a front that moves: rings, starburst, bloom, compass,
rolling, tribes), its largest step under MIN_STEP_PIXELS (a front that moves less than a pixel
a step stalls: starburst 748, bloom and compass 512), as far as PREVIEW_WORK allows (a preview
stays seconds on a 2-core CPU); a shaped preset that would pass PREVIEW_WORK keeps that size
and thins its agents instead (thinning: count / k, deposit x k; rings 1024 and rolling 512, by
4). A curated preset whose front is some of its species' and whose floor is past PREVIEW_WORK
however thinned states its thinning (THINNED_FLOORS: tribes, whose ring stood still at 256,
keeps its 854 with all its species thinned by 4, about a minute on the 2-core CPU; a preset that
takes its name and would cost more, THINNED_FLOOR_WORK, does not). A 3D reduction
keeps the opacity of a ray across the volume (kept_opacity: fewer samples, each more opaque).
Measured against the full renders: tests/test_preview_structure.py. The rules read the preset
alone, in integers and fractions, so a preview is the same preset on every machine.
"""

from __future__ import annotations

import math
from fractions import Fraction

from ..base.errors import ordinal
from .load import build_preset
from .schedule import keyframe_values
from .schema import Preset

OPACITY_DEFAULT = 0.08  # camera.opacity's default (preset/camera.py)

MIN_SIDE = 8  # Canvas's bound
DISTANCE_KEYS = ("sensor_distance", "step_size")
# A preview is not reduced below the side where its smallest sensor distance is this many pixels
# (a texture under it is a window instead: is_window). 6: maze at 299 (3.5 pixels) ended finer
# than its full render (wavelength 0.048 of the side against 0.076), at 436 (5.1 pixels, the most
# PREVIEW_WORK allows) 0.072; lettering at 616x308 (6 pixels) is within its bounds as at 512x256;
# veins and crowd scaled to 6.25 pixels match theirs (wavelength 0.108 and 0.244 against 0.110
# and 0.249), cave and quickstart at 4.5 did not (0.068 against 0.091; 0.101 against 0.144).
MIN_SENSOR_PIXELS = Fraction(6)
# ... unless that costs more than this many agent-steps plus cell-steps (warmup and steps, both of
# closest's passes): about 15 s of simulation with torch on the 2-core CPU (docs/presets.md,
# "Previews"; a 256^2 preview of a 2,000,000-agent 1024^2 preset over 1500 steps is 2.9e8)
PREVIEW_WORK = 450_000_000
# ... and its largest step size this many pixels: agents that move less than a pixel a step stay
# in their cell and feed their own trail, so a front stalls (rings' ring stood still at every
# scaled size, 399 to 768, and moved at 1024; starburst's disc filled at 768, not at 256)
MIN_STEP_PIXELS = Fraction(1)
# A preview of a shaped spawn (SHAPED_SPAWNS, no world) whose floor costs more than PREVIEW_WORK
# keeps its canvas and thins its agents (count / k, deposit * k: the same trail per pixel), k a
# power of 2 up to MAX_THINNING: a front's look does not depend on how many agents draw it
# (rings with 100,000 agents of its 800,000 at 1024: the same front radius and lit share)
SHAPED_SPAWNS = ("center", "disk", "ring")
MAX_THINNING = 64
# A curated preset that moves a front with some of its species (moves_a_front, not is_shaped),
# whose floor costs more than PREVIEW_WORK however few its agents (its trails' cells alone),
# states k here, by name: its preview keeps its floor (floor_ratio) and thins all its species
# (count / k, deposit * k), past PREVIEW_WORK (thinned_floor). tribes (four species; its blue
# ring's 1.2-pixel step asks for 854 pixels, where its four trails alone are 4.4e9 of work): at
# 256 its ring stood still and its preview ended at 0.325 of the side, against its full renders'
# 0.109 to 0.246 (eight seeds). At 854 thinned by 4, 8 and 16 it ends within the bounds with its
# own seed (0.126, 0.248, 0.248); with seeds 1 to 7, by 4 and by 8 in six of seven (one ended at
# 0.063, one at 0.769), by 16 in four (three at 0.062 to 0.077, finer than any full render). 4
# is the one of the two that hold whose preview ends where its own seed's full render does
# (0.126 against 0.114; by 8, 0.248, at the far end of the seeds' envelope): 36 to 46 s of
# simulation on the 2-core CPU (two threads; by 8, 25 to 29 s; by 16, 18 to 20 s), 64 s for
# `render tribes --preview` (its simulation on one thread beside the encoder; by 8, 51 s)
THINNED_FLOORS = {"tribes": 4}
# ... as long as its floor thinned by k costs at most this many agent- plus cell-steps (tribes's
# own: 4.8e9, about a minute on the 2-core CPU): a preset that takes a curated name costs a
# preview no more than the curated preset does, else it follows the rules above
THINNED_FLOOR_WORK = 5_000_000_000
# A window shows a piece of its texture reduced only as far as keeps its smallest sensor at this
# many pixels, or at its full scale where the sensor is that small already (window_scale). cave
# at 512 (9 pixels) matched but cost 2.3 times PREVIEW_WORK, and thinned there (agents / 4,
# / 16) lit 0.19 and 0.18; windows of cave: at its full 18 pixels a 256 window held under three
# of its cells and came out finer (0.063 of 1024 against 0.091), at 9 pixels it lit 0.171, at 12
# pixels 0.149 with wavelength 0.115 (0.096 with one agent more). A window of crowd at 12 pixels
# held two of its ribbons and halved their spacing (0.128 against 0.249): scaled, it matched.
TEXTURE_SENSOR_PIXELS = Fraction(12)
# A curated texture whose window at the preview's side holds too few of its cells to coarsen as
# its full render does states a larger window here, by name: this many times the preview's side
# (its work the square of it; window_ratio). cells (a foam of cells 48 pixels wide): its 256
# window held 5 cells a side and ended at the foam's finer ring or its coarser one by the seed's
# chance (end wavelength 0.060, 0.028, 0.042 and 0.028 of the full side with seeds 17, 1, 2 and 3,
# against its full render's 0.047); at 512, 0.046, 0.044, 0.055 and 0.045 (320 and 384 windows,
# within PREVIEW_WORK: 0.035 and 0.034). labyrinth (a maze whose corridors coarsen in the last
# half of its run): its 256 window ended at 0.0226 of the full side, finer than either full
# render (0.0263 with seed 1, 0.0328 with its own seed 3); its 512 window ends at 0.0264
LARGER_WINDOWS = {"cells": 2, "labyrinth": 2}
# ... as long as the larger window costs at most this many agent- plus cell-steps (cells's and
# labyrinth's own: 1.14e9, about 20 s on the 2-core CPU): a texture that takes a curated name
# costs a preview no more than the curated preset does, else its window is the preview's side
LARGER_WINDOW_WORK = 1_200_000_000
# A 2D preview's GIF is at most the GIF of a preview of this short side (preview_gif)
PREVIEW_GIF_SIDE = 256
# A 3D preview's camera frame is at most this many pixels on its long side (the ray marcher's
# cost is pixels x samples a frame: 160^2 is a 2D preview's 256^2 tenth of the work it would be)
PREVIEW_FRAME_3D = 160
# ... and it shows at most this many frames: a longer run's preview shows every k-th frame (each
# frame is a ray march; cosmos's 625 would take over a minute on the 2-core CPU)
PREVIEW_FRAMES_3D = 160


def reduced_side(side: int, ratio: Fraction) -> int:
    """A canvas side times `ratio`, rounded (half to even), at least MIN_SIDE."""
    return max(MIN_SIDE, round(side * ratio))


def side_ratio(preset: Preset, short_side: int) -> Fraction:
    """The ratio that brings the preset's short side to `short_side` (at most 1: never enlarged)."""
    short = min(preset.canvas.width, preset.canvas.height)
    return min(Fraction(1), Fraction(short_side, short))


def sensor_pixels(preset: Preset) -> Fraction:
    """The smallest sensor distance of the preset (any species, any keyframe) in pixels of its
    own canvas, exactly."""
    short = min(preset.canvas.width, preset.canvas.height)
    return min(
        Fraction(model.to_pixels(value, short))
        for model in (preset.species_model(s) for s in range(preset.species_count))
        for value in keyframe_values(model.sensor_distance)
    )


def step_pixels(preset: Preset) -> Fraction:
    """The step size that moves the preset, in pixels of its own canvas, exactly: each species'
    largest (over its keyframes: bloom's step grows from 0.25 to 2), the smallest of those."""
    short = min(preset.canvas.width, preset.canvas.height)
    return min(
        max(Fraction(model.to_pixels(value, short)) for value in keyframe_values(model.step_size))
        for model in (preset.species_model(s) for s in range(preset.species_count))
    )


def moves_a_front(preset: Preset) -> bool:
    """Whether any species spawns in a shape (SHAPED_SPAWNS): a front that must move, whose step
    the preview keeps at MIN_STEP_PIXELS."""
    return any(preset.species_agents(s).spawn in SHAPED_SPAWNS for s in range(preset.species_count))


def floor_ratio(preset: Preset) -> Fraction:
    """The smallest ratio that keeps the preset's sensors at MIN_SENSOR_PIXELS and, where a
    species spawns in a shape (SHAPED_SPAWNS: a front that must move), its step at
    MIN_STEP_PIXELS (at most 1). A texture's step is not floored: veins at 256 came out the
    same with its step scaled to 0.25 pixels or kept at 1."""
    ratio = MIN_SENSOR_PIXELS / sensor_pixels(preset)
    if moves_a_front(preset):
        ratio = max(ratio, MIN_STEP_PIXELS / step_pixels(preset))
    return min(Fraction(1), ratio)


def floor_side(preset: Preset) -> int:
    """The short side of the preset reduced to its floor (floor_ratio, rounded up)."""
    short = min(preset.canvas.width, preset.canvas.height)
    return min(short, math.ceil(short * floor_ratio(preset)))


def is_shaped(preset: Preset) -> bool:
    """Whether every species of a 2D preset without a world spawns in a shape (SHAPED_SPAWNS):
    a front that moves, whose preview may be thinned (thinning)."""
    return (
        preset.dims == 2
        and preset.world is None
        and all(preset.species_agents(s).spawn in SHAPED_SPAWNS for s in range(preset.species_count))
    )


def reduced_work(preset: Preset, ratio: Fraction, thinned: int = 1) -> int:
    """Agent-steps plus cell-steps of the preset reduced by `ratio` (reduce_preset's sides and
    agents, the agents divided by `thinned`), both passes of a closest loop counted."""
    width, height = reduced_side(preset.canvas.width, ratio), reduced_side(preset.canvas.height, ratio)
    area = Fraction(width * height, preset.canvas.width * preset.canvas.height)
    agents = max(preset.species_count, round(preset.agents.count * area / thinned))
    passes = 2 if preset.loop[0] == "closest" else 1
    return passes * preset.end_step * (agents + width * height * preset.species_count)


def thinned_floor(preset: Preset) -> int | None:
    """The k a 2D preset's name states in THINNED_FLOORS (its preview at its floor, thinned by
    k) where that costs at most THINNED_FLOOR_WORK, else None."""
    k = THINNED_FLOORS.get(preset.name) if preset.dims == 2 else None
    if k is None:
        return None
    floor = Fraction(floor_side(preset), min(preset.canvas.width, preset.canvas.height))
    return k if reduced_work(preset, floor, k) <= THINNED_FLOOR_WORK else None


def thinning(preset: Preset, ratio: Fraction) -> int:
    """k: a preview of a shaped spawn (is_shaped) by `ratio` keeps 1 / k of its agents, k the
    smallest power of 2 (up to MAX_THINNING) that brings its work within PREVIEW_WORK; a preset
    named in THINNED_FLOORS its k; 1 for other presets, and where the work fits already."""
    stated = thinned_floor(preset)
    if stated is not None:
        return stated
    k = 1
    while is_shaped(preset) and k < MAX_THINNING and reduced_work(preset, ratio, k) > PREVIEW_WORK:
        k *= 2
    return k


def preview_ratio(preset: Preset, short_side: int) -> Fraction:
    """The ratio of a preview (render --preview): its short side `short_side` (a window's larger
    where the preset states it: window_ratio), or, for a preset that is not a window
    (is_window), larger, up to its floor (floor_ratio: its smallest sensor distance at
    MIN_SENSOR_PIXELS pixels, a shaped spawn's step at MIN_STEP_PIXELS), as long as the reduced
    preset's work stays within PREVIEW_WORK (the largest side that does), or where its name
    states a thinning in THINNED_FLOORS, its floor whatever it costs; never enlarged."""
    short = min(preset.canvas.width, preset.canvas.height)
    base = side_ratio(preset, short_side)
    if is_window(preset, base):  # a window keeps its distances: no floor to keep
        return window_ratio(preset, base)
    side = floor_side(preset)
    if thinned_floor(preset) is not None:  # its floor, thinned, past PREVIEW_WORK
        return Fraction(side, short) if side > short_side else base

    def work(side: int) -> int:
        ratio = Fraction(side, short)
        return reduced_work(preset, ratio, thinning(preset, ratio))

    while side > short_side and work(side) > PREVIEW_WORK:
        side -= 1
    return Fraction(side, short) if side > short_side else base


def preview_shortfall(preset: Preset, ratio: Fraction) -> str | None:
    """Where a 2D preview by `ratio` (preview_ratio's) is smaller than its floor (floor_ratio:
    its sensors at MIN_SENSOR_PIXELS, a shaped spawn's step at MIN_STEP_PIXELS) because
    PREVIEW_WORK stopped it, what falls short, in words ('its smallest sensor 3 pixels (6 kept),
    its step 0.3 pixels (1 kept)'), for a note that its structure may differ from the full
    render's; None for a preview at its floor, a window, a 3D preset."""
    if preset.dims != 2 or is_window(preset, ratio) or ratio >= floor_ratio(preset):
        return None
    short = []
    sensor = sensor_pixels(preset) * ratio
    if sensor < MIN_SENSOR_PIXELS:
        short.append(f"its smallest sensor {float(sensor):.2g} pixels ({MIN_SENSOR_PIXELS} kept)")
    step = step_pixels(preset) * ratio
    if moves_a_front(preset) and step < MIN_STEP_PIXELS:
        short.append(f"its step {float(step):.2g} pixels ({MIN_STEP_PIXELS} kept: a front under it stalls)")
    return ", ".join(short) or None


def window_ratio(preset: Preset, base: Fraction) -> Fraction:
    """The ratio of a window preview whose ratio would be `base`: `base` times the preset's
    LARGER_WINDOWS factor where it states one, the larger canvas is still a window (is_window)
    and it costs at most LARGER_WINDOW_WORK, at most 1; `base` for every other preset."""
    larger = min(Fraction(1), base * LARGER_WINDOWS.get(preset.name, 1))
    stated = larger > base and is_window(preset, larger)
    return larger if stated and reduced_work(preset, larger) <= LARGER_WINDOW_WORK else base


def scaled(value, factor: Fraction):
    """A number, or each keyframe value of a schedule's dump (a followed value's range), times
    `factor` (one rounding)."""
    if isinstance(value, dict) and "range" in value:  # a followed or periodic value (docs/audio.md)
        return {**value, "range": [float(Fraction(v) * factor) for v in value["range"]]}
    if isinstance(value, dict):
        return {**value, "keys": {k: float(Fraction(v) * factor) for k, v in value["keys"].items()}}
    return float(Fraction(value) * factor)


def scale_model(model: dict, units: str, ratio: Fraction) -> dict:
    """A model section's dump (or a species' override) with its pixel distances times `ratio` and
    its diffuse times ratio^2; unchanged in short_side units."""
    if units != "pixels":
        return model
    model = dict(model)
    for key in DISTANCE_KEYS:
        if model.get(key) is not None:
            model[key] = scaled(model[key], ratio)
    if model.get("diffuse") is not None:
        model["diffuse"] = scaled(model["diffuse"], ratio * ratio)
    return model


def is_texture(preset: Preset) -> bool:
    """Whether the preset is a 2D texture the same everywhere: one species, random spawn, no
    world section, pixel units. Not a volume: a 48^3 window of cosmos's model condensed into two
    tubes, where its scaled preview shows its web."""
    return (
        preset.dims == 2
        and preset.species_count == 1
        and preset.agents.spawn == "random"
        and preset.world is None
        and preset.model.units == "pixels"
    )


def is_window(preset: Preset, ratio: Fraction) -> bool:
    """Whether the preset's preview by `ratio` is a window (reduce_preset): a texture
    (is_texture) whose smallest sensor would fall under MIN_SENSOR_PIXELS if scaled by
    `ratio`."""
    return is_texture(preset) and sensor_pixels(preset) * ratio < MIN_SENSOR_PIXELS


def window_scale(preset: Preset) -> Fraction:
    """The ratio by which a window's texture is reduced: the one that brings its smallest sensor
    to TEXTURE_SENSOR_PIXELS, or 1 (its full scale) where the sensor is that small already."""
    return min(Fraction(1), TEXTURE_SENSOR_PIXELS / sensor_pixels(preset))


def reduced_data(
    preset: Preset,
    width: int,
    height: int,
    scale: Fraction | None = None,
    frame: int | None = None,
    thinned: int = 1,
) -> dict:
    """The preset's dump on a width x height canvas (see the module's rules); its model's
    distances and diffuse reduced by `scale` (a window's window_scale; 1 keeps the model as it
    is), by the canvas's ratio where it is None; a 3D preset's camera frame is scaled with the
    volume, or where `frame` is given (a preview) brought from its full size to `frame` pixels
    on its long side (preview_frame: cosmos's 1024 -> 160, not the 96 of 1024 x 48 / 512);
    `thinned` k keeps 1 / k of the agents, each depositing k times as much."""
    data = preset.model_dump()
    ratio = Fraction(min(width, height), min(preset.canvas.width, preset.canvas.height))
    area = Fraction(width * height, preset.canvas.width * preset.canvas.height)
    data["canvas"] = {"width": width, "height": height}
    if preset.dims == 3:  # a volume: its depth too, the agents per voxel, the camera's image
        data["canvas"]["depth"] = reduced_side(preset.canvas.depth, ratio)
        area *= Fraction(data["canvas"]["depth"], preset.canvas.depth)
        camera = data.get("camera") or {}
        data["camera"] = reduced_camera(camera, ratio, frame_too=frame is None)
        sides = (preset.canvas.width, preset.canvas.height, preset.canvas.depth)
        data["camera"]["opacity"] = kept_opacity(
            camera, sides, data["camera"], tuple(data["canvas"].values())
        )
        if frame is not None:
            data["camera"] = preview_frame(data["camera"], width, height, frame, sides[:2])
            stride = preview_stride(preset)
            if stride > 1:
                data.update(strided(data, stride))
    agents = {k: v for k, v in data["agents"].items() if k != "density"}
    agents["count"] = max(preset.species_count, round(preset.agents.count * area / thinned))
    data["agents"] = agents
    if thinned > 1:
        data["model"]["deposit"] = scaled(data["model"]["deposit"], Fraction(thinned))
        for species in data.get("species") or []:
            if (species.get("model") or {}).get("deposit") is not None:
                species["model"]["deposit"] = scaled(species["model"]["deposit"], Fraction(thinned))
    scale = ratio if scale is None else scale
    if scale == 1:
        return data
    units = preset.model.units
    data["model"] = scale_model(data["model"], units, scale)
    for species in data.get("species") or []:
        if species.get("model"):
            own = species["model"].get("units") or units
            species["model"] = scale_model(species["model"], own, scale)
    return data


def ray_samples(camera: dict, sides: tuple[int, ...]) -> int:
    """Samples along each ray of a camera dump on a volume of `sides`: its own, or the volume's
    diagonal in voxels, rounded up (look/camera.py: default_samples)."""
    return camera.get("samples") or math.isqrt(sum(side * side for side in sides) - 1) + 1


def kept_opacity(
    camera: dict, sides: tuple[int, ...], reduced: dict, reduced_sides: tuple[int, ...]
) -> float:
    """The opacity of a sample that keeps a ray's opacity across the volume when the ray takes
    fewer samples (n full, n' reduced): 1 - (1 - opacity) ** (n / n'), at most 1, so that a
    reduced volume is as dense to the eye as the full one (cosmos's 0.05 over 887 samples; at 83
    it showed a nearly black frame). Unchanged where the samples are."""
    opacity = camera.get("opacity") if camera.get("opacity") is not None else OPACITY_DEFAULT
    full, fewer = ray_samples(camera, sides), ray_samples(reduced, reduced_sides)
    if full == fewer:
        return opacity
    return min(1.0, 1.0 - (1.0 - opacity) ** (full / fewer))


def reduced_camera(camera: dict, ratio: Fraction, frame_too: bool = True) -> dict:
    """A 3D preset's camera dump with its frame's sides (unless not `frame_too`: a window's) and
    samples (where set) times `ratio`."""
    camera = dict(camera)
    for key in ("width", "height") if frame_too else ():
        if camera.get(key) is not None:
            camera[key] = reduced_side(camera[key], ratio)
    if camera.get("samples") is not None:
        camera["samples"] = max(1, round(camera["samples"] * ratio))
    return camera


def preview_frame(
    camera: dict, width: int, height: int, longest: int, full: tuple[int, int] | None = None
) -> dict:
    """A 3D camera dump whose frame (its width and height, each unset side the canvas's width
    x height, or the `full` canvas's for a window) is brought to `longest` pixels on its long
    side, the aspect kept (each side round(side * longest / long), at least MIN_SIDE);
    unchanged where it is within already. Samples stay: they follow the volume's side."""
    width, height = full or (width, height)
    sides = (camera.get("width") or width, camera.get("height") or height)
    if max(sides) <= longest:
        return camera
    factor = Fraction(longest, max(sides))
    return {**camera, "width": reduced_side(sides[0], factor), "height": reduced_side(sides[1], factor)}


def preview_stride(preset: Preset) -> int:
    """k such that a 3D preview showing every k-th frame shows at most PREVIEW_FRAMES_3D."""
    return max(1, -(-preset.frames // PREVIEW_FRAMES_3D))


def strided(data: dict, stride: int) -> dict:
    """The run, palette and output sections of a preset dump that shows every `stride`-th frame:
    steps_per_frame times stride, and what counts frames (palette.every and blend, a count of
    output.loop_frames) divided by it (floor, at least 1; a share such as '4%' stays). The steps,
    and so the simulation, are the same."""
    run = {**data["run"], "steps_per_frame": data["run"]["steps_per_frame"] * stride}
    palette = dict(data["palette"])
    palette["every"] = max(1, palette["every"] // stride)
    if palette.get("blend"):
        palette["blend"] = min(palette["every"] - 1, palette["blend"] // stride)
    output = dict(data["output"])
    if isinstance(output.get("loop_frames"), int):
        output["loop_frames"] = max(1, output["loop_frames"] // stride)
    return {"run": run, "palette": palette, "output": output}


def shown(ratio: Fraction) -> str:
    """1 / ratio as a note writes it: '4', or '1.369' where it is no whole number."""
    inverse = 1 / ratio
    return str(inverse.numerator) if inverse.denominator == 1 else f"{float(inverse):.4g}"


def window_note(preset: Preset, scale: Fraction) -> str:
    """How a window shows its texture: 'distances kept (a window)' at its full scale, else
    'distances / 2 (a window of 512x512)', the canvas whose texture it shows a piece of."""
    if scale == 1:
        return "distances kept (a window)"
    width, height = (reduced_side(side, scale) for side in (preset.canvas.width, preset.canvas.height))
    return f"distances / {shown(scale)} (a window of {width}x{height})"


def note(
    preset: Preset, reduced: Preset, kind: str = "preview", window: bool = False, thinned: int = 1
) -> str:
    """How a preset was reduced, e.g. 'preview: 1024x1024 -> 256x256, 2,000,000 -> 125,000
    agents, distances / 4' (a window: '..., distances kept (a window)' or '..., distances / 2
    (a window of 512x512)' (window_note); thinned agents:
    '... agents (thinned / 4, deposit x 4), ...'; a 3D preset: its volume WxHxD and, where they
    changed, ', frame 400x400 -> 160x160', ', opacity 0.15 -> 0.353' and ', every 4th frame
    (625 -> 157)')."""
    before, after = preset.canvas, reduced.canvas
    ratio = Fraction(min(after.width, after.height), min(before.width, before.height))
    sides = [f"{c.width}x{c.height}" + (f"x{c.depth}" if preset.dims == 3 else "") for c in (before, after)]
    frames = [p.frame_size for p in (preset, reduced)]
    stride = reduced.run.steps_per_frame // preset.run.steps_per_frame
    framed = f", frame {frames[0][0]}x{frames[0][1]} -> {frames[1][0]}x{frames[1][1]}"
    opacity = (
        f", opacity {preset.camera.opacity:.3g} -> {reduced.camera.opacity:.3g}" if preset.dims == 3 else ""
    )
    return (
        f"{kind}: {sides[0]} -> {sides[1]}, "
        f"{preset.agents.count:,} -> {reduced.agents.count:,} agents"
        + (f" (thinned / {thinned}, deposit x {thinned})" if thinned > 1 else "")
        + (f", {window_note(preset, window_scale(preset))}" if window else f", distances / {shown(ratio)}")
        + (framed if preset.dims == 3 and frames[0] != frames[1] else "")
        + (opacity if preset.dims == 3 and preset.camera.opacity != reduced.camera.opacity else "")
        + (f", every {ordinal(stride)} frame ({preset.frames} -> {reduced.frames})" if stride > 1 else "")
    )


def preview_gif(reduced: Preset, kind: str) -> dict:
    """The output keys of a 2D preview kept larger than PREVIEW_GIF_SIDE (a floor, a thinned
    front): its gif_scale brought down so that its GIF is as large as a PREVIEW_GIF_SIDE
    preview's (the area means of the larger canvas), within the preview's byte budget without
    fewer levels (compass at 512 lost its black to red at 128 levels); {} for the others."""
    short = min(reduced.canvas.width, reduced.canvas.height)
    if kind != "preview" or reduced.dims != 2 or short <= PREVIEW_GIF_SIDE:
        return {}
    return {"gif_scale": float(Fraction(reduced.output.gif_scale) * Fraction(PREVIEW_GIF_SIDE, short))}


def reduce_preset(preset: Preset, ratio: Fraction, kind: str = "preview") -> tuple[Preset, str]:
    """(the reduced preset, its note): the preset on a canvas `ratio` (0 < ratio <= 1) of its
    sides, validated like any preset (PresetError naming the problem, e.g. a distance that no
    longer fits). A preview (kind 'preview') of a uniform pixel-unit texture whose sensor would
    fall under the floor (is_window) is a window: the agents per pixel, distances and diffuse
    kept, the texture at its own pixel scale, which is what such presets' look depends on. A 3D
    preview's camera frame is at most PREVIEW_FRAME_3D pixels on its long side (preview_frame)
    and it shows at most PREVIEW_FRAMES_3D frames (strided).
    A ratio of 1, or one that leaves the canvas as it is, returns the preset itself and an
    empty note."""
    window = kind == "preview" and is_window(preset, ratio)
    width = reduced_side(preset.canvas.width, ratio)
    height = reduced_side(preset.canvas.height, ratio)
    if (width, height) == (preset.canvas.width, preset.canvas.height) and (
        kind != "preview" or thinning(preset, ratio) == 1
    ):
        return preset, ""
    frame = PREVIEW_FRAME_3D if kind == "preview" and preset.dims == 3 else None
    thinned = thinning(preset, ratio) if kind == "preview" else 1
    data = reduced_data(preset, width, height, window_scale(preset) if window else None, frame, thinned)
    reduced = build_preset(data, f"--{kind}", base=".", carried=preset.carried)
    text = note(preset, reduced, kind, window, thinned)
    description = f"{preset.description} ({text})" if preset.description else f"({text})"
    updates = {"description": description, "checkpoint": preset.checkpoint}
    output = reduced.output.model_copy(update={"fields": preset.output.fields, **preview_gif(reduced, kind)})
    return reduced.model_copy(update={**updates, "output": output}), text
