"""Sweep files and their jobs: one YAML file expanded into many validated jobs.

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
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import math
import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from physarum.render import runner
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
from physarum.render.sweep.labels import format_params

SWEEP_KEYS = ("name", "description", "base", "grid", "zip", "random", "seeds")
DISTRIBUTIONS = ("uniform", "log_uniform", "choice")
MAX_JOBS = 100_000
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
