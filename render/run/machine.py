"""The machine a render runs on: device and backend choice, memory, cores and threads.

Every question about the host or the accelerator is answered here, so that the stages (simulation,
frames, encoders) and the commands (render, sweep, sensitivity, bench) ask it the same way.
"""

from __future__ import annotations

import os
import platform

import torch

from ...kernels import AUTO_ORDER, BACKENDS, BACKENDS_3D, backend_problem, get_backend
from ..base.errors import RenderError
from ..look.loops import check_closest, kept_maps, replay_bytes
from ..look.volume import working_bytes
from ..out.volume_export import stack_bytes
from ..preset import Preset


def resolve_device(requested: str | None) -> torch.device:
    if requested is None:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise RenderError(f"--device {requested!r}: not a device; use cpu, cuda or cuda:N") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise RenderError(f"--device {requested}: no CUDA GPU is available here; use --device cpu")
    if device.type == "cuda" and (device.index or 0) >= torch.cuda.device_count():
        raise RenderError(
            f"--device {requested}: this machine has {torch.cuda.device_count()} CUDA device(s)"
        )
    if device.type == "mps":
        raise RenderError(
            f"--device {requested}: Apple's MPS is not supported: the exactness contract (the same "
            "bytes on every machine) is proven on CPUs and CUDA GPUs only; on a Mac use --device cpu "
            "(the default there)"
        )
    if device.type not in ("cpu", "cuda"):
        raise RenderError(f"--device {requested}: only cpu and cuda devices are supported")
    return device


def resolve_backend(requested: str, device: torch.device) -> str:
    """The registered backend (kernels.BACKENDS) for --backend auto|NAME on `device`: auto is
    the first of kernels.AUTO_ORDER for the device's type that can run there."""
    if requested == "auto":
        usable = (n for n in AUTO_ORDER[device.type] if backend_problem(n, device) is None)
        return next(usable, "torch")
    if requested not in BACKENDS:
        raise RenderError(f"--backend {requested!r}: choose auto, {', '.join(BACKENDS)}")
    problem = backend_problem(requested, device)
    if problem is not None:
        sep = " " if problem.startswith("needs") else ": "
        raise RenderError(f"--backend {requested}{sep}{problem}")
    return requested


def estimated_bytes(preset: Preset, backend: str, batch: int = 1) -> int:
    """Peak device bytes of a render, counted from the backend's own tensors and temporaries
    (the registered backend's device_bytes, api.Simulation).

    With S species a simulation is S groups of agents.count // S agents, each with its own trail
    map; walls add a byte per cell, food a float32 map per group, and sensing a mixed map per
    group (the interaction's weighted sum of the species' maps); a crossfade loop keeps its first
    loop_frames trail maps (float32, per group) on the device until the end."""
    species, cells = preset.species_count, _cells(preset)
    frame = cells * (8 + 8 * (species - 1))  # kthvalue copy, index, level and RGB frames
    frame += working_bytes(preset) if preset.dims == 3 else 0  # the volume renderer's
    kept = batch * species * cells * 4 * kept_maps(preset)  # a crossfade's first trail maps
    return int(simulation_bytes(preset, backend, batch) + frame + kept)


def simulation_bytes(preset: Preset, backend: str, batch: int = 1) -> int:
    """The simulations' part of estimated_bytes: the device_bytes of the backend's class of the
    preset's dimensions (kernels.get_backend(name, dims): a 3D preset is sized by the voxel
    model's class), per agent and per cell of each group, and the worlds' maps. RenderError
    where the backend has no class of those dimensions."""
    species, cells = preset.species_count, _cells(preset)
    agents = preset.agents_per_species
    try:
        backend_class = get_backend(backend, preset.dims)
    except ValueError:
        raise RenderError(
            f"{preset.name}: --backend {backend} has no {preset.dims}D simulation; "
            f"choose one of {', '.join(BACKENDS_3D if preset.dims == 3 else BACKENDS)}"
        ) from None
    per_agent, per_cell = backend_class.device_bytes(agents)
    world = preset.world
    per_group_cell = per_cell + (4 if species > 1 else 0) + (4 if world and world.food else 0)
    per_simulation_cell = 1 if world and world.walls else 0
    return int(
        batch * (species * (agents * per_agent + cells * per_group_cell) + cells * per_simulation_cell)
    )


def _cells(preset: Preset) -> int:
    """The cells of a preset's canvas (a 3D preset's voxels)."""
    return preset.canvas.width * preset.canvas.height * (preset.canvas.depth or 1)


