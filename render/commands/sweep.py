"""A sweep, read and checked, its dry run and its run: the one place for `physarum sweep`
(render/cli/main.py) and `physarum.sweep` (physarum_api/). A sweep batches 2D presets only (a job
of a 3D preset is refused, one message; so is a job that asks for checkpoints, raw fields or a
space-time stack, which a sweep does not write) and at least one simulation per batch, dry run or not.
Reading a sweep and its dry run load no torch; a run into a URL probes the store before torch
is loaded (probe: one message where it cannot be written), a dry run into a URL probes it for a
read before the manifest is read (one message, within the probe's bounds, where it cannot be read).
"""

from __future__ import annotations

from pathlib import Path

from ..base.errors import RenderError
from ..base.inputs import excerpt
from ..preset.catalog import resolve_sweep_path


def load(name_or_path: str):
    """An example sweep by name, or a sweep file, expanded into its validated jobs; RenderError
    where a job's preset is 3D, PresetError for the file's problems."""
    from .. import sweep as sweeps  # start-up: the sweep modules, for sweep only
    from ..run.volume_checks import refuse_3d_command  # start-up: the preset schema

    sweep = sweeps.load_sweep(resolve_sweep_path(name_or_path))
    for job in sweep.jobs:
        refuse_3d_command(job.preset, "sweep")
        refuse_file_sections(job)
    return sweep


def refuse_file_sections(job) -> None:
    """RenderError where a job's preset asks for files a sweep does not write: checkpoints, raw
    fields or a space-time stack (a batch of simulations writes each job's outputs, its still
    and sidecar; these sections were dropped without a word)."""
    output = job.preset.output
    asked = [
        name
        for name, section in (
            ("checkpoint", job.preset.checkpoint),
            ("output.fields", output.fields),
            ("output.volume", output.volume),
        )
        if section is not None
    ]
    if asked:
        raise RenderError(
            f"{job.name}: a sweep writes each job's outputs, still and sidecar, not {', '.join(asked)}; "
            "remove them from the sweep, or render that job alone with physarum render --set"
        )


def batch_of(max_batch: int | None) -> int:
    """--batch: at most this many simulations per batch (default DEFAULT_MAX_BATCH); RenderError
    below 1, for a dry run as for a run."""
    from .. import sweep as sweeps  # start-up: the sweep modules, for sweep only

    if max_batch is None:
        return sweeps.DEFAULT_MAX_BATCH
    if max_batch < 1:
        raise RenderError(f"--batch must be at least 1, got {max_batch}")
    return max_batch


def files_of(files: str | None) -> str | None:
    """--files: how a Ray sweep's files reach --out (None: PHYSARUM_SWEEP_FILES, else "driver");
    RenderError for any other value, for a dry run as for a run."""
    from .. import sweep as sweeps  # start-up: the sweep modules, for sweep only

    if files is not None and files not in sweeps.FILES:
        raise RenderError(f"--files must be one of {', '.join(sweeps.FILES)}, got {excerpt(files)}")
    return files


def attempts_of(max_attempts: int | None) -> int | None:
    """--max-attempts: runs of a Ray batch's task at most (None: sweep.MAX_ATTEMPTS, 3);
    RenderError below 1, for a dry run as for a run."""
    if max_attempts is not None and max_attempts < 1:
        raise RenderError(f"--max-attempts must be at least 1, got {max_attempts}")
    return max_attempts


def per_node_of(per_node: int | None) -> int | None:
    """--per-node: a Ray sweep's tasks at once on any node at most (None: no cap); RenderError
    below 1, for a dry run as for a run."""
    if per_node is not None and per_node < 1:
        raise RenderError(f"--per-node must be at least 1, got {per_node}")
    return per_node


def ray_flags_of(ray: str | None, files: str | None, max_attempts: int | None, per_node: int | None) -> None:
    """--files, --max-attempts and --per-node: each checked, and refused without --ray (a sweep
    on this host has no use for them): RenderError, for a dry run as for a run."""
    from .. import sweep as sweeps  # start-up: the sweep modules, for sweep only

    files_of(files)
    attempts_of(max_attempts)
    per_node_of(per_node)
    problem = sweeps.ray_only_problem(ray, files=files, max_attempts=max_attempts, per_node=per_node)
    if problem:
        raise RenderError(problem)


def destination(out: str | Path) -> str | Path:
    """--out as a sweep takes it: an fsspec URL (s3://bucket/prefix) as written, else a folder
    (a Path would make 's3://b' 's3:/b')."""
    return out if isinstance(out, str) and "://" in out else Path(out)


def probe(out: str | Path, name: str, reading: bool = False) -> None:
    """RenderError where the sweep's folder OUT/<name> is in a store that cannot be written (no
    credentials, no bucket, no connection: base/storage.ObjectStore.probe), before torch is
    loaded and any job renders; `reading` (a dry run): one that cannot be read, before its
    manifest is read, and nothing written. A local folder is not asked."""
    from ..sweep.manifest import sweep_store  # start-up: the sweep modules, for sweep only

    store = sweep_store(destination(out), name)
    try:
        store.probe(reading=reading)
    finally:
        if not store.local:
            store.close()


def dry_run(
    sweep,
    out: str | Path,
    max_batch: int | None,
    files: str | None = None,
    max_attempts: int | None = None,
    ray: str | None = None,
    per_node: int | None = None,
) -> list[str]:
    """The lines `physarum sweep --dry-run` prints: every job, its values and its state (the run's
    flags checked as a run checks them; a store URL probed for a read first: RenderError naming
    it where it cannot be read)."""
    from .. import sweep as sweeps  # start-up: the sweep modules, for sweep only

    ray_flags_of(ray, files, max_attempts, per_node)
    probe(out, sweep.name, reading=True)
    return sweeps.dry_run_lines(sweep, destination(out), batch_of(max_batch))


def run(
    sweep,
    out: str | Path,
    max_batch: int | None = None,
    files: str | None = None,
    max_attempts: int | None = None,
    per_node: int | None = None,
    **options,
):
    """Run the sweep (sweep.SweepOptions: backend, devices, ray, retry_failed, quiet, gallery;
    files, max_attempts and per_node, each None for its default, refused without ray); its
    SweepSummary."""
    from .. import sweep as sweeps  # start-up: torch, for a run

    ray_flags_of(options.get("ray"), files, max_attempts, per_node)
    probe(out, sweep.name)
    return sweeps.run_sweep(
        sweep,
        sweeps.SweepOptions(
            out_dir=destination(out),
            max_batch=batch_of(max_batch),
            files=files,
            max_attempts=max_attempts,
            per_node=per_node,
            **options,
        ),
    )
