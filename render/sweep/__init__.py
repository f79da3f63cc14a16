"""Parameter sweeps: one YAML file expanded into many validated jobs, rendered in batches,
resumably, on one device, several, or a Ray cluster; and a gallery to browse them. In the order
of the data flow:

- labels: swept values as short labels (listings, errors, the gallery);
- schema: the sweep file's sections (pydantic models) and their problems;
- expand: the sweep's jobs (grid x zip x random samples x seeds), each a validated preset;
- manifest: the JSON-lines record of every job's progress, and what a run would do with each;
- plan: jobs that share a simulation grouped into chunks, batches sized to memory;
- chunk: one chunk rendered on one device, one outcome per job;
- workers, cluster: where chunks run (this process, a worker process per device, Ray tasks);
- progress: a Ray sweep's jobs done and running per node, as bars on a terminal;
- lock: one driver at a time per sweep (a folder's flock, a store's lock object);
- run: the sweep itself (lock, resume, summary) and the dry run;
- gallery, contact: index.html and contact.png.

The names below are the package's public face; callers import them from here. Reading a sweep,
its plan and its dry run import no torch: the names of the modules that run one (chunk, cluster,
workers, run: torch) or draw its gallery (gallery, contact: Pillow) are imported when first read
(`__getattr__`), so that `physarum sweep NAME --dry-run` answers at once.
"""

import importlib

from .expand import PREVIEW_SIDE, Job, Sweep, expand_sweep, load_sweep
from .labels import format_params, format_value
from .manifest import Manifest, job_record, job_states, outputs_complete
from .plan import (
    DEFAULT_MAX_BATCH,
    FILES,
    MAX_ATTEMPTS,
    RAY_ONLY,
    batch_limit,
    check_fits,
    dry_run_lines,
    plan_chunks,
    ray_only_problem,
)
from .schema import MAX_JOBS, SweepFile, read_sections, relation_problems

# start-up: each name of a module that imports torch or Pillow, and its module, imported at first read
_LATER = {
    **dict.fromkeys(("chunk_outcomes", "failed_outcomes", "run_chunk"), "chunk"),
    **dict.fromkeys(("cluster_nodes", "ray_connect", "ray_workers", "run_ray"), "cluster"),
    **dict.fromkeys(("contact_sheet", "write_contact_sheet"), "contact"),
    **dict.fromkeys(("gallery_html", "preset_yaml", "write_gallery"), "gallery"),
    **dict.fromkeys(("SweepLock", "StoreLock"), "lock"),
    **dict.fromkeys(("SweepOptions", "SweepSummary", "run_sweep"), "run"),
    **dict.fromkeys(("WorkerPool", "parse_devices", "run_here", "start_method"), "workers"),
}


def __getattr__(name: str):
    """A name of _LATER: its module imported (once; start-up: torch or Pillow), the name kept here."""
    if name not in _LATER:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{_LATER[name]}"), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_MAX_BATCH",
    "FILES",
    "MAX_ATTEMPTS",
    "MAX_JOBS",
    "RAY_ONLY",
    "PREVIEW_SIDE",
    "Job",
    "Manifest",
    "Sweep",
    "StoreLock",
    "SweepLock",
    "SweepOptions",
    "SweepFile",
    "SweepSummary",
    "WorkerPool",
    "batch_limit",
    "check_fits",
    "chunk_outcomes",
    "cluster_nodes",
    "contact_sheet",
    "dry_run_lines",
    "expand_sweep",
    "failed_outcomes",
    "format_params",
    "format_value",
    "gallery_html",
    "job_record",
    "job_states",
    "load_sweep",
    "outputs_complete",
    "parse_devices",
    "plan_chunks",
    "preset_yaml",
    "ray_connect",
    "ray_workers",
    "ray_only_problem",
    "read_sections",
    "relation_problems",
    "run_chunk",
    "run_here",
    "run_ray",
    "run_sweep",
    "start_method",
    "write_contact_sheet",
    "write_gallery",
]
