"""`physarum profile`: where a step's time goes, per phase and per kernel, with a trace file.

Warm-up steps run outside the record; the first-step initialisation (spawn, tables, compilation)
is timed separately. Each recorded step is the backend's profiled_step (api.Simulation), its
phases (Simulation.phases: the reference's sense, steer, move, deposit and diffuse; the Triton
backend's kernels) each in a named range.
"""

from __future__ import annotations

import os
import time
import warnings
from collections import defaultdict
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from ..base.errors import RenderError
from ..base.files import written_whole
from ..preset import Preset
from ..run.machine import check_memory
from ..sim.simulation import make_simulation


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def profile_preset(
    preset: Preset, backend: str, device: torch.device, steps: int, warmup: int, trace: Path, log=print
) -> dict:
    """Profile `steps` steps after `warmup` and write the Perfetto trace to `trace` (whole or not
    at all); a trace path that cannot be a file is refused before any step (check_trace_path),
    and a trace the profiler did not write is an error, never a success; so is a preset whose
    render would not fit in memory (machine.check_memory: a 2D or 3D preset, before spawning)."""
    check_trace_path(trace)
    check_memory(preset, backend, device)
    started = time.perf_counter()
    simulation = make_simulation(preset, backend, device)
    simulation.advance(1)
    _sync(device)
    first_step = time.perf_counter() - started
    simulation.advance(warmup)
    _sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
    with profile(activities=activities) as prof:
        with record_function("steps"):
            for _ in range(steps):
                simulation.profiled_step(record_function)
        _sync(device)
    export_trace(prof, trace)
    return summarise(prof, steps, device, first_step, backend, type(simulation).phases, log)


def check_trace_path(trace: Path) -> None:
    """RenderError unless `trace` can be written as a file: nothing but a regular file at it (a
    folder or a device such as /dev/full is refused), and its nearest existing folder a writable
    folder. Writes nothing."""
    trace = Path(trace)
    problem = None
    if trace.is_symlink() or (trace.exists() and not trace.is_file()):
        problem = "something other than a regular file is there (a folder, link or device)"
    else:
        folder = trace.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            problem = f"{folder} is not a folder"
        elif not os.access(folder, os.W_OK | os.X_OK):
            problem = f"the folder {folder} is not writable"
    if problem:
        raise RenderError(f"--trace {trace}: cannot write the trace there: {problem}; give a file path")


def export_trace(prof, trace: Path) -> None:
    """The profiler's Chrome trace written whole to `trace` (files.written_whole); the profiler
    reports a failed write only in its log, so an empty file is an error naming the path."""
    trace = Path(trace)
    trace.parent.mkdir(parents=True, exist_ok=True)
    with written_whole(trace) as temporary:
        prof.export_chrome_trace(str(temporary))
        if temporary.stat().st_size == 0:
            raise RenderError(f"--trace {trace}: the profiler wrote no trace there; give another file path")


_GPU = torch.autograd.DeviceType.CUDA


def cpu_phase_times(events, phases: tuple[str, ...]) -> dict[str, float]:
    """Microseconds of each phase: the CPU time of its ranges."""
    times = defaultdict(float)
    for event in events:
        if event.name in phases and event.device_type != _GPU:
            times[event.name] += event.cpu_time
    return times


def gpu_phase_times(events, kernels, phases: tuple[str, ...]) -> dict[str, float]:
    """Microseconds of each phase: the device time of the kernels that ran inside its ranges on
    the GPU's timeline (innermost range first). A range's own device time would miss kernels
    that no torch operation launched, such as Triton's."""
    spans = [e for e in events if e.device_type == _GPU and e.name in phases]
    times = defaultdict(float)
    for kernel in kernels:
        start, end = kernel.time_range.start, kernel.time_range.end
        inside = [s for s in spans if s.time_range.start <= start and end <= s.time_range.end]
        if inside:
            phase = min(inside, key=lambda s: s.time_range.end - s.time_range.start)
            times[phase.name] += kernel.device_time
    return times


def summarise(
    prof, steps: int, device: torch.device, first_step: float, backend: str, phases: tuple[str, ...], log
) -> dict:
    """The report of a record of `steps` profiled steps whose ranges are named by `phases`."""
    events = prof.events()
    on_gpu = device.type == "cuda"
    ranges = {"steps", *phases}
    kernels = [e for e in events if on_gpu and e.device_type == _GPU and e.name not in ranges]
    per_kernel = defaultdict(float)
    for event in kernels:
        per_kernel[event.name] += event.device_time / 1e3 / steps  # ms per step
    per_phase = gpu_phase_times(events, kernels, phases) if on_gpu else cpu_phase_times(events, phases)
    per_phase = {name: us / 1e3 / steps for name, us in per_phase.items()}
    report = {
        "backend": backend,
        "device": str(device),
        "steps": steps,
        "first_step_s": first_step,
        "launches_per_step": len(kernels) / steps if on_gpu else None,
        "ms_per_step_by_phase": per_phase,
        "ms_per_step_by_kernel": dict(per_kernel),
    }
    log(f"backend {backend} on {device}: first step (spawn, tables, compile) {first_step * 1e3:.1f} ms")
    if on_gpu:
        log(f"kernel launches per step: {report['launches_per_step']:.1f}")
    log("time per step by phase:")
    for phase, ms in sorted(per_phase.items(), key=lambda kv: -kv[1]):
        log(f"  {phase:<26} {ms:9.4f} ms")
    if per_kernel:
        log("GPU time per step by kernel:")
        for name, ms in sorted(per_kernel.items(), key=lambda kv: -kv[1])[:12]:
            log(f"  {name[:60]:<60} {ms:9.4f} ms")
    return report
