"""How long a render will take, said before a long one starts: its simulation and, for a 3D
preset, the ray march of its frames.

The simulation: seconds = steps x (agents x AGENT_S + cells x CELL_S), with constants per kind of
machine and dimensions (THROUGHPUT, THROUGHPUT_3D). The 2D CPU constants were measured on the
2-core machine of docs/benchmarks.md: labyrinth (2,000,000 agents, 1024^2, 1500 steps) took 317 s
with the torch backend, about 0.21 s a step, which these constants give; small canvases run
faster per agent (they stay in cache: labyrinth's 256^2 preview, 125,000 agents, took 5.6 s of
simulation where the constants say 20 s), so the estimate errs long, never short by much. A 3D
step on the CPU costs about 1e-6 s an agent (five sensors in a cube map) and 4e-8 s a voxel (the
27-cell diffusion): torch, one thread, on the 2-core machine, 48^3 and 112^3 volumes of 25,000
and 100,000 agents. The GPU's are the H200 bench figures (Triton: 4.8e10 agent-steps a second on
L; the eager torch step 20 times slower); a 3D step on a GPU is counted as a 2D one.

A 3D preset's frames: each frame the outputs show (loops.shown_frames) is ray-marched once per
lens view (camera.depth_of_field.rays, else 1): seconds = frames x views x (pixels x samples x
SAMPLE_S + pixels x PIXEL_S) (MARCH, by device type: the torch marcher on a CPU, the Triton
kernel on a GPU), PIXEL_S being the frame's own work (compositing, the GIF's palette). Measured on
the 2-core machine (torch, one thread, 32^3 volume, 128^2 to 1024^2 frames of 8 and 64 samples):
9e-8 s a sample, 9e-7 s a pixel; on the H200 the kernel marches a 1024^2 frame of 887 samples in
11 ms (docs/3d.md). Encoding is not counted: it runs beside the simulation.
"""

from __future__ import annotations

from ..look.camera import default_samples
from ..look.loops import shown_frames
from ..preset import Preset
from ..preset.camera import Camera

SHOWN_FROM_S = 60.0  # an estimate at or above this is said before the render
# (device type, backend) -> (seconds per agent-step, seconds per cell-step)
THROUGHPUT = {
    ("cpu", "torch"): (7e-8, 7e-8),
    ("cuda", "triton"): (2.1e-11, 1e-11),
    ("cuda", "torch"): (4.2e-10, 2e-10),
}
THROUGHPUT_3D = {**THROUGHPUT, ("cpu", "torch"): (1e-6, 4e-8)}
# device type -> (seconds per pixel-sample, seconds per pixel) of a 3D frame's ray march
MARCH = {"cpu": (9e-8, 9e-7), "cuda": (1.2e-11, 2e-9)}


def render_seconds(preset: Preset, device_type: str, backend: str) -> float | None:
    """The estimated seconds of the preset's simulation (warmup and steps) and, for a 3D preset,
    the ray march of its frames; None for a machine THROUGHPUT does not know."""
    constants = (THROUGHPUT_3D if preset.dims == 3 else THROUGHPUT).get((device_type, backend))
    if constants is None:
        return None
    agent_s, cell_s = constants
    cells = preset.canvas.width * preset.canvas.height * (preset.canvas.depth or 1) * preset.species_count
    simulation = preset.end_step * (preset.agents.count * agent_s + cells * cell_s)
    return simulation + march_seconds(preset, device_type)


def march_seconds(preset: Preset, device_type: str) -> float:
    """The estimated seconds of a 3D preset's ray march (MARCH), 0 for a 2D preset."""
    if preset.dims != 3:
        return 0.0
    sample_s, pixel_s = MARCH.get(device_type, MARCH["cpu"])
    camera = preset.camera or Camera()
    width, height = preset.frame_size
    grid = (preset.canvas.depth, preset.canvas.height, preset.canvas.width)
    samples = camera.samples or default_samples(grid)
    views = camera.depth_of_field.rays if camera.depth_of_field is not None else 1
    return shown_frames(preset) * views * width * height * (samples * sample_s + pixel_s)


def estimate_line(preset: Preset, device_type: str, backend: str) -> str | None:
    """The line said before a render estimated at SHOWN_FROM_S or more, else None."""
    seconds = render_seconds(preset, device_type, backend)
    if seconds is None or seconds < SHOWN_FROM_S:
        return None
    minutes = seconds / 60
    shown = f"{minutes:.0f} minutes" if minutes < 120 else f"{minutes / 60:.1f} hours"
    canvas = "x".join(
        str(side) for side in (preset.canvas.width, preset.canvas.height, preset.canvas.depth) if side
    )
    frames = ""
    if preset.dims == 3:
        width, height = preset.frame_size
        frames = f", {shown_frames(preset):,} frames of {width}x{height} ray-marched"
    return (
        f"note: this render is estimated at about {shown} on this {device_type} ({backend}): "
        f"{preset.agents.count:,} agents on {canvas} for {preset.end_step:,} steps{frames}; "
        "--preview renders the same picture smaller in seconds"
    )
