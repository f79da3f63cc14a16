"""Reports: output names, the CSVs, the JSON summary of a run's twins, and the lines
`physarum sensitivity` prints."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from physarum.render.analysis.fit import TwinResult, mean_and_error
from physarum.render.analysis.metrics import METRICS, TwinSeries
from physarum.render.analysis.plane import PlaneResult
from physarum.render.files import write_csv
from physarum.render.preset import Preset


def output_stem(preset: Preset, out_dir: Path, suffix: str) -> Path:
    return Path(out_dir) / preset.name / f"{preset.name}-s{preset.seed}-{suffix}"


def _format(value: float) -> str:
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
    first, second = plane.axes
    rows = []
    for i, a in enumerate(first.values):
        for j, b in enumerate(second.values):
            measured = plane.exponent[i, j]
            rows.append(
                (
                    _format(a),
                    _format(b),
                    _format(measured),
                    _format(plane.stderr[i, j]),
                    int(plane.fitted[i, j]),
                    _format(plane.grew[i, j]),
                    _format(plane.saturation[i, j]),
                    _format(plane.leading[i, j]),
                    int(measured > plane.threshold) if math.isfinite(measured) else "",
                    int(plane.leading[i, j] > 0),
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
    groups = {"all": [r for r in results if r.twin.kind != "none"]}
    for kind in ("agent", "trail", "none"):
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
    mean, error, count = triple
    return {"mean": json_number(mean), "stderr": json_number(error), "n": count}


def json_number(value: float) -> float | None:
    return None if value is None or not math.isfinite(value) else float(f"{value:.6g}")


def plus_minus(triple: dict, digits: int = 4) -> str:
    mean, error = triple["mean"], triple["stderr"]
    if mean is None:
        return "n/a"
    return f"{mean:.{digits}f}" + (f" ± {error:.{digits}f}" if error is not None else "")


def summary_lines(document: dict) -> list[str]:
    """What `physarum sensitivity` prints: the run, the exponents, saturation, the 2x2 model."""
    kinds = document["twins"]
    head = (
        f"{document['preset']} (seed {document['seed']}): {len(kinds)} twins "
        f"({kinds.count('agent')} agent, {kinds.count('trail')} trail) perturbed at step "
        f"{document['perturbed_at_step']}, {document['steps']} steps, {document['backend']} "
        f"on {document['device']}"
    )
    if "plane" in document:
        first, second = document["plane"]
        counts = document["confusion"]
        return [
            head,
            f"plane {first} x {second}: {document['points_compared']} points measured; "
            f"unstable (exponent > {document['threshold']:g}/step): {document['measured_unstable']}, "
            f"by the 2x2 model: {document['linear_unstable']}",
            f"2x2 model agrees on {_share(document['agreement'])} of the points "
            f"(both unstable {counts['both_unstable']}, both stable {counts['both_stable']}, "
            f"model only {counts['model_only_unstable']}, measurement only "
            f"{counts['measured_only_unstable']})",
        ]
    lines = [head]
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
    return "n/a" if value is None else f"{value:.0%}"
