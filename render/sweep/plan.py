"""Planning: jobs that share a simulation (shape.batch_key) grouped into chunks, what a run would
do with them (the dry run), batches sized to the device's memory, and the check that every job
fits a device at all. The plan and the dry run load no torch (`physarum sweep --dry-run` answers
at once); sizing batches to a device imports it, in the functions that do.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from ..base.errors import RenderError
from ..preset import Preset
from ..world.shape import batch_key
from .expand import Job, Sweep
from .labels import format_params
from .lock import running_store_sweep, running_sweep
from .manifest import Manifest, StoredManifest, job_states, refuse_mixed_files, sweep_store

if TYPE_CHECKING:
    import torch

DEFAULT_MAX_BATCH = 64  # simulations per batch: each brings its own encoder process on the host
DEVICE_MEMORY_SHARE = 0.85  # of the free device memory a batch may plan for (allocator slack)
HOST_MEMORY_SHARE = 0.5  # of the free host memory the batch's frame rings and encoders may use
# On Ray (cluster.py): how a task's files reach the sweep's store (--files), and the runs of a
# chunk's task at most (--max-attempts: the first and two retries); here, where no torch is loaded
FILES = ("driver", "workers")
MAX_ATTEMPTS = 3
RAY_ONLY = ("files", "max_attempts", "per_node")  # options only a Ray sweep takes


def ray_only_problem(ray: str | None, **given) -> str | None:
    """The message refusing options of RAY_ONLY given (not None) to a sweep without Ray, where
    they would mean nothing (its jobs render on this host, into --out, in this process or its
    workers); None where there is none."""
    if ray is not None:
        return None
    named = [f"--{name.replace('_', '-')}" for name in RAY_ONLY if given.get(name) is not None]
    if not named:
        return None
    return (
        f"{' and '.join(named)} {'needs' if len(named) == 1 else 'need'} --ray: only a Ray sweep takes "
        "--files, --max-attempts and --per-node; a sweep without --ray renders on this host (--devices)"
    )


def plan_chunks(jobs: list[Job], max_batch: int, workers: int = 1) -> list[list[Job]]:
    """Jobs grouped by shape.batch_key into chunks of at most max_batch, split further until
    every worker has a chunk (where there are jobs enough), largest first.

    A chunk takes every k-th job, not a run of neighbours: a job's speed depends on its
    parameters, and interleaved chunks of a grid take about as long as each other (the halves
    of a grid do not: docs/benchmarks.md)."""
    groups: dict[tuple, list[Job]] = {}
    for job in jobs:
        groups.setdefault(batch_key(job.preset), []).append(job)
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


def dry_run_lines(sweep: Sweep, out_dir: Path | str, max_batch: int = DEFAULT_MAX_BATCH) -> list[str]:
    """`physarum sweep FILE --dry-run`: every job with its id, values and state, and a line
    naming the sweep that runs into the folder now where one does (a run would be refused);
    writes nothing. `out_dir` may be a URL of object storage: its manifest, files and lock are
    read from there."""
    store = sweep_store(out_dir, sweep.name)
    if store.local:
        sweep_dir = Path(out_dir) / sweep.name
        manifest = Manifest(sweep_dir / "manifest.jsonl")
        refuse_mixed_files(sweep, manifest)
        states = job_states(sweep, sweep_dir, manifest)
        running = running_sweep(sweep_dir)
    else:
        sweep_dir = store.location
        try:
            manifest = StoredManifest(store)
            refuse_mixed_files(sweep, manifest)
            states = job_states(sweep, store, manifest)
            running = running_store_sweep(store)
        finally:
            store.close()
    batches = len(plan_chunks(sweep.jobs, max_batch))
    counts = {s: sum(1 for v in states.values() if v == s) for s in ("done", "failed", "pending")}
    lines = [
        f"sweep {sweep.name}: {len(sweep.jobs)} jobs in {batches} batched simulation{'s' * (batches != 1)} "
        f"-> {sweep_dir}/ ({counts['done']} done, {counts['failed']} failed, {counts['pending']} to run)"
    ]
    if running:
        lines.append(f"another sweep is running into {sweep_dir} now ({running}): a run now would be refused")
    width = max(len(job.name) for job in sweep.jobs)
    for job in sweep.jobs:
        preset = job.preset
        shape = f"{preset.canvas.width}x{preset.canvas.height} {preset.agents.count} agents s{preset.seed}"
        lines.append(
            f"{job.id}  {job.name:<{width}}  {states[job.id]:<7}  {shape}  {format_params(job.params)}"
        )
    return lines


def _job_cost(preset: Preset) -> int:
    """A rough measure of a job's work, so that the largest chunks start first."""
    steps = preset.run.steps + preset.run.warmup
    return steps * (preset.agents.count + preset.canvas.width * preset.canvas.height)


def batch_limit(preset: Preset, backend: str, device: torch.device) -> int:
    """How many simulations of this shape fit one batch on `device`, and its frames on the host."""
    import torch  # start-up: torch, for a sweep that runs

    from ..out.frames import QUEUE_FRAMES  # start-up: torch, for a sweep that runs
    from ..run import machine  # start-up: torch, for a sweep that runs

    # Host bytes per canvas pixel of one job: the frame ring (index, RGB) and a rough allowance
    # for x264's lookahead and reference frames (yuv420p, about 60 frames at 1.5 bytes per pixel).
    host_bytes_per_pixel = 4 * (QUEUE_FRAMES + 3) + 96
    fixed = machine.estimated_bytes(preset, backend, 0)
    per_job = machine.estimated_bytes(preset, backend, 1) - fixed
    host_per_job = preset.canvas.width * preset.canvas.height * host_bytes_per_pixel
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
    from ..run import machine  # start-up: torch, for a sweep that runs

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