def available_bytes(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    try:
        with open("/proc/meminfo") as meminfo:
            fields = dict(line.split(":", 1) for line in meminfo)
        return int(fields["MemAvailable"].split()[0]) * 1024
    except (OSError, KeyError, ValueError):
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def check_memory(
    preset: Preset, backend: str, device: torch.device, batch: int = 1, rgb: bool | None = None
) -> None:
    """RenderError, before anything runs, where the render's device memory (estimated_bytes) or
    its ping-pong replay store (loops.replay_bytes, host memory: on a CPU the same memory, added
    to the device's; `rgb`: whether --frames-dir records RGB frames too, None: the formats say)
    exceed what is free, or a 2D preset's space-time stack (volume_export.stack_bytes, host memory)
    does; and, since every render makes this check before it starts, the work of a closest
    loop's search (loops.check_closest: quadratic in the frames, on the host)."""
    check_closest(preset)
    stack = batch * stack_bytes(preset)  # a 2D preset's space-time stack, on the host
    host = available_bytes(torch.device("cpu"))
    if stack and stack > host - (estimated_bytes(preset, backend, batch) if device.type == "cpu" else 0):
        raise RenderError(_stack_problem(preset, stack, host))
    needed, free = estimated_bytes(preset, backend, batch), available_bytes(device)
    replay = batch * replay_bytes(preset, rgb)
    gib = 2.0**30
    if device.type == "cpu":
        needed += replay
    elif replay > available_bytes(torch.device("cpu")):
        free = available_bytes(torch.device("cpu"))
        raise RenderError(_replay_problem(preset, replay, free))
    if needed > free:
        if replay and device.type == "cpu" and replay > free - (needed - replay):
            raise RenderError(_replay_problem(preset, replay, free - (needed - replay)))
        raise RenderError(
            f"{preset.name}: canvas {_canvas_text(preset)} with "
            f"{preset.agents.count} agents needs about {needed / gib:.1f} GiB on {device} "
            f"({backend} backend) but {free / gib:.1f} GiB are free; lower canvas or agents.count"
        )


def _canvas_text(preset: Preset) -> str:
    """W x H, or W x H x D for a 3D preset, as a memory message names the canvas."""
    sides = (preset.canvas.width, preset.canvas.height, preset.canvas.depth)
    return "x".join(str(side) for side in sides if side)


def _stack_problem(preset: Preset, stack: int, free: int) -> str:
    gib = 2.0**30
    return (
        f"{preset.name}: output.volume: the space-time stack of {preset.frames} frames keeps up to "
        f"{stack / gib:.1f} GiB of host memory while it is written (obj and stl at their worst) but "
        f"{max(0, free) / gib:.1f} GiB are free; fewer frames (a larger run.steps_per_frame), a smaller "
        "canvas or output.gif_scale, or output.volume.formats without obj and stl"
    )


def _replay_problem(preset: Preset, replay: int, free: int) -> str:
    gib = 2.0**30
    return (
        f"{preset.name}: loop_mode ping-pong keeps its {preset.frames} frames to play them backwards: "
        f"up to {replay / gib:.1f} GiB of host memory (compressed; as much as raw for noisy frames) "
        f"but {max(0, free) / gib:.1f} GiB are free; fewer frames (a larger run.steps_per_frame), a "
        "smaller canvas or output.gif_scale, or loop_mode crossfade"
    )


def limit_cpu_threads(share: int = 2) -> int:
    """Give torch's CPU threads a `share`-th of this process's cores (at least one, never more
    than torch has now); returns the count. Every command that runs torch on the CPU calls it
    (render and sweep chunks, sensitivity, profile, bench; a sweep worker with its share).

    Torch's OpenMP threads spin while they wait: with a thread per core, any other busy thread or
    process (the encoders, another worker, another program) slows torch down several times
    (docs/benchmarks.md)."""
    threads = max(1, min(torch.get_num_threads(), host_cores() // max(1, share)))
    torch.set_num_threads(threads)
    return threads


def share_cpu_with_encoders() -> None:
    """Leave half the cores to the encoder threads on a CPU render (limit_cpu_threads)."""
    limit_cpu_threads(2)


def encoder_cores(job: int, jobs: int) -> list[int] | None:
    """The cores job `job` of a batch of `jobs` gives its encoder process: an equal slice of this
    process's cores (round robin when there are more jobs than cores), so that the batch's
    encoders share the host instead of each running its 16 x264 threads over every core. None
    (every core) for a batch of one, or where affinity cannot be set. Bytes do not depend on it:
    x264's thread count is fixed (encode.MP4_THREADS), whatever cores its threads run on."""
    if jobs <= 1 or not hasattr(os, "sched_getaffinity"):
        return None
    cores = sorted(os.sched_getaffinity(0))
    if jobs >= len(cores):
        return [cores[job % len(cores)]]
    return cores[job * len(cores) // jobs : (job + 1) * len(cores) // jobs]


def host_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def device_name(device: torch.device) -> str:
    """What sidecars, reports and benchmarks call the device: the GPU's name, or the CPU's cores
    and architecture."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return f"{os.cpu_count()}-core {platform.machine()} CPU"
