"""`physarum profile`: where a step's time goes, per phase and per kernel, with a trace file.

Warm-up steps run outside the record; the first-step initialisation (spawn, tables, compilation)
is timed separately. The reference backend's phases are wrapped in named ranges; the Triton
backend's phases are its kernels (sense/steer/move/deposit fused in one, diffuse in another).
"""

from __future__ import annotations

import time
import warnings
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from physarum.kernels import reference
from physarum.render.preset import Preset
from physarum.render.simulation import make_simulation

PHASE_OF_KERNEL = (("agent", "sense/steer/move+deposit"), ("diffuse", "diffuse"))


@contextmanager
def _phase_ranges():
    """Wrap the reference's phase methods in record_function ranges while profiling."""
    phases = {
        "sense": "sense/steer/move",
        "hash_before_last": "sense/steer/move",
        "steer": "sense/steer/move",
        "move": "sense/steer/move",
        "stop_at_walls": "sense/steer/move",
        "deposit_counts": "deposit",
        "diffuse_and_decay": "diffuse",
    }
    originals = {name: getattr(reference._Plan, name) for name in phases}

    def wrap(name, function):
        def ranged(*args, **kwargs):
            with record_function(phases[name]):
                return function(*args, **kwargs)

        return ranged

    for name, function in originals.items():
        setattr(reference._Plan, name, wrap(name, function))
    try:
        yield
    finally:
        for name, function in originals.items():
            setattr(reference._Plan, name, function)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def profile_preset(
    preset: Preset, backend: str, device: torch.device, steps: int, warmup: int, trace: Path, log=print
) -> dict:
    started = time.perf_counter()
    simulation = make_simulation(preset, backend, device)
    simulation.advance(1)
    _sync(device)
    first_step = time.perf_counter() - started
    simulation.advance(warmup)
    _sync(device)
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    warnings.filterwarnings("ignore", message=".*Profiler clears events.*")
    with _phase_ranges(), profile(activities=activities) as prof:
        with record_function("steps"):
            for _ in range(steps):
                simulation.eager_step() if hasattr(simulation, "eager_step") else simulation.advance(1)
        _sync(device)
    trace.parent.mkdir(parents=True, exist_ok=True)
    prof.export_chrome_trace(str(trace))
    return summarise(prof, steps, device, first_step, backend, log)


def summarise(prof, steps: int, device: torch.device, first_step: float, backend: str, log) -> dict:
    events = prof.events()
    on_gpu = device.type == "cuda"
    ranges = {"steps", "sense/steer/move", "deposit", "diffuse"}
    kernels = [
        e
        for e in events
        if on_gpu and e.device_type == torch.autograd.DeviceType.CUDA and e.name not in ranges
    ]
    per_kernel = defaultdict(float)
    for event in kernels:
        per_kernel[event.name] += event.device_time / 1e3 / steps  # ms per step
    per_phase = defaultdict(float)
    for event in events:
        if event.name in ("sense/steer/move", "deposit", "diffuse"):
            time_us = event.device_time if on_gpu else event.cpu_time
            per_phase[event.name] += time_us / 1e3 / steps
    if backend == "triton":
        for name, total in per_kernel.items():
            for key, phase in PHASE_OF_KERNEL:
                if key in name:
                    per_phase[phase] += total
    report = {
        "backend": backend,
        "device": str(device),
        "steps": steps,
        "first_step_s": first_step,
        "launches_per_step": len(kernels) / steps if on_gpu else None,
        "ms_per_step_by_phase": dict(per_phase),
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
