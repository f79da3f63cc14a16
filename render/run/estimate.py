"""How long a render will take, said before a long one starts: its simulation and, for a 3D
preset, the ray march of its frames.

The simulation: seconds = steps x (agents x AGENT_S + cells x CELL_S), with constants per kind of
machine and dimensions (THROUGHPUT, THROUGHPUT_3D), cells counted once per species' trail. On a
CPU a 2D step's agent in a world (walls, food, an image) costs CPU_WORLD_AGENT times more, and
where its trails pass CPU_CACHE_CELLS they fall out of the cache: each agent and cell costs
(cells / CPU_CACHE_CELLS) ** CPU_SPILL_POWER times more (cpu_spill: the square root in 2D, the
0.75th power for a volume: both fitted). The CPU
constants and those rules were fitted to the mean step of the whole runs of ten 2D curated
presets and the five 3D ones at full size, half size and their previews (cosmos: its preview),
one torch thread to a render on the 2-core machine (the harness's case estimate, rows in
benchmarks/unreleased/table-cpu-2core.csv): the estimate is 0.9 to 2.3 times each, long
rather than short (the constants before, one rate for agents and cells fitted to an older
labyrinth, said 1.5 to 11 times: rings's preview 11 times, tribes's one-minute preview about 5
minutes; the 3D ones 1.5 to 4.5 times). The GPU's are the H200 bench figures (Triton: 4.8e10
agent-steps a second on L; the eager torch step 20 times slower); a 3D step on a GPU is counted
as a 2D one. The steps are those the render simulates:
every one, or where a platform target trims the MP4 and nothing else reads past its kept frames,
those to the last frame they come from (out/specs.py render_trim, asked as the runner asks it:
run/runner.py).

A 3D preset's frames: each frame the outputs show (loops.shown_frames; a trimmed run's kept
frames) is ray-marched once per
lens view (camera.depth_of_field.rays, else 1): seconds = frames x views x (pixels x samples x
SAMPLE_S + pixels x PIXEL_S) (MARCH, by device type: the torch marcher on a CPU, the Triton
kernel on a GPU), PIXEL_S being the frame's own work (compositing, the GIF's palette). Measured on
the 2-core machine (torch, one thread, 32^3 volume, 128^2 to 1024^2 frames of 8 and 64 samples):
9e-8 s a sample, 9e-7 s a pixel; on the H200 the kernel marches a 1024^2 frame of 887 samples in
11 ms (docs/3d.md). Encoding is not counted: it runs beside the simulation.
"""

from __future__ import annotations

from ..base.errors import RenderError
from ..formats.targets import TrimmedRun
from ..look.camera import default_samples
from ..look.loops import shown_frames
from ..out.specs import render_trim
from ..preset import Preset
from ..preset.camera import Camera
from ..sim.course import Course

SHOWN_FROM_S = 60.0  # an estimate at or above this is said before the render
# (device type, backend) -> (seconds per agent-step, seconds per cell-step)
THROUGHPUT = {
    ("cpu", "torch"): (3.5e-8, 7.5e-9),
    ("cuda", "triton"): (2.1e-11, 1e-11),
    ("cuda", "torch"): (4.2e-10, 2e-10),
}
THROUGHPUT_3D = {**THROUGHPUT, ("cpu", "torch"): (3.5e-7, 2.4e-8)}
# A CPU step's trails past this many cells (all species', 4 MiB of float32) fall out of cache,
# each agent and cell then costing (cells / CPU_CACHE_CELLS) ** CPU_SPILL_POWER[dims] times more
CPU_CACHE_CELLS = 1 << 20
CPU_SPILL_POWER = {2: 0.5, 3: 0.75}
# An agent of a 2D CPU step in a world (walls, food, an image: the preset's world section) costs
# this many times one on an empty torus (embers, feast, maze: 76 to 110 ns an agent-step at full
# size, against 28 to 41 for labyrinth, veins and cave)
CPU_WORLD_AGENT = 2.75
# device type -> (seconds per pixel-sample, seconds per pixel) of a 3D frame's ray march
MARCH = {"cpu": (9e-8, 9e-7), "cuda": (1.2e-11, 2e-9)}


def stopping_trim(preset: Preset, beside: tuple[str, ...] = ()) -> TrimmedRun | None:
    """The platform target's trim that stops a render of `preset` early (specs.render_trim;
    beside: what the render reads besides its outputs,
    runner.readers_beside), else None: every frame simulated. A target the render refuses
    (its check says why, before work) stops nothing here."""
    try:
        trim = render_trim(preset, beside)
    except RenderError:
        return None
    return trim if trim is not None and trim.frames is not None else None


def simulated_steps(preset: Preset, beside: tuple[str, ...] = (), start: int = 0) -> int:
    """The steps (warmup included) a render of `preset` simulates: to the end, or to the last
    frame a stopping trim keeps (stopping_trim); from `start`, the step a resumed render goes on
    from (its checkpoint's)."""
    trim = stopping_trim(preset, beside)
    end = preset.end_step if trim is None else Course(preset.run).frame_end(trim.frames - 1)
    return max(end - start, 0)


