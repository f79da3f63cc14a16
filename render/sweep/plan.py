"""Planning: jobs that share a simulation (simulation.batch_key) grouped into chunks, batches sized
to the device's memory, and the check that every job fits a device at all."""

from __future__ import annotations

import math

import torch

from physarum.render.base.errors import RenderError
from physarum.render.out.frames import QUEUE_FRAMES
from physarum.render.preset import Preset
from physarum.render.run import machine
from physarum.render.sim import simulation
from physarum.render.sweep.expand import Job, Sweep
from physarum.render.sweep.labels import format_params

DEFAULT_MAX_BATCH = 64  # simulations per batch: each brings its own encoder process on the host
DEVICE_MEMORY_SHARE = 0.85  # of the free device memory a batch may plan for (allocator slack)
HOST_MEMORY_SHARE = 0.5  # of the free host memory the batch's frame rings and encoders may use
# Host bytes per canvas pixel of one job: the frame ring (index, RGB) and a rough allowance for
# x264's lookahead and reference frames (yuv420p, about 60 frames at 1.5 bytes per pixel).
HOST_BYTES_PER_PIXEL = 4 * (QUEUE_FRAMES + 3) + 96


def plan_chunks(jobs: list[Job], max_batch: int, workers: int = 1) -> list[list[Job]]:
    """Jobs grouped by simulation.batch_key into chunks of at most max_batch, split further until
    every worker has a chunk (where there are jobs enough), largest first.

    A chunk takes every k-th job, not a run of neighbours: a job's speed depends on its
    parameters, and interleaved chunks of a grid take about as long as each other (the halves
    of a grid do not: docs/benchmarks.md)."""
    groups: dict[tuple, list[Job]] = {}
    for job in jobs:
        groups.setdefault(simulation.batch_key(job.preset), []).append(job)
    chunks = []
    for group in groups.values():
        parts = math.ceil(len(group) / max_batch)
        chunks.extend(group[i::parts] for i in range(parts))
    while len(chunks) < workers:
        largest = max(chunks, key=len, default=[])
        if len(largest) < 2:
            break
        chunks.remove(largest)
        chunks.extend([largest[0::2], largest[1::2]])
    return sorted(chunks, key=lambda chunk: -len(chunk) * _job_cost(chunk[0].preset))


def _job_cost(preset: Preset) -> int:
    """A rough measure of a job's work, so that the largest chunks start first."""
    steps = preset.run.steps + preset.run.warmup
    return steps * (preset.agents.count + preset.canvas.width * preset.canvas.height)


def batch_limit(preset: Preset, backend: str, device: torch.device) -> int:
    """How many simulations of this shape fit one batch on `device`, and its frames on the host."""
    fixed = machine.estimated_bytes(preset, backend, 0)
    per_job = machine.estimated_bytes(preset, backend, 1) - fixed
    host_per_job = preset.canvas.width * preset.canvas.height * HOST_BYTES_PER_PIXEL
    host_budget = machine.available_bytes(torch.device("cpu")) * HOST_MEMORY_SHARE
    if device.type == "cpu":  # the simulation lives in host memory too
        per_job += host_per_job
        host_per_job = 0
    device_budget = machine.available_bytes(device) * DEVICE_MEMORY_SHARE - fixed
    limit = int(device_budget // per_job)
    if host_per_job:
        limit = min(limit, int(host_budget // host_per_job))
    return max(1, limit)


def check_fits(sweep: Sweep, devices: list[str], backend: str) -> None:
    """Refuse, before anything is written, jobs that fit no device even one at a time."""
    problems = []
    for device in dict.fromkeys(devices):
        torch_device = machine.resolve_device(device)
        resolved = machine.resolve_backend(backend, torch_device)
        free = machine.available_bytes(torch_device)
        for job in sweep.jobs:
            needed = machine.estimated_bytes(job.preset, resolved, 1)
            if needed > free:
                problems.append(
                    f"{job.name} ({format_params(job.params)}): needs about {needed / 2**30:.1f} GiB "
                    f"on {device} but {free / 2**30:.1f} GiB are free"
                )
    if problems:
        raise RenderError("\n".join(problems))
