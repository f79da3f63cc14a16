"""Parameter sweeps: one YAML file expanded into many validated jobs, rendered in batches,
resumably, on one device, several, or a Ray cluster.

A sweep file names a base preset and the keys to vary:

    name: angles                      # optional; the file's stem otherwise
    base: ../presets/quickstart.yaml  # a preset file (relative to this file) or a mapping
    grid: {model.sensor_angle: [15, 45], model.turn_angle: [15, 45]}   # every combination
    zip: {model.decay: [0.05, 0.1], model.deposit: [3, 5]}              # walked together
    random: {count: 4, seed: 7, params: {model.diffuse: {uniform: [0.1, 1.0]}}}
    seeds: [1, 2]                     # every job once per seed

Jobs are grid x zip x random samples x seeds, in that order, each named `<sweep>-NNNN` with an id
(a short hash of its resolved preset). Every job is validated before anything runs; all invalid
jobs are reported at once, with their parameter values, as one PresetError.

Jobs that share a canvas, an agent count and a run length (runner.batch_key) run as one batched
simulation (runner.render_batch). A manifest of JSON lines records every job's progress, so a
sweep killed at any moment finishes when the same command runs again.
"""

from __future__ import annotations

import contextlib
import copy
import fcntl
import gc
import hashlib
import itertools
import json
import math
import multiprocessing
import os
import queue
import random
import re
import socket
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import torch

from physarum.render import machine, runner
from physarum.render.encoder_process import die_with_parent
from physarum.render.errors import RenderError, did_you_mean
from physarum.render.preset import (
    NAME_PATTERN,
    Preset,
    PresetError,
    build_preset,
    key_annotation,
    key_problem,
    read_preset_file,
    set_dotted,
)

SWEEP_KEYS = ("name", "description", "base", "grid", "zip", "random", "seeds")
DISTRIBUTIONS = ("uniform", "log_uniform", "choice")
MAX_JOBS = 100_000
PREVIEW_SIDE = 256  # GIF previews of a sweep fit in 256 x 256 unless the sweep sets output.gif_scale
DEFAULT_MAX_BATCH = 64  # simulations per batch: each brings its own encoder threads on the host
DEVICE_MEMORY_SHARE = 0.85  # of the free device memory a batch may plan for (allocator slack)
HOST_MEMORY_SHARE = 0.5  # of the free host memory the batch's frame rings and encoders may use
# Host bytes per canvas pixel of one job: the frame ring (index, RGB) and a rough allowance for
# x264's lookahead and reference frames (yuv420p, about 60 frames at 1.5 bytes per pixel).
HOST_BYTES_PER_PIXEL = 4 * (runner.QUEUE_FRAMES + 3) + 96
RANDOM_DIGITS = 6  # significant digits of sampled floats: short labels, reproducible YAML


# ---------------------------------------------------------------------------------------------
# Sweep files and their jobs


@dataclass(frozen=True)
class Job:
    """One render of a sweep: a validated preset and the swept values that made it."""

    index: int
    name: str
    id: str
    params: dict[str, Any]
    preset: Preset


@dataclass(frozen=True)
class Sweep:
    name: str
    source: str
    jobs: list[Job]
    description: str = ""


def load_sweep(path: str | Path) -> Sweep:
    """Read, expand and validate a sweep file; PresetError lists every problem at once."""
    path = Path(path)
    data = read_preset_file(path)  # the same safe YAML loading and errors as presets
    stem = re.sub(r"[^a-z0-9_-]+", "-", path.stem.lower()).strip("-_") or "sweep"
    return expand_sweep(data, str(path), path.parent, stem)