def render_seconds(
    preset: Preset, device_type: str, backend: str, beside: tuple[str, ...] = (), start: int = 0
) -> float | None:
    """The estimated seconds of the preset's simulation (the steps a render simulates:
    simulated_steps, each step_seconds) and, for a 3D preset, the ray march of its frames (from
    `start`: the share of its steps left); None for a machine THROUGHPUT does not know. beside:
    as stopping_trim."""
    step = step_seconds(preset, device_type, backend)
    if step is None:
        return None
    whole = simulated_steps(preset, beside)
    steps = max(whole - start, 0)
    return steps * step + march_seconds(preset, device_type, beside) * steps / max(whole, 1)


def step_seconds(preset: Preset, device_type: str, backend: str) -> float | None:
    """The estimated seconds of one simulation step (agents x AGENT_S + cells x CELL_S, on a CPU
    with a world's agent factor and cpu_spill); None for a machine THROUGHPUT does not know."""
    constants = (THROUGHPUT_3D if preset.dims == 3 else THROUGHPUT).get((device_type, backend))
    if constants is None:
        return None
    agent_s, cell_s = constants
    cells = preset.canvas.width * preset.canvas.height * (preset.canvas.depth or 1) * preset.species_count
    if device_type == "cpu":
        spill = cpu_spill(cells, preset.dims)
        agent_s *= CPU_WORLD_AGENT if preset.world is not None and preset.dims == 2 else 1.0
        agent_s, cell_s = agent_s * spill, cell_s * spill
    return preset.agents.count * agent_s + cells * cell_s


def cpu_spill(cells: int, dims: int = 2) -> float:
    """How many times more each agent and cell of a CPU step costs where its trails (`cells`,
    all species') pass CPU_CACHE_CELLS: (cells / CPU_CACHE_CELLS) ** CPU_SPILL_POWER[dims], else
    1."""
    return max(1.0, cells / CPU_CACHE_CELLS) ** CPU_SPILL_POWER[dims]


def marched_frames(preset: Preset, beside: tuple[str, ...] = ()) -> int:
    """The frames a render of a 3D preset ray-marches: those its outputs show, or a stopping
    trim's kept frames (stopping_trim)."""
    trim = stopping_trim(preset, beside)
    return shown_frames(preset) if trim is None else trim.kept


def march_seconds(preset: Preset, device_type: str, beside: tuple[str, ...] = ()) -> float:
    """The estimated seconds of a 3D preset's ray march (MARCH) of its marched_frames, 0 for a
    2D preset."""
    if preset.dims != 3:
        return 0.0
    sample_s, pixel_s = MARCH.get(device_type, MARCH["cpu"])
    camera = preset.camera or Camera()
    width, height = preset.frame_size
    grid = (preset.canvas.depth, preset.canvas.height, preset.canvas.width)
    samples = camera.samples or default_samples(grid)
    views = camera.depth_of_field.rays if camera.depth_of_field is not None else 1
    return marched_frames(preset, beside) * views * width * height * (samples * sample_s + pixel_s)


def estimate_line(
    preset: Preset,
    device_type: str,
    backend: str,
    beside: tuple[str, ...] = (),
    start: int = 0,
    reduced: bool = False,
) -> str | None:
    """The line said before a render estimated at SHOWN_FROM_S or more, else None; its steps
    those the render simulates (beside: as stopping_trim), from `start` where it resumes. It
    points to --preview, unless the preset is a reduction already (`reduced`: --preview or
    --reduce made it) or the render resumes (a resumed render keeps its checkpoint's canvas)."""
    seconds = render_seconds(preset, device_type, backend, beside, start)
    if seconds is None or seconds < SHOWN_FROM_S:
        return None
    minutes = seconds / 60
    shown = (
        f"{minutes:.0f} minute{'' if round(minutes) == 1 else 's'}"
        if minutes < 120
        else f"{minutes / 60:.1f} hours"
    )
    canvas = "x".join(
        str(side) for side in (preset.canvas.width, preset.canvas.height, preset.canvas.depth) if side
    )
    frames = ""
    if preset.dims == 3:
        width, height = preset.frame_size
        frames = f", {marched_frames(preset, beside):,} frames of {width}x{height} ray-marched"
    hint = (
        "" if reduced or start else "; --preview renders the same picture smaller, in a fraction of the time"
    )
    return (
        f"note: this render is estimated at about {shown} on this {device_type} ({backend}): "
        f"{preset.agents.count:,} agents on {canvas} for {steps_said(preset, beside, start)}{frames}{hint}"
    )


def steps_said(preset: Preset, beside: tuple[str, ...] = (), start: int = 0) -> str:
    """The steps the estimate counts, as its line says them: "1,500 steps", "700 steps left of
    1,500 (resumed at step 800)", or where a trim stops the render, "145 of 205 steps (mp4
    --target x keeps 140 of 200 frames)"."""
    steps, trim = simulated_steps(preset, beside, start), stopping_trim(preset, beside)
    if start:
        return f"{steps:,} steps left of {preset.end_step:,} (resumed at step {start:,})"
    if trim is None:
        return f"{steps:,} steps"
    return (
        f"{steps:,} of {preset.end_step:,} steps (mp4 --target {trim.name} keeps {trim.kept} of "
        f"{trim.handed} frames)"
    )
