"""Running one chunk of jobs on one device (in this process, a worker process or a Ray task):
batched simulations (runner.render_batch) and one outcome per job."""

from __future__ import annotations

import gc
import os
import socket
import time
import traceback
from pathlib import Path

import torch

from ..base.errors import RenderError, machine_problem, out_of_memory
from ..formats.still import is_still_key
from ..preset import Preset, PresetError, carried
from ..run import machine, runner
from .manifest import now
from .plan import batch_limit


def run_chunk(chunk: list[dict], sweep_dir: str, device: str, backend: str, quiet: bool = True) -> list[dict]:
    """Render a chunk of jobs ({"id", "preset"} dicts) on one device; one outcome each.

    The chunk runs as batches that fit the device's memory; a batch that still runs out of
    memory is halved and tried again. A failure fails only the jobs of its batch.
    """
    torch_device = machine.resolve_device(device)
    backend = machine.resolve_backend(backend, torch_device)
    presets = [payload_preset(item) for item in chunk]
    limit = batch_limit(presets[0], backend, torch_device)
    outcomes = []
    for start in range(0, len(chunk), limit):
        outcomes.extend(
            _render_batch_outcomes(
                chunk[start : start + limit],
                presets[start : start + limit],
                Path(sweep_dir),
                torch_device,
                backend,
                quiet,
            )
        )
    return outcomes


def payload_preset(item: dict) -> Preset:
    """A job's preset from its payload: {"preset": its dump} read as it is (its image paths are
    files here), or with {"images": a carried block} (render/preset/carried.py: what a Ray task
    gets, so that a worker needs no shared folder) the portable dump rendered with the images
    the block carries, under the paths the dump names: the same bytes as the driver's render."""
    block = item.get("images")
    if block is None:
        return Preset.model_validate(item["preset"])
    images = carried.read_block(block)
    return Preset.model_validate(item["preset"], context={"base": Path.cwd(), "carried": images})


def chunk_outcomes(chunk: list[dict], sweep_dir: str, device: str, backend: str, quiet: bool) -> list[dict]:
    """run_chunk's outcomes, or where it fails outside any batch (reading the presets, sizing the
    batches), every job of the chunk failed with that error."""
    try:
        return run_chunk(chunk, sweep_dir, device, backend, quiet)
    except Exception as error:
        return failed_outcomes(chunk, error, device)


def _render_batch_outcomes(
    items, presets, sweep_dir: Path, device: torch.device, backend: str, quiet: bool
) -> list[dict]:
    started, began = now(), time.perf_counter()
    options = runner.RenderOptions(backend=backend, device=str(device), out_dir=sweep_dir, quiet=quiet)
    results, message, memory_ran_out = None, None, False
    try:
        results = runner.render_batch(presets, options)
    except Exception as error:  # the simulation failed: every job of the batch with it
        message, memory_ran_out = _error_text(error), out_of_memory(error)
    if memory_ran_out and len(items) > 1:
        # Halve the batch, outside the except block: its traceback held the failed batch's tensors.
        gc.collect()
        torch.cuda.empty_cache()
        half = len(items) // 2
        return _render_batch_outcomes(
            items[:half], presets[:half], sweep_dir, device, backend, quiet
        ) + _render_batch_outcomes(items[half:], presets[half:], sweep_dir, device, backend, quiet)
    if results is None:
        return [
            {
                "id": item["id"],
                "status": "failed",
                "error": message,
                "started": started,
                "seconds": round(time.perf_counter() - began, 3),
                "device": str(device),
                "host": socket.gethostname(),
                "pid": os.getpid(),
                "batch": len(items),
            }
            for item in items
        ]
    seconds = round(time.perf_counter() - began, 3)
    outcomes = []
    for item, result in zip(items, results):
        outcome = {
            "id": item["id"],
            "started": started,
            "seconds": seconds,
            "device": str(device),
            "device_name": result.device,
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "backend": result.backend,
            "batch": len(items),
        }
        if result.error is None:
            named = {key: str(path.relative_to(sweep_dir)) for key, path in result.outputs.items()}
            outputs, stills = record_outputs(named)
            outcome.update(status="done", outputs=outputs)
            extras = [*stills, *job_extras(sweep_dir, named)]
            if extras:
                outcome["extras"] = extras
        else:
            outcome.update(status="failed", error=result.error)
        outcomes.append(outcome)
    return outcomes


def record_outputs(named: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """A done job's files as its record keeps them, from RenderResult.outputs (paths relative
    to the sweep's folder): `outputs`, its formats and sidecar by key, as records always had
    them (manifest.outputs_complete resumes by them), and its print stills' paths ("still.*"
    keys: formats/still.py), which the record lists among its extras."""
    stills = [rel for key, rel in named.items() if is_still_key(key)]
    return {key: rel for key, rel in named.items() if not is_still_key(key)}, stills


def job_extras(sweep_dir: Path, outputs: dict[str, str]) -> list[str]:
    """The files a job committed beside the files RenderResult.outputs names (`outputs`): a
    raw field's, a volume export's (any file of its stem), relative to sweep_dir: every visible
    regular file of the job's folder but those named (a job's folder is its own)."""
    named = set(outputs.values())
    folders = {Path(rel).parent for rel in named}
    extras = []
    for folder in sorted(folders):
        for path in sorted((sweep_dir / folder).iterdir()):
            rel = str(folder / path.name)
            if (
                rel not in named
                and not path.name.startswith(".")
                and path.is_file()
                and not path.is_symlink()
            ):
                extras.append(rel)
    return extras


def delivered_files(outcome: dict) -> list[str]:
    """Every file of a done job's outcome to store: its outputs, then its extras (job_extras)."""
    return [*outcome["outputs"].values(), *outcome.get("extras", [])]


def _error_text(error: BaseException) -> str:
    """A job's error as its record keeps it: the message of a user's or the machine's problem
    (memory that ran out, a file that failed: errors.machine_problem, as `physarum render`
    prints it), or a bug's type, text and last frames."""
    if isinstance(error, (RenderError, PresetError)):
        return str(error)
    problem = machine_problem(error)
    if problem is not None:
        return problem
    return (
        f"{type(error).__name__}: {error}\n{''.join(traceback.format_tb(error.__traceback__)[-3:])}".strip()
    )


def failed_outcomes(payload: list[dict], error: BaseException | str, device: str) -> list[dict]:
    """Every job of a chunk failed with one error (an exception, or a message)."""
    message = error if isinstance(error, str) else _error_text(error)
    return [{"id": item["id"], "status": "failed", "error": message, "device": device} for item in payload]