def expand_sweep(data: dict, source: str, base_dir: Path = Path("."), default_name: str = "sweep") -> Sweep:
    """The validated jobs of a sweep mapping (see the module docstring for its keys)."""
    problems: list[str] = []
    for key in data:
        if key not in SWEEP_KEYS:
            hint = did_you_mean(key, SWEEP_KEYS)
            problems.append(f"{source}: {key}: unknown key; {hint}allowed: {', '.join(SWEEP_KEYS)}")
    name = data.get("name", default_name)
    base, preset_dir = _read_base(data.get("base"), source, base_dir, problems)
    grid = _axes(data.get("grid"), "grid", source, problems)
    zipped = _axes(data.get("zip"), "zip", source, problems)
    lengths = {len(values) for _, values in zipped}
    if len(lengths) > 1:
        sizes = ", ".join(f"{key}: {len(values)}" for key, values in zipped)
        problems.append(
            f"{source}: zip: the lists must have equal lengths to be walked together (got {sizes})"
        )
    samples, random_keys = _random_samples(data.get("random"), source, problems)
    seeds = _seeds(data.get("seeds"), source, problems)
    swept = [k for k, _ in grid] + [k for k, _ in zipped] + random_keys
    problems.extend(_key_problems(swept, seeds is not None, source))
    combinations = math.prod(len(v) for _, v in grid) * (min(lengths) if lengths else 1)
    total = combinations * max(1, len(samples)) * len(seeds or [None])
    digits = max(4, len(str(max(total - 1, 0))))
    if not isinstance(name, str) or not NAME_PATTERN.match(name) or len(name) > 63 - digits:
        problems.append(
            f"{source}: name: a sweep's jobs are named <name>-{'N' * digits}: 1 to {63 - digits} "
            f"of a-z, 0-9, '_' and '-', starting with a letter or digit (got {name!r})"
        )
    if total > MAX_JOBS:
        problems.append(f"{source}: the sweep expands to {total} jobs; at most {MAX_JOBS} are allowed")
    if problems or base is None:
        raise PresetError(problems)
    sets_scale = "output.gif_scale" in swept or _sets_scale(data.get("base"))
    jobs, job_problems, bad = [], [], 0
    for index, params in enumerate(_combinations(grid, zipped, samples, seeds)):
        job_name = f"{name}-{index:0{digits}d}"
        try:
            jobs.append(_job(index, job_name, params, base, sets_scale, source, preset_dir))
        except PresetError as error:
            job_problems.extend(error.problems)
            bad += 1
    if job_problems:
        raise PresetError(
            job_problems + [f"{source}: {bad} of {total} jobs are invalid; nothing was rendered"]
        )
    return Sweep(name, source, jobs, str(data.get("description", "")))


def _read_base(base, source: str, base_dir: Path, problems: list[str]) -> tuple[dict | None, Path]:
    """The base preset's data (None if it has problems) and the folder its image paths are
    relative to: a preset file's own folder, or the sweep file's for an inline preset."""
    if isinstance(base, dict):
        return base, base_dir
    if isinstance(base, str):
        path = Path(base) if Path(base).is_absolute() else base_dir / base
        try:
            return read_preset_file(path), path.parent
        except PresetError as error:
            problems.extend(f"{source}: base: {p}" for p in error.problems)
            return None, path.parent
    problems.append(
        f"{source}: base: a preset file (relative to the sweep file) or a preset mapping "
        f"is required (got {base!r})"
    )
    return None, base_dir


def _sets_scale(base) -> bool:
    """Whether an inline base preset sets output.gif_scale itself."""
    return isinstance(base, dict) and isinstance(base.get("output"), dict) and "gif_scale" in base["output"]


def _axes(section, label: str, source: str, problems: list[str]) -> list[tuple[str, list]]:
    """The (dotted key, values) pairs of a grid or zip section."""
    if section is None:
        return []
    if not isinstance(section, dict) or not section:
        problems.append(
            f"{source}: {label}: a mapping of dotted keys to lists of values, "
            f"e.g. {{model.decay: [0.05, 0.1]}} (got {section!r})"
        )
        return []
    axes = []
    for key, values in section.items():
        if not isinstance(values, list) or not values:
            problems.append(f"{source}: {label}.{key}: a non-empty list of values (got {values!r})")
        else:
            axes.append((str(key), values))
    return axes


def _seeds(seeds, source: str, problems: list[str]) -> list[int] | None:
    if seeds is None:
        return None
    valid = (
        isinstance(seeds, list)
        and seeds
        and all(isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**32 for s in seeds)
    )
    if not valid:
        problems.append(f"{source}: seeds: a non-empty list of whole numbers in 0 .. 2^32-1 (got {seeds!r})")
        return None
    if len(set(seeds)) != len(seeds):
        problems.append(
            f"{source}: seeds: each seed once (got {seeds!r}); a repeated seed renders the same job twice"
        )
        return None
    return seeds


def _key_problems(keys: list[str], has_seeds: bool, source: str) -> list[str]:
    problems = []
    for key in keys:
        problem = _schema_problem(key)
        if problem:
            problems.append(f"{source}: {key}: {problem}")
    for a, b in itertools.combinations(keys, 2):
        if a == b or b.startswith(a + ".") or a.startswith(b + "."):
            problems.append(f"{source}: {b}: swept twice (also as {a}); each key in one section only")
    if has_seeds and "seed" in keys:
        problems.append(f"{source}: seed: swept while seeds: is set; use one or the other")
    return problems


