"""Reports: output names, the CSVs, the JSON documents (run header, summary per kind, each twin,
the 2x2 model, a plane's verdicts) and the lines `physarum sensitivity` prints.

Numbers are written with 9 significant digits in CSVs ("nan" where there is none) and 6 in JSON
(json_number; null where there is none)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ..base.files import write_csv
from ..preset import Preset
from ..preset.provenance import embedded_text, version
from .batch import RunOptions
from .fit import (
    SATURATION_LEVEL,
    WINDOW_FRACTION,
    TwinResult,
    mean_and_error,
    perturbed,
)
from .linear import LinearModel
from .metrics import METRICS, TwinSeries
from .plane import PlaneResult
from .twins import KINDS


def output_paths(preset: Preset, out_dir: Path, suffix: str) -> dict[str, Path]:
    """The CSV, PNG and JSON of a command, out_dir/<name>/<name>-s<seed>-<suffix>.<format>."""
    stem = Path(out_dir) / preset.name / f"{preset.name}-s{preset.seed}-{suffix}"
    return {fmt: stem.with_suffix(f".{fmt}") for fmt in ("csv", "png", "json")}


def _format(value: float) -> str:
    """A CSV number: 9 significant digits, enough to tell float32 values apart."""
    return f"{value:.9g}"


def write_twin_csv(path: Path, series: TwinSeries, width: int, point: int = 0) -> None:
    """One row per step and twin: the twin's perturbation, METRICS, the decorrelated levels."""
    rows = []
    for i, step in enumerate(series.steps):
        level = series.decorrelated[point, i]
        for k, twin in enumerate(series.twins[point]):
            rows.append(
                (
                    int(step),
                    k + 1,
                    twin.kind,
                    twin.describe(width),
                    int(twin.found),
                    *(_format(v) for v in series.metrics[point, k, i]),
                    _format(level[0]),
                    _format(level[1]),
                )
            )
    write_csv(
        path,
        ("step", "twin", "kind", "target", "found", *METRICS, "decorrelated_l1", "decorrelated_distance_px"),
        rows,
    )


def write_plane_csv(path: Path, plane: PlaneResult) -> None:
    """One row per point, the first axis varying slowest: both parameters, the measured exponent
    and its statistics, the 2x2 model's leading eigenvalue, and both verdicts (1 unstable, 0
    stable; the measured one empty where no exponent was measured)."""
    first, second = plane.axes
    rows = []
    for i, a in enumerate(first.values):
        for j, b in enumerate(second.values):
            rows.append(
                (
                    _format(a),
                    _format(b),
                    _format(plane.exponent[i, j]),
                    _format(plane.stderr[i, j]),
                    int(plane.fitted[i, j]),
                    _format(plane.grew[i, j]),
                    _format(plane.saturation[i, j]),
                    _format(plane.leading[i, j]),
                    int(plane.measured_unstable[i, j]) if plane.measured[i, j] else "",
                    int(plane.model_unstable[i, j]),
                )
            )
    write_csv(
        path,
        (
            first.key,
            second.key,
            "exponent",
            "exponent_stderr",
            "twins_fitted",
            "grew_share",
            "saturation_step",
            "linear_leading_eigenvalue",
            "measured_unstable",
            "linear_unstable",
        ),
        rows,
    )


def summarise(results: Sequence[TwinResult]) -> dict:
    """Exponents (mean, standard error, count) and saturation, for each kind and for all twins."""
    summary = {}
    groups = {"all": perturbed(results)}
    for kind in KINDS:
        if any(r.twin.kind == kind for r in results):
            groups[kind] = [r for r in results if r.twin.kind == kind]
    for name, group in groups.items():
        trail = mean_and_error([r.trail_fit.rate for r in group])
        agent = mean_and_error([r.agent_fit.rate for r in group])
        saturation = mean_and_error([r.saturation_step for r in group])
        summary[name] = {
            "twins": len(group),
            "diverged": sum(1 for r in group if r.trail_fit.start >= 0),
            "grew": sum(1 for r in group if r.grew),
            "healed": sum(1 for r in group if r.trail_fit.start >= 0 and r.final[0] == 0),
            "exponent": _number_triple(trail),
            "agent_exponent": _number_triple(agent),
            "saturation_step": _number_triple(saturation),
            "plateau_ratio": _number_triple(mean_and_error([r.plateau_ratio for r in group])),
        }
    return summary


def _number_triple(triple: tuple[float, float, int]) -> dict:
    """mean_and_error's (mean, error, count) as JSON: {"mean", "stderr", "n"}."""
    mean, error, count = triple
    return {"mean": json_number(mean), "stderr": json_number(error), "n": count}


def json_number(value: float | None) -> float | None:
    """A JSON number: 6 significant digits; None (null) for None, NaN and infinities."""
    return None if value is None or not math.isfinite(value) else float(f"{value:.6g}")


def run_header(preset: Preset, options: RunOptions, device_name: str) -> dict:
    """What every sensitivity document starts with: the run and the rules it was measured by."""
    return {
        "physarum_version": version(),
        "preset": preset.name,
        "seed": preset.seed,
        "preset_yaml": embedded_text(preset),
        "backend": options.backend,
        "device": device_name,
        "perturbed_at_step": options.at,
        "steps": options.steps,
        "twins": list(options.twins),
        "window_fraction": WINDOW_FRACTION,
        "saturation_level": SATURATION_LEVEL,
    }


