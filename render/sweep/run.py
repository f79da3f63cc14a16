"""The sweep: every job not already done rendered on one device, several, or a Ray cluster,
with the manifest written as it goes and the gallery at the end (the dry run: plan.py).

The sweep's folder is a store (base/storage.py): a local folder (locked, appended to, as
always), or a folder in object storage (`out_dir` an fsspec URL), locked by a lock object
(lock.py), where each job's files are uploaded whole before the manifest (stored whole after each
change) says the job is done, and a resumed sweep checks each stored file's size and sha256.
Jobs that render on this host render into a local staging folder first; Ray tasks send their
files back (cluster.py)."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..base.errors import RenderError, printable
from ..base.files import remove_stale_parts
from ..base.storage import Location, Store, described
from .chunk import delivered_files
from .cluster import FILES, MAX_ATTEMPTS, check_per_node, ray_connect, ray_payloads, ray_workers, run_ray
from .expand import Sweep
from .gallery import write_gallery
from .labels import format_params
from .lock import StoreLock, SweepLock
from .manifest import (
    Manifest,
    StoredManifest,
    job_record,
    job_states,
    refuse_mixed_files,
    sweep_store,
)
from .plan import DEFAULT_MAX_BATCH, check_fits, plan_chunks, ray_only_problem
from .progress import NodeProgress
from .workers import WorkerPool, parse_devices, run_here


@dataclass
class SweepOptions:
    """How run_sweep runs: the sweep command's flags."""

    backend: str = "auto"
    devices: str | None = None  # --devices; None: every GPU, else the CPU
    ray: str | None = None  # --ray auto|local|ADDRESS
    out_dir: Path | str = Path("outputs")  # a folder, or an fsspec URL (s3://bucket/prefix)
    # with ray: how files reach out_dir: "driver" (back through Ray's object store) or "workers"
    # (each task stores them: a shared folder, or object storage); None: PHYSARUM_SWEEP_FILES or "driver"
    files: str | None = None
    # with ray: runs of a chunk's task at most (a dead worker's); None: MAX_ATTEMPTS
    max_attempts: int | None = None
    per_node: int | None = None  # with ray: tasks at once on any node at most; None: no cap
    retry_failed: bool = False
    max_batch: int = DEFAULT_MAX_BATCH
    quiet: bool = False
    gallery: bool = True


@dataclass
class SweepSummary:
    """What a run did, and the final record of every job."""

    sweep: Sweep
    sweep_dir: Path | Location  # the sweep's folder, or its URL
    records: list[dict]  # the final record of every job, in job order
    ran: int = 0  # jobs run by this call (done or failed)
    skipped: int = 0  # jobs done before, with complete outputs
    seconds: float = 0.0
    gallery: Path | Location | None = None

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.records if r.get("status") != "done"]


def _remove_stale_parts(sweep_dir: Path) -> None:
    """Temporary files of a killed run (.NAME.PID.part) in the sweep folder (the gallery's page
    and contact sheet) and its job folders, only those whose process is dead (files.
    remove_stale_parts): the lock keeps other sweeps out, not a `physarum render --out` into a
    job folder, whose files are live while its process runs."""
    for folder in [
        sweep_dir,
        *(path for path in sweep_dir.iterdir() if path.is_dir() and not path.is_symlink()),
    ]:
        remove_stale_parts(folder, "*")


def run_sweep(
    sweep: Sweep, options: SweepOptions | None = None, log: Callable[[str], None] | None = None
) -> SweepSummary:
    """Render every job not already done; write the manifest as it goes and the gallery at the end."""
    options = options or SweepOptions()
    terminal = log is None  # the sweep's own lines on stderr: a Ray sweep draws its nodes' bars there
    log = log or (lambda line: print(printable(line), file=sys.stderr, flush=True))
    if options.max_batch < 1:
        raise RenderError(f"--batch must be at least 1, got {options.max_batch}")
    problem = ray_only_problem(
        options.ray, files=options.files, max_attempts=options.max_attempts, per_node=options.per_node
    )
    if problem:
        raise RenderError(problem)
    if options.max_attempts is not None and options.max_attempts < 1:
        raise RenderError(f"max_attempts must be at least 1, got {options.max_attempts}")
    check_per_node(options.per_node)
    files = options.files or os.environ.get("PHYSARUM_SWEEP_FILES") or "driver"
    if options.ray is not None and files not in FILES:
        raise RenderError(f"files (PHYSARUM_SWEEP_FILES): one of {', '.join(FILES)}, not {files!r}")
    devices = parse_devices(options.devices) if options.ray is None else []
    store = sweep_store(options.out_dir, sweep.name)
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if store.local:
            sweep_dir = store.root
            work_dir = sweep_dir
        else:  # jobs render here into a staging folder; their files are uploaded from it
            stack.callback(store.close)
            sweep_dir = store.location
            work_dir = Path(tempfile.mkdtemp(prefix=f"physarum-sweep-{os.getpid()}-")).resolve()
            stack.callback(shutil.rmtree, work_dir, True)
        pool = (
            stack.enter_context(WorkerPool(devices, str(work_dir), options.backend))
            if len(devices) > 1
            else None
        )
        if devices:
            check_fits(sweep, devices, options.backend)
        if store.local:
            sweep_dir.mkdir(parents=True, exist_ok=True)
            stack.enter_context(SweepLock(sweep_dir))
            _remove_stale_parts(sweep_dir)
            manifest = Manifest(sweep_dir / "manifest.jsonl", log)
        else:  # the store's lock object, before its manifest is read
            lock = stack.enter_context(StoreLock(store, log))
            manifest = StoredManifest(store, log, guard=lock.check)
        refuse_mixed_files(sweep, manifest)
        try:
            summary = _run_jobs(
                sweep, store, work_dir, manifest, devices, options, files, log, pool, terminal
            )
        except BaseException:
            with contextlib.suppress(Exception):  # what landed before the stop, where the store takes it
                manifest.flush()
            raise
        manifest.flush()
        latest = manifest.latest()
        summary.records = [
            latest.get(job.id) or job_record(job, "failed", error="no record") for job in sweep.jobs
        ]
        summary.seconds = time.perf_counter() - began
        if options.gallery:
            summary.gallery = write_gallery(sweep_dir if store.local else store, summary.records)
    return summary