def _schema_problem(key: str) -> str | None:
    """Why a dotted key cannot be swept (None if it names a preset key)."""
    if key == "name":
        return "the sweep names its jobs (<sweep>-NNNN); name cannot be swept"
    return key_problem(key)


def _random_samples(section, source: str, problems: list[str]) -> tuple[list[dict], list[str]]:
    """`count` seeded draws of the random section's parameters, and the keys it sweeps."""
    if section is None:
        return [], []
    where = f"{source}: random"
    if not isinstance(section, dict):
        problems.append(f"{where}: a mapping with count, seed and params (got {section!r})")
        return [], []
    for key in section:
        if key not in ("count", "seed", "params"):
            problems.append(f"{where}.{key}: unknown key; allowed: count, seed, params")
    count, seed, params = section.get("count"), section.get("seed", 0), section.get("params")
    if not (isinstance(count, int) and not isinstance(count, bool) and 1 <= count <= MAX_JOBS):
        problems.append(f"{where}.count: a whole number of samples, 1 .. {MAX_JOBS} (got {count!r})")
    if not (isinstance(seed, int) and not isinstance(seed, bool) and seed >= 0):
        problems.append(f"{where}.seed: a whole number >= 0 (got {seed!r})")
    if not isinstance(params, dict) or not params:
        problems.append(
            f"{where}.params: a mapping of dotted keys to distributions, e.g. "
            f"{{model.decay: {{log_uniform: [0.01, 0.3]}}}} (got {params!r})"
        )
        return [], []
    draws = {}
    for key, spec in params.items():
        problem = _distribution_problem(spec)
        if problem is None and key_annotation(str(key)) is int and "choice" not in spec:
            lo, hi = next(iter(spec.values()))
            if math.ceil(lo) > math.floor(hi):
                problem = f"{str(key)} takes whole numbers and there is none in [{lo}, {hi}]"
        if problem:
            problems.append(f"{where}.params.{key}: {problem} (got {spec!r})")
        else:
            draws[str(key)] = spec
    if len(draws) != len(params) or not isinstance(count, int) or isinstance(count, bool) or count < 1:
        return [], [str(k) for k in params]
    whole = {key: key_annotation(key) is int for key in draws}
    rng = random.Random(seed)
    samples = [
        {key: _draw(rng, spec, whole[key]) for key, spec in draws.items()}
        for _ in range(min(count, MAX_JOBS + 1))
    ]
    return samples, list(draws)


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _distribution_problem(spec) -> str | None:
    allowed = "one of {uniform: [lo, hi]}, {log_uniform: [lo, hi]} or {choice: [values...]}"
    if not isinstance(spec, dict) or len(spec) != 1 or next(iter(spec)) not in DISTRIBUTIONS:
        return allowed
    kind, value = next(iter(spec.items()))
    if kind == "choice":
        return None if isinstance(value, list) and value else "choice: a non-empty list of values"
    if not (isinstance(value, list) and len(value) == 2 and all(_number(v) for v in value)):
        return f"{kind}: [lo, hi], two finite numbers"
    lo, hi = value
    if lo > hi:
        return f"{kind}: lo must not exceed hi"
    if kind == "log_uniform" and lo <= 0:
        return "log_uniform: lo must be greater than 0"
    return None


def _draw(rng: random.Random, spec: dict, whole: bool):
    """One value of a distribution: a whole number for whole-number keys (agents.count,
    canvas.width, ...), else a float rounded to RANDOM_DIGITS significant digits."""
    kind, value = next(iter(spec.items()))
    if kind == "choice":
        return copy.deepcopy(rng.choice(value))
    lo, hi = value
    if whole:
        lo, hi = math.ceil(lo), math.floor(hi)
    if kind == "uniform":
        return rng.randint(lo, hi) if whole else float(f"{rng.uniform(lo, hi):.{RANDOM_DIGITS}g}")
    sample = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return min(hi, max(lo, round(sample))) if whole else float(f"{sample:.{RANDOM_DIGITS}g}")


def _combinations(grid, zipped, samples, seeds):
    """Every job's swept values: grid x zip rows x random samples x seeds, in that order."""
    grid_rows = [
        dict(zip([k for k, _ in grid], values)) for values in itertools.product(*(v for _, v in grid))
    ]
    rows = min((len(v) for _, v in zipped), default=1)
    zip_rows = [{key: values[i] for key, values in zipped} for i in range(rows)]
    for g, z, r, s in itertools.product(grid_rows, zip_rows, samples or [{}], seeds or [None]):
        params = {**g, **z, **r}
        if s is not None:
            params["seed"] = s
        yield params