def twin_record(result: TwinResult, steps, width: int) -> dict:
    """One twin of a run as JSON: its perturbation, fits (the window as first and last step),
    saturation and final values. `steps`: the series' step numbers, `width`: the canvas's."""
    fit = result.trail_fit
    return {
        "kind": result.twin.kind,
        "target": result.twin.describe(width),
        "found": result.twin.found,
        "exponent": json_number(fit.rate),
        "r2": json_number(fit.r2),
        "window": [int(steps[fit.start]), int(steps[fit.end - 1])] if fit.end > fit.start >= 0 else None,
        "agent_exponent": json_number(result.agent_fit.rate),
        "grew": result.grew,
        "saturation_step": result.saturation_step,
        "final": dict(zip(METRICS, (json_number(v) for v in result.final))),
        "plateau_ratio": json_number(result.plateau_ratio),
    }


def linear_record(linear: LinearModel) -> dict:
    """The 2x2 model as JSON: its four rates, the leading eigenvalue and the verdict."""
    return {
        **{k: json_number(v) for k, v in linear.__dict__.items()},
        "leading_eigenvalue": json_number(linear.eigenvalues()[0]),
        "unstable": linear.unstable,
    }


def plane_record(plane: PlaneResult) -> dict:
    """A plane as JSON: its axes, the threshold, the agreement and the counts of the verdicts."""
    share, count = plane.agreement
    return {
        "plane": {axis.key: list(axis.values) for axis in plane.axes},
        "threshold": plane.threshold,
        "agreement": json_number(share),
        "points_compared": count,
        "measured_unstable": int(np.sum(plane.measured_unstable)),
        "linear_unstable": int(np.sum(plane.model_unstable)),
        "confusion": plane.confusion,
    }


def plus_minus(triple: dict, digits: int = 4) -> str:
    """A JSON triple as "mean ± stderr" ("mean" alone without an error, "n/a" without a mean)."""
    mean, error = triple["mean"], triple["stderr"]
    if mean is None:
        return "n/a"
    return f"{mean:.{digits}f}" + (f" ± {error:.{digits}f}" if error is not None else "")


def summary_lines(document: dict) -> list[str]:
    """What `physarum sensitivity` prints from its document: the run, then for one preset the
    exponents, saturation and the 2x2 model per kind, for a plane the verdicts' agreement; last,
    the plain-language verdict (analysis/verdict.py)."""
    kinds = document["twins"]
    head = (
        f"{document['preset']} (seed {document['seed']}): {len(kinds)} twins "
        f"({kinds.count('agent')} agent, {kinds.count('trail')} trail) perturbed at step "
        f"{document['perturbed_at_step']}, {document['steps']} steps, {document['backend']} "
        f"on {document['device']}"
    )
    body = _plane_lines(document) if "plane" in document else _point_lines(document)
    verdict = document.get("verdict")  # documents written before the verdict have none
    return [head, *body, *([f"verdict: {verdict}"] if verdict else [])]


def _plane_lines(document: dict) -> list[str]:
    """The verdicts of a plane: how many points are unstable each way, and the agreement."""
    first, second = document["plane"]
    counts = document["confusion"]
    return [
        f"plane {first} x {second}: {document['points_compared']} points measured; "
        f"unstable (exponent > {document['threshold']:g}/step): {document['measured_unstable']}, "
        f"by the 2x2 model: {document['linear_unstable']}",
        f"2x2 model agrees on {_share(document['agreement'])} of the points "
        f"(both unstable {counts['both_unstable']}, both stable {counts['both_stable']}, "
        f"model only {counts['model_only_unstable']}, measurement only "
        f"{counts['measured_only_unstable']})",
    ]


def _point_lines(document: dict) -> list[str]:
    """Per group of twins (all, then each kind) the exponents, growth and saturation; then the
    2x2 model."""
    lines = []
    for name, group in document["summary"].items():
        saturation = group["saturation_step"]
        saturated = (
            f"saturated at step {plus_minus(saturation, 0)} ({saturation['n']} twins)"
            if saturation["n"]
            else f"no plateau within {document['steps']} steps"
        )
        lines.append(
            f"  {name:<5} exponent {plus_minus(group['exponent'])} per step "
            f"({group['exponent']['n']} fitted; agent distance {plus_minus(group['agent_exponent'])}); "
            f"grew {group['grew']}/{group['twins']}, healed {group['healed']}; {saturated}; "
            f"final L1 / decorrelated {plus_minus(group['plateau_ratio'])}"
        )
    linear = document["linear_model"]
    lines.append(
        f"  2x2 model: leading eigenvalue {linear['leading_eigenvalue']:.4f} per step "
        f"({'unstable' if linear['unstable'] else 'stable'}; decay {linear['decay']:.4g}, "
        f"deposit {linear['deposit']:.4g}, response {linear['response']:.4g}, "
        f"damping {linear['damping']:.4g})"
    )
    return lines


def _share(value: float | None) -> str:
    """A JSON share (0 to 1) as a percentage, "n/a" where it is null."""
    return "n/a" if value is None else f"{value:.0%}"