def _run_jobs(
    sweep: Sweep,
    store: Store,
    work_dir: Path,
    manifest: Manifest | StoredManifest,
    devices: list[str],
    options: SweepOptions,
    files: str,
    log,
    pool: WorkerPool | None = None,
    terminal: bool = False,
) -> SweepSummary:
    """Plan and run every job that is pending (and failed, with retry_failed), recording each
    chunk's start and each job's outcome in the manifest, from this thread only."""
    summary = SweepSummary(sweep, store.location, [])
    states = job_states(sweep, store.root if store.local else store, manifest)
    summary.skipped = sum(1 for state in states.values() if state == "done")
    runs = ("pending", "failed") if options.retry_failed else ("pending",)  # failed jobs stay failed
    todo = [job for job in sweep.jobs if states[job.id] in runs]
    if not todo:
        return summary
    ray = ray_connect(options.ray) if options.ray else None
    workers = ray_workers(ray, options.per_node) if ray else len(devices)
    chunks = plan_chunks(todo, options.max_batch, workers)
    by_id = {job.id: job for job in todo}
    where = f"Ray ({options.ray})" if options.ray else ", ".join(devices)
    log(
        f"{sweep.name}: {len(todo)} jobs to render in {len(chunks)} batches on {where}"
        + (f" ({summary.skipped} already done)" if summary.skipped else "")
        + ("" if store.local else f" -> {store.url}")
        + (f", at most {options.per_node} at once on any node" if ray and options.per_node else "")
    )
    progress = NodeProgress(len(todo), shown=ray is not None and not options.quiet and terminal)
    if progress.drawn:  # log lines above the bars

        def log(line: str) -> None:
            progress.write(printable(line))

    def on_start(number: int) -> None:
        manifest.extend([job_record(job, "running") for job in chunks[number]])

    def on_done(number: int, outcomes: list[dict]) -> None:
        records, lines = [], []
        for outcome in outcomes:
            job = by_id[outcome.pop("id")]
            records.append(job_record(job, outcome.pop("status"), **outcome))
            summary.ran += 1
            failed = "error" in outcome
            if not options.quiet or failed:
                lines.append(
                    f"[{summary.ran}/{len(todo)}] {'FAILED' if failed else 'done'} {job.name} {job.id} "
                    f"({format_params(job.params)})"
                    + (f" on {outcome['node'][:8]}" if outcome.get("node") else "")
                    + (f": {outcome['error']}" if failed else "")
                )
        manifest.extend(records)  # after the files they name are stored: the manifest is last
        for line in lines:
            log(line)

    def delivered(number: int, outcomes: list[dict]) -> None:
        """Jobs rendered in the staging folder: each done job's files stored, then recorded."""
        for outcome in outcomes:
            if outcome["status"] != "done":
                continue
            rels = delivered_files(outcome)
            outcome["files"] = described(work_dir, rels)
            for rel in rels:
                store.put_file(work_dir / rel, rel)  # RenderError where the store refuses
                (work_dir / rel).unlink()
        on_done(number, outcomes)

    backend, folder = options.backend, str(work_dir)
    finish = on_done if store.local else delivered
    if ray:
        if files == "workers" and store.local:
            log(f"{sweep.name}: the workers write into {store.url}: every machine must mount it there")
        try:
            run_ray(
                ray,
                ray_payloads(chunks),
                store,
                backend,
                on_start,
                on_done,
                files,
                options.max_attempts or MAX_ATTEMPTS,
                log,
                options.per_node,
                progress,
            )
        finally:
            progress.close()
    elif len(devices) == 1:
        payloads = [
            [{"id": job.id, "preset": job.preset.model_dump(mode="json")} for job in c] for c in chunks
        ]
        run_here(payloads, devices[0], folder, backend, options.quiet, on_start, finish)
    else:
        payloads = [
            [{"id": job.id, "preset": job.preset.model_dump(mode="json")} for job in c] for c in chunks
        ]
        pool.run(payloads, on_start, finish)
    return summary