def format_value(value) -> str:
    """A swept value as a short label: 45 for 45.0, [magma, ice] for a list."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:.10g}"
    if isinstance(value, list):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {format_value(v)}" for k, v in value.items()) + "}"
    return str(value)


def format_params(params: dict) -> str:
    return ", ".join(f"{key}={format_value(value)}" for key, value in params.items())


def _job(
    index: int,
    name: str,
    params: dict,
    base: dict,
    sets_scale: bool,
    source: str,
    preset_dir: Path = Path("."),
) -> Job:
    data = copy.deepcopy(base)
    where = f"{source} job {name} ({format_params(params)})"
    for key, value in params.items():
        try:
            set_dotted(data, key, value)
        except ValueError as error:  # the base preset holds a value where the key needs a section
            raise PresetError([f"{where}: {key}: {error} in the base preset"]) from None
    data["name"] = name
    preset = build_preset(data, where, base=preset_dir)
    if not sets_scale:
        side = max(preset.canvas.width, preset.canvas.height)
        if runner.preview_size(side, side, preset.output.gif_scale)[0] > PREVIEW_SIDE:
            set_dotted(data, "output.gif_scale", PREVIEW_SIDE / side)
            preset = build_preset(data, where, base=preset_dir)
    try:
        runner.check_formats(preset)
    except RenderError as error:
        raise PresetError([f"{where}: {error}"]) from None
    digest = hashlib.sha256(preset.to_yaml().encode("utf-8")).hexdigest()[:10]
    return Job(index, name, digest, params, preset)


# ---------------------------------------------------------------------------------------------
# The manifest: JSON lines, one record per change of a job's status


class Manifest:
    """outputs/<sweep>/manifest.jsonl, appended to and synced record by record.

    A job's state is its last record. A line torn by a kill mid-write is skipped on reading,
    and the next record starts on a fresh line.
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def records(self) -> list[dict]:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        records = []
        for line in text.splitlines():
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue  # torn by a kill while it was written: its job runs again
            if isinstance(record, dict) and "id" in record:
                records.append(record)
        return records

    def latest(self) -> dict[str, dict]:
        """The last record of every job id."""
        return {record["id"]: record for record in self.records()}

    def append(self, record: dict) -> None:
        line = json.dumps(record, separators=(",", ":")) + "\n"
        with open(self.path, "ab") as file:
            if file.tell() > 0:
                with open(self.path, "rb") as check:
                    check.seek(-1, os.SEEK_END)
                    if check.read(1) != b"\n":
                        line = "\n" + line
            file.write(line.encode("utf-8"))
            file.flush()
            os.fsync(file.fileno())


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def job_record(job: Job, status: str, **fields) -> dict:
    record = {
        "id": job.id,
        "name": job.name,
        "index": job.index,
        "status": status,
        "params": job.params,
        "preset": job.preset.model_dump(mode="json"),
        "time": _now(),
    }
    record.update(fields)
    return record


