"""`physarum graph PRESET`: the trail's network as a graph at chosen steps (docs/graph.md).

The preset's simulation 0 runs once; at each chosen step its trail (summed over species) is
skeletonised (skeleton.py) and turned into a graph (network.py), written per step as GraphML and
node and edge CSVs (report.py); the statistics of every step go to one CSV, and a figure shows
the graph at a few steps and the statistics over time (figures.py)."""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from ..base.errors import RenderError
from ..preset import Preset
from ..preset.provenance import embedded_text, version
from ..sim.simulation import make_simulation
from .figures import panel_steps, plot_graphs
from .network import build_graph, graph_statistics
from .report import output_paths, write_stats, write_step
from .skeleton import MIN_AREA, THRESHOLD_RULES, max_min_area, skeletonise

MAX_STEPS_CHOSEN = 200  # per-step files are written for each chosen step
WARN_NODES = 200_000  # above this a step's graph takes seconds to write (docs/graph.md 5)


@dataclass(frozen=True)
class GraphOptions:
    steps: tuple[int, ...]
    threshold: str | float = "otsu"
    min_area: int = MIN_AREA
    backend: str = "torch"
    device: torch.device = torch.device("cpu")
    quiet: bool = False


def parse_threshold(text: str | None) -> str | float:
    """--threshold: "otsu" or a fraction in (0, 1] of the trail's 99th percentile."""
    if text is None:
        return "otsu"
    if text in THRESHOLD_RULES:
        return text
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0 < value <= 1:
        raise RenderError(
            f"--threshold {text!r}: use otsu or a fraction in (0, 1] of the trail's 99th percentile"
        )
    return value


def chosen_steps(at: str | None, every: int | None, run_steps: int) -> tuple[int, ...]:
    """The steps to take the graph at: --at S1,S2,... (each from 1 to the run's steps), or every
    N steps up to the run's end (default: ten steps evenly spaced, the last one included)."""
    if at is not None:
        try:
            steps = sorted({int(s) for s in at.split(",") if s.strip()})
        except ValueError:
            raise RenderError(f"--at {at!r}: give steps as whole numbers, e.g. --at 100,500,1000") from None
        if not steps or steps[0] < 1 or steps[-1] > run_steps:
            raise RenderError(f"--at {at!r}: each step must be from 1 to the run's {run_steps} steps")
    else:
        every = max(1, run_steps // 10) if every is None else every
        if every < 1:
            raise RenderError(f"--every must be a positive number of steps, got {every}")
        steps = list(range(every, run_steps + 1, every))
        if not steps or steps[-1] != run_steps:
            steps.append(run_steps)
    if len(steps) > MAX_STEPS_CHOSEN:
        raise RenderError(
            f"{len(steps)} steps chosen; at most {MAX_STEPS_CHOSEN} (a larger --every, or fewer --at)"
        )
    return tuple(steps)


def check_min_area(preset: Preset, min_area: int) -> None:
    """--min-area from 1 to max_min_area of the preset's canvas (its cells; on the torus also the
    cleaning's padded copy bounded): RenderError naming the bound otherwise, before any step."""
    height, width = preset.canvas.height, preset.canvas.width
    largest = max_min_area(height, width, preset.boundary == "wrap")
    if not 1 <= min_area <= largest:
        raise RenderError(
            f"--min-area {min_area}: give from 1 to {largest} cells on this {width}x{height} canvas "
            f"(a speck or hole is at most the canvas; on the torus the cleaning pads the canvas by "
            f"--min-area cells on every side)"
        )


def network_trail(preset: Preset, trail: torch.Tensor) -> np.ndarray:
    """Simulation 0's trail on the host, float32 [H, W]; a preset with species: their sum."""
    return trail[: preset.species_count].sum(dim=0).cpu().numpy().astype(np.float32)


def graph_command(preset: Preset, options: GraphOptions, out_dir: Path) -> dict[str, Path]:
    """Run the preset, write every file; returns the statistics CSV, the figure and the folder.
    Options the canvas does not allow are refused first (check_min_area): nothing runs or is
    written."""
    check_min_area(preset, options.min_area)
    paths = output_paths(preset, out_dir)
    paths["steps"].mkdir(parents=True, exist_ok=True)
    wrap = preset.boundary == "wrap"
    simulation = make_simulation(preset, options.backend, options.device)
    shown = set(panel_steps(options.steps))
    rows, snapshots, done = [], {}, 0
    for step in options.steps:
        simulation.advance(step - done)
        done = step
        trail = network_trail(preset, simulation.trail)
        start = time.perf_counter()
        found = skeletonise(trail, options.threshold, options.min_area, wrap)
        graph = build_graph(found, trail)
        graph.graph.update(_graph_attributes(preset, options, step, found.threshold))
        nodes = graph.number_of_nodes()
        if nodes > WARN_NODES:
            print(f"note: step {step}: {nodes} nodes; writing its GraphML takes a while", file=sys.stderr)
        write_step(paths["steps"], step, graph)
        rows.append({"step": step, "threshold": found.threshold, **graph_statistics(graph, found)})
        if step in shown:
            snapshots[step] = (trail, found.skeleton, graph)
        if not options.quiet:
            row = rows[-1]
            print(
                f"step {step}: {row['nodes']} nodes ({row['junctions']} junctions, {row['ends']} ends), "
                f"{row['edges']} edges, {row['cycles']} cycles, length {row['total_length']:.0f} "
                f"({time.perf_counter() - start:.2f} s)",
                file=sys.stderr,
            )
    write_stats(paths["csv"], rows)
    plot_graphs(paths["png"], preset, snapshots, rows)
    return paths


def _graph_attributes(preset: Preset, options: GraphOptions, step: int, threshold: float) -> dict:
    """What each GraphML file says about itself (graph-level attributes)."""
    return {
        "preset": preset.name,
        "seed": preset.seed,
        "step": step,
        "width": preset.canvas.width,
        "height": preset.canvas.height,
        "boundary": preset.boundary,
        "threshold_rule": str(options.threshold),
        "threshold": threshold,
        "min_area": options.min_area,
        "physarum": version(),
        "preset_yaml": embedded_text(preset),
    }


def summary_lines(paths: dict[str, Path], steps: Sequence[int]) -> list[str]:
    return [
        f"graphs at {len(steps)} steps: {paths['steps']}",
        str(paths["csv"]),
        str(paths["png"]),
    ]
