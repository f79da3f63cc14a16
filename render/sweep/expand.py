"""A sweep's jobs: the sections of a sweep file (schema.py) expanded into validated presets.

Jobs are grid x zip x random samples x seeds, in that order, each named `<sweep>-NNNN` with an id
(a short hash of its resolved preset). Every job is validated before anything runs; all invalid
jobs are reported at once, with their parameter values, as one PresetError, and so are all the
problems of the file itself.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..base.errors import RenderError
from ..formats.gif_file import preview_size
from ..out import specs
from ..preset import (
    Preset,
    PresetError,
    build_preset,
    key_annotation,
    read_preset_file,
    set_dotted,
)
from .labels import format_params
from .schema import (
    Choice,
    LogUniform,
    Random,
    SweepFile,
    Uniform,
    index_digits,
    read_sections,
    relation_problems,
)

PREVIEW_SIDE = 256  # GIF previews of a sweep fit in 256 x 256 unless the sweep sets output.gif_scale
RANDOM_DIGITS = 6  # significant digits of sampled floats: short labels, reproducible YAML


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
    """A sweep file expanded: its name, the file it came from and its jobs, in job order."""

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
    """The validated jobs of a sweep mapping (schema.py has its keys); PresetError lists every
    problem at once, each naming `source`."""
    sections, problems = read_sections(data)
    name = default_name if sections.name is None else sections.name
    base, preset_dir = _read_base(sections.base, base_dir, problems)
    problems.extend(relation_problems(sections, name))
    if problems:
        raise PresetError([f"{source}: {problem}" for problem in problems])
    total = sections.job_count
    digits = index_digits(total)
    sets_scale = "output.gif_scale" in sections.swept_keys or _sets_scale(sections.base)
    jobs, job_problems, bad = [], [], 0
    for index, params in enumerate(_combinations(sections, _samples(sections.random))):
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
    repeated = _repeated_jobs(jobs)
    if repeated:
        raise PresetError([f"{source}: {problem}" for problem in repeated])
    return Sweep(name, source, jobs, sections.description)


def _repeated_jobs(jobs: list[Job]) -> list[str]:
    """A problem for every job whose resolved preset, its name aside, is an earlier job's: it
    would render the same files twice (a value listed twice, a random draw that repeats)."""
    first: dict[str, Job] = {}
    problems = []
    for job in jobs:
        resolved = job.preset.model_dump(mode="json")
        resolved.pop("name")
        key = json.dumps(resolved, sort_keys=True)
        if key in first:
            earlier = first[key]
            problems.append(
                f"jobs {earlier.name} ({format_params(earlier.params)}) and {job.name} "
                f"({format_params(job.params)}) resolve to the same preset; each job once"
            )
        else:
            first[key] = job
    return problems


def _read_base(base: str | dict, base_dir: Path, problems: list[str]) -> tuple[dict | None, Path]:
    """The base preset's data (None if it has problems) and the folder its image paths are
    relative to: a preset file's own folder, or the sweep file's for an inline preset."""
    if isinstance(base, dict):
        return base, base_dir
    path = Path(base) if Path(base).is_absolute() else base_dir / base
    try:
        return read_preset_file(path), path.parent
    except PresetError as error:
        problems.extend(f"base: {p}" for p in error.problems)
        return None, path.parent


def _sets_scale(base) -> bool:
    """Whether an inline base preset sets output.gif_scale itself."""
    return isinstance(base, dict) and isinstance(base.get("output"), dict) and "gif_scale" in base["output"]


def _samples(section: Random | None) -> list[dict]:
    """`count` seeded draws of the random section's parameters, in the order they are written."""
    if section is None:
        return []
    whole = {key: key_annotation(key) is int for key in section.params}
    rng = random.Random(section.seed)
    return [
        {key: _draw(rng, distribution, whole[key]) for key, distribution in section.params.items()}
        for _ in range(section.count)
    ]


def _draw(rng: random.Random, distribution: Uniform | LogUniform | Choice, whole: bool):
    """One value of a distribution: a whole number for whole-number keys (agents.count,
    canvas.width, ...), else a float rounded to RANDOM_DIGITS significant digits."""
    if isinstance(distribution, Choice):
        return copy.deepcopy(rng.choice(distribution.choice))
    lo, hi = distribution.bounds
    if whole:
        lo, hi = math.ceil(lo), math.floor(hi)
    if isinstance(distribution, Uniform):
        return rng.randint(lo, hi) if whole else float(f"{rng.uniform(lo, hi):.{RANDOM_DIGITS}g}")
    sample = math.exp(rng.uniform(math.log(lo), math.log(hi)))
    return min(hi, max(lo, round(sample))) if whole else float(f"{sample:.{RANDOM_DIGITS}g}")


def _combinations(sections: SweepFile, samples: list[dict]):
    """Every job's swept values: grid x zip rows x random samples x seeds, in that order."""
    grid, zipped = sections.grid or {}, sections.zip or {}
    grid_rows = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
    rows = min((len(values) for values in zipped.values()), default=1)
    zip_rows = [{key: values[i] for key, values in zipped.items()} for i in range(rows)]
    for g, z, r, s in itertools.product(grid_rows, zip_rows, samples or [{}], sections.seeds or [None]):
        params = {**g, **z, **r}
        if s is not None:
            params["seed"] = s
        yield params


def _job(
    index: int,
    name: str,
    params: dict,
    base: dict,
    sets_scale: bool,
    source: str,
    preset_dir: Path = Path("."),
) -> Job:
    """Job `index`: the base with its swept values set, named, validated and given its id. Its GIF
    preview is shrunk to fit PREVIEW_SIDE unless the sweep sets output.gif_scale."""
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
        if preview_size(side, side, preset.output.gif_scale)[0] > PREVIEW_SIDE:
            set_dotted(data, "output.gif_scale", PREVIEW_SIDE / side)
            preset = build_preset(data, where, base=preset_dir)
    try:
        specs.check_outputs(preset)
    except RenderError as error:
        raise PresetError([f"{where}: {error}"]) from None
    digest = hashlib.sha256(preset.to_yaml().encode("utf-8")).hexdigest()[:10]
    return Job(index, name, digest, params, preset)