def outputs_complete(sweep_dir: Path, record: dict | None, job: Job) -> bool:
    """A done record whose files all exist, with the sidecar carrying this job's preset."""
    if not record or record.get("status") != "done":
        return False
    outputs = record.get("outputs") or {}
    if set(outputs) != {*job.preset.output.formats, "json"}:
        return False
    if not all((sweep_dir / path).is_file() for path in outputs.values()):
        return False
    try:
        sidecar = json.loads((sweep_dir / outputs["json"]).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return sidecar.get("preset") == job.preset.portable_dump()


# ---------------------------------------------------------------------------------------------
# Planning: batches of jobs that share a simulation


def plan_chunks(jobs: list[Job], max_batch: int, workers: int = 1) -> list[list[Job]]:
    """Jobs grouped by runner.batch_key into chunks of at most max_batch, split further until
    every worker has a chunk (where there are jobs enough), largest first.

    A chunk takes every k-th job, not a run of neighbours: a job's speed depends on its
    parameters (bench128-heavy: 61 s for the 64 jobs of sensor angles 10-40, 71 s for 50-80 on
    an H200), and interleaved chunks of a grid take as much time as each other."""
    groups: dict[tuple, list[Job]] = {}
    for job in jobs:
        groups.setdefault(runner.batch_key(job.preset), []).append(job)
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


# ---------------------------------------------------------------------------------------------
# Running one chunk (in this process, a worker process or a Ray task)


def run_chunk(chunk: list[dict], sweep_dir: str, device: str, backend: str, quiet: bool = True) -> list[dict]:
    """Render a chunk of jobs ({"id", "preset"} dicts) on one device; one outcome each.

    The chunk runs as batches that fit the device's memory; a batch that still runs out of
    memory is halved and tried again. A failure fails only the jobs of its batch.
    """
    torch_device = machine.resolve_device(device)
    backend = machine.resolve_backend(backend, torch_device)
    presets = [Preset.model_validate(item["preset"]) for item in chunk]
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


def _render_batch_outcomes(
    items, presets, sweep_dir: Path, device: torch.device, backend: str, quiet: bool
) -> list[dict]:
    started, began = _now(), time.perf_counter()
    options = runner.RenderOptions(backend=backend, device=str(device), out_dir=sweep_dir, quiet=quiet)
    results, message, out_of_memory = None, None, False
    try:
        results = runner.render_batch(presets, options)
    except torch.cuda.OutOfMemoryError as error:
        message, out_of_memory = _error_text(error), True
    except Exception as error:  # the simulation failed: every job of the batch with it
        message = _error_text(error)
    if out_of_memory and len(items) > 1:
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
            outcome.update(
                status="done",
                outputs={fmt: str(path.relative_to(sweep_dir)) for fmt, path in result.outputs.items()},
            )
        else:
            outcome.update(status="failed", error=result.error)
        outcomes.append(outcome)
    return outcomes


def _error_text(error: BaseException) -> str:
    if isinstance(error, (RenderError, PresetError)):
        return str(error)
    return (
        f"{type(error).__name__}: {error}\n{''.join(traceback.format_tb(error.__traceback__)[-3:])}".strip()
    )


# ---------------------------------------------------------------------------------------------
# Executors: where chunks run. Each calls on_start(number) when a chunk starts and
# on_done(number, outcomes) when it ends, in the calling thread, which alone writes the manifest.


def parse_devices(text: str | None) -> list[str]:
    """--devices: 'all' (every CUDA GPU, else the CPU), 'cpu', or a list like cuda:0,cuda:1.
    A device may be named twice to run two workers on it."""
    if text is None:
        text = "all"
    if text.strip() == "all":
        # device_count, not is_available(): it asks NVML first and so leaves CUDA uninitialised
        # here, which lets the workers be forked (start_method)
        return [f"cuda:{i}" for i in range(torch.cuda.device_count())] or ["cpu"]
    devices = []
    for item in (t.strip() for t in text.split(",")):
        if item:
            devices.append(_device(item, text))
    if not devices:
        raise RenderError(f"--devices {text!r}: name at least one device, e.g. cpu or cuda:0,cuda:1")
    return devices


def _nvml_count() -> int:
    """GPUs as NVML counts them (CUDA_VISIBLE_DEVICES applied), or -1 where NVML cannot."""
    if not torch.backends.cuda.is_built():
        return 0
    count = getattr(torch.cuda, "_device_count_nvml", None)  # torch's own, used by device_count
    return count() if count is not None else -1


def _device(item: str, text: str) -> str:
    try:
        device = torch.device(item)
    except RuntimeError:
        device = None
    if device is None or device.type not in ("cpu", "cuda"):
        raise RenderError(
            f"--devices {text}: {item!r} is not a device; use all, cpu, cuda:N "
            "or a comma-separated list of them"
        )
    if device.type == "cpu":
        return "cpu"
    count = torch.cuda.device_count()  # as in parse_devices: CUDA stays uninitialised
    if (device.index or 0) >= count:
        raise RenderError(
            f"--devices {text}: this machine has {count} CUDA GPU(s)"
            + ("; use --devices cpu" if not count else "")
        )
    return f"cuda:{device.index or 0}"


def _run_here(payloads, device, sweep_dir, backend, quiet, on_start, on_done) -> None:
    for number, payload in enumerate(payloads):
        on_start(number)
        try:
            outcomes = run_chunk(payload, sweep_dir, device, backend, quiet)
        except Exception as error:
            outcomes = _failed(payload, error, device)
        on_done(number, outcomes)


def _failed(payload: list[dict], error, device: str) -> list[dict]:
    message = error if isinstance(error, str) else _error_text(error)
    return [{"id": item["id"], "status": "failed", "error": message, "device": device} for item in payload]


def _process_worker(
    worker: int, device: str, tasks, events, sweep_dir: str, backend: str, parent: int, threads: int
) -> None:
    die_with_parent(parent)
    # The worker's share of the host: two workers with a thread per core each (spawning agents
    # and colouring use torch's CPU threads, which spin while they wait) ran a 2-GPU sweep slower
    # than one GPU did.
    torch.set_num_threads(threads)
    if device.startswith("cuda"):
        torch.cuda.set_device(device)  # where anything not placed explicitly goes (contexts, events)
    while (task := tasks.get()) is not None:
        number, payload = task
        events.put(("start", worker, number, None))
        try:
            outcomes = run_chunk(payload, sweep_dir, device, backend, True)
        except Exception as error:
            outcomes = _failed(payload, error, device)
        events.put(("done", worker, number, outcomes))


def start_method(devices: list[str]) -> str:
    """How worker processes start: PHYSARUM_START_METHOD if set, else "fork" for GPU workers on
    Linux while this process has not initialised CUDA, else "spawn".

    A spawned worker starts Python and imports torch and this package again before its GPU can
    start: its first batch began 3.4 to 9 s after a one-GPU sweep's, on an H200 host. A forked
    one has them imported already, and began with it. CUDA cannot be forked once initialised,
    hence the check (sweeps count GPUs through NVML; where NVML does not answer, counting
    initialises CUDA). CPU workers are spawned: a process that has run torch's OpenMP threads (a
    test run, a notebook) can hang in a forked child.
    """
    chosen = os.environ.get("PHYSARUM_START_METHOD")
    if chosen:
        if chosen not in multiprocessing.get_all_start_methods():
            raise RenderError(
                f"PHYSARUM_START_METHOD={chosen!r}: use one of "
                f"{', '.join(multiprocessing.get_all_start_methods())}"
            )
        return chosen
    gpus_only = all(device.startswith("cuda") for device in devices)
    cuda_untouched = not torch.cuda.is_initialized() and _nvml_count() >= 0
    if sys.platform.startswith("linux") and gpus_only and cuda_untouched:
        return "fork"
    return "spawn"


class WorkerPool:
    """One worker process per device (forked or spawned: start_method), pulling chunks.

    A sweep starts its pool before its checks and planning, so that the workers' start overlaps
    them. Leaving the `with` block kills workers that are still running.
    """

    def __init__(self, devices: list[str], sweep_dir: str, backend: str):
        context = multiprocessing.get_context(start_method(devices))
        self.devices = devices
        self.tasks, self.events = context.Queue(), context.Queue()
        threads = max(1, machine.host_cores() // len(devices))
        self.processes = [
            context.Process(
                target=_process_worker,
                daemon=True,
                name=f"physarum-sweep-{device}",
                args=(i, device, self.tasks, self.events, sweep_dir, backend, os.getpid(), threads),
            )
            for i, device in enumerate(devices)
        ]
        self.ran = False
        for process in self.processes:
            process.start()

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc) -> None:
        # Workers that ran end on their own (run() queued their stop); any other is killed: an
        # error, or nothing to do (a finished sweep need not wait for its workers' start).
        for process in self.processes:
            process.join(timeout=10 if self.ran and exc[0] is None else 0)
            if process.is_alive():
                process.kill()
                process.join()

    def run(self, payloads, on_start, on_done) -> None:
        """Run every chunk; on_start/on_done as for the other executors."""
        self.ran = True
        for number, payload in enumerate(payloads):
            self.tasks.put((number, payload))
        for _ in self.processes:
            self.tasks.put(None)  # a worker exits when the chunks are gone
        in_flight: dict[int, int] = {}  # worker -> the chunk it is rendering
        pending = set(range(len(payloads)))

        def handle(event) -> None:
            kind, worker, number, outcomes = event
            if kind == "start":
                in_flight[worker] = number
                on_start(number)
            elif number in pending:
                in_flight.pop(worker, None)
                pending.discard(number)
                on_done(number, outcomes)

        while pending:
            try:
                handle(self.events.get(timeout=0.5))
                continue
            except queue.Empty:
                pass
            dead = [w for w, process in enumerate(self.processes) if not process.is_alive()]
            if not dead:
                continue
            _drain(self.events, handle)  # what a worker said before it died counts
            for worker in dead:
                if worker in in_flight and in_flight[worker] in pending:
                    number = in_flight.pop(worker)
                    pending.discard(number)
                    message = f"the worker on {self.devices[worker]} died (exit code {self.processes[worker].exitcode})"
                    on_done(number, _failed(payloads[number], message, self.devices[worker]))
            if len(dead) == len(self.processes):
                for number in sorted(pending):
                    on_done(number, _failed(payloads[number], "no worker was left to run it", "?"))
                pending.clear()


def _drain(events, handle) -> None:
    time.sleep(0.2)  # the last messages of a dead worker may still be in the pipe
    while True:
        try:
            handle(events.get_nowait())
        except queue.Empty:
            return


def ray_connect(address: str):
    """The ray module, connected: to a running cluster ('auto' or its address), to a new local
    instance ('local'), or as already initialised by the caller (tests do that)."""
    try:
        import ray
    except ImportError:
        raise RenderError("--ray needs Ray: pip install 'physarum[ray]'") from None
    if not ray.is_initialized():
        try:
            if address == "local":
                ray.init(include_dashboard=False)
            else:
                ray.init(address=address)
        except ConnectionError as error:
            raise RenderError(f"--ray {address}: cannot connect: {error}") from None
    return ray


def ray_workers(ray) -> int:
    """How many chunks a Ray cluster runs at once (its GPUs, or its CPUs where it has none)."""
    resources = ray.cluster_resources()
    return max(1, int(resources.get("GPU", 0) or resources.get("CPU", 1)))


def _run_ray(ray, payloads, sweep_dir, backend, on_start, on_done) -> None:
    """Every chunk as a Ray task: one GPU each where the cluster has GPUs, else CPU-only."""
    gpus = ray.cluster_resources().get("GPU", 0)
    task = ray.remote(num_gpus=1 if gpus else 0, num_cpus=1)(run_chunk)
    device = "cuda" if gpus else "cpu"  # Ray sets CUDA_VISIBLE_DEVICES to the task's GPU
    references = {}
    for number, payload in enumerate(payloads):
        references[task.remote(payload, sweep_dir, device, backend, True)] = number
        on_start(number)
    while references:
        finished, _ = ray.wait(list(references), num_returns=1)
        number = references.pop(finished[0])
        try:
            outcomes = ray.get(finished[0])
        except Exception as error:  # the task raised, or its worker or node died
            outcomes = _failed(payloads[number], f"Ray task failed: {type(error).__name__}: {error}", device)
        on_done(number, outcomes)


# ---------------------------------------------------------------------------------------------
# The sweep


@dataclass
class SweepOptions:
    backend: str = "auto"
    devices: str | None = None  # --devices; None: every GPU, else the CPU
    ray: str | None = None  # --ray auto|local|ADDRESS
    out_dir: Path = Path("outputs")
    retry_failed: bool = False
    max_batch: int = DEFAULT_MAX_BATCH
    quiet: bool = False
    gallery: bool = True


@dataclass
class SweepSummary:
    sweep: Sweep
    sweep_dir: Path
    records: list[dict]  # the final record of every job, in job order
    ran: int = 0  # jobs run by this call (done or failed)
    skipped: int = 0  # jobs done before, with complete outputs
    seconds: float = 0.0
    gallery: Path | None = None

    @property
    def failed(self) -> list[dict]:
        return [r for r in self.records if r.get("status") != "done"]


class SweepLock:
    """One sweep at a time per output folder (an flock, released by the kernel on any exit)."""

    def __init__(self, folder: Path):
        self.path = folder / ".lock"

    def __enter__(self):
        self.file = open(self.path, "a")
        try:
            fcntl.flock(self.file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self.file.close()
            raise RenderError(f"{self.path.parent}: another sweep is running in this folder") from None
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


def job_states(sweep: Sweep, sweep_dir: Path) -> dict[str, str]:
    """What a run would do with each job: done, failed, or pending (read only)."""
    latest = Manifest(sweep_dir / "manifest.jsonl").latest()
    states = {}
    for job in sweep.jobs:
        record = latest.get(job.id)
        if outputs_complete(sweep_dir, record, job):
            states[job.id] = "done"
        elif record and record.get("status") == "failed":
            states[job.id] = "failed"
        else:
            states[job.id] = "pending"
    return states


def _check_fits(sweep: Sweep, devices: list[str], backend: str) -> None:
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


def _remove_stale_parts(sweep_dir: Path) -> None:
    """Temporary files of a killed run (the lock says no other run is writing here)."""
    for part in sweep_dir.glob("*/.*.part"):
        part.unlink(missing_ok=True)


def run_sweep(
    sweep: Sweep, options: SweepOptions | None = None, log: Callable[[str], None] | None = None
) -> SweepSummary:
    """Render every job not already done; write the manifest as it goes and the gallery at the end."""
    options = options or SweepOptions()
    log = log or (lambda line: print(line, file=sys.stderr, flush=True))
    if options.max_batch < 1:
        raise RenderError(f"--batch must be at least 1, got {options.max_batch}")
    devices = parse_devices(options.devices) if options.ray is None else []
    sweep_dir = (Path(options.out_dir) / sweep.name).resolve()
    began = time.perf_counter()
    with contextlib.ExitStack() as stack:
        pool = (
            stack.enter_context(WorkerPool(devices, str(sweep_dir), options.backend))
            if len(devices) > 1
            else None
        )
        if devices:
            _check_fits(sweep, devices, options.backend)
        sweep_dir.mkdir(parents=True, exist_ok=True)
        stack.enter_context(SweepLock(sweep_dir))
        _remove_stale_parts(sweep_dir)
        manifest = Manifest(sweep_dir / "manifest.jsonl")
        summary = _run_jobs(sweep, sweep_dir, manifest, devices, options, log, pool)
        latest = manifest.latest()
        summary.records = [
            latest.get(job.id) or job_record(job, "failed", error="no record") for job in sweep.jobs
        ]
        summary.seconds = time.perf_counter() - began
        if options.gallery:
            from physarum.render.gallery import write_gallery

            summary.gallery = write_gallery(sweep_dir, summary.records)
    return summary


def _run_jobs(
    sweep: Sweep,
    sweep_dir: Path,
    manifest: Manifest,
    devices: list[str],
    options: SweepOptions,
    log,
    pool: WorkerPool | None = None,
) -> SweepSummary:
    summary = SweepSummary(sweep, sweep_dir, [])
    latest = manifest.latest()
    todo = []
    for job in sweep.jobs:
        record = latest.get(job.id)
        if outputs_complete(sweep_dir, record, job):
            summary.skipped += 1
        elif record and record.get("status") == "failed" and not options.retry_failed:
            continue  # stays failed; --retry-failed runs it again
        else:
            todo.append(job)
    if not todo:
        return summary
    ray = ray_connect(options.ray) if options.ray else None
    workers = ray_workers(ray) if ray else len(devices)
    chunks = plan_chunks(todo, options.max_batch, workers)
    by_id = {job.id: job for job in todo}
    payloads = [
        [{"id": job.id, "preset": job.preset.model_dump(mode="json")} for job in chunk] for chunk in chunks
    ]
    where = f"Ray ({options.ray})" if options.ray else ", ".join(devices)
    log(
        f"{sweep.name}: {len(todo)} jobs to render in {len(chunks)} batches on {where}"
        + (f" ({summary.skipped} already done)" if summary.skipped else "")
    )

    def on_start(number: int) -> None:
        for job in chunks[number]:
            manifest.append(job_record(job, "running"))

    def on_done(number: int, outcomes: list[dict]) -> None:
        for outcome in outcomes:
            job = by_id[outcome.pop("id")]
            manifest.append(job_record(job, outcome.pop("status"), **outcome))
            summary.ran += 1
            failed = "error" in outcome
            if not options.quiet or failed:
                log(
                    f"[{summary.ran}/{len(todo)}] {'FAILED' if failed else 'done'} {job.name} {job.id} "
                    f"({format_params(job.params)})" + (f": {outcome['error']}" if failed else "")
                )

    backend, folder = options.backend, str(sweep_dir)
    if ray:
        _run_ray(ray, payloads, folder, backend, on_start, on_done)
    elif len(devices) == 1:
        _run_here(payloads, devices[0], folder, backend, options.quiet, on_start, on_done)
    else:
        pool.run(payloads, on_start, on_done)
    return summary


def dry_run_lines(sweep: Sweep, out_dir: Path, max_batch: int = DEFAULT_MAX_BATCH) -> list[str]:
    """`physarum sweep FILE --dry-run`: every job with its id, values and state; writes nothing."""
    sweep_dir = Path(out_dir) / sweep.name
    states = job_states(sweep, sweep_dir)
    batches = len(plan_chunks(sweep.jobs, max_batch))
    counts = {s: sum(1 for v in states.values() if v == s) for s in ("done", "failed", "pending")}
    lines = [
        f"sweep {sweep.name}: {len(sweep.jobs)} jobs in {batches} batched simulation{'s' * (batches != 1)} "
        f"-> {sweep_dir}/ ({counts['done']} done, {counts['failed']} failed, {counts['pending']} to run)"
    ]
    width = max(len(job.name) for job in sweep.jobs)
    for job in sweep.jobs:
        preset = job.preset
        shape = f"{preset.canvas.width}x{preset.canvas.height} {preset.agents.count} agents s{preset.seed}"
        lines.append(
            f"{job.id}  {job.name:<{width}}  {states[job.id]:<7}  {shape}  {format_params(job.params)}"
        )
    return lines
