"""The graph command's figure: the trail with its skeleton graph at a few steps over the top row,
the statistics over time below."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import networkx as nx
import numpy as np

from ..analysis.figures import _pyplot, _save_figure
from ..preset import Preset

PANELS = 4  # trail panels at most


def panel_steps(steps: Sequence[int], count: int = PANELS) -> list[int]:
    """Up to `count` of the chosen steps, evenly spread, the last always among them."""
    if len(steps) <= count:
        return list(steps)
    picks = np.linspace(0, len(steps) - 1, count).round().astype(int)
    return [steps[i] for i in sorted(set(picks.tolist()))]


def overlay(trail: np.ndarray, skeleton: np.ndarray) -> np.ndarray:
    """An RGB image: the trail in grey (up to its 99.5th percentile, gamma 0.6), the skeleton cyan."""
    high = float(np.percentile(trail, 99.5)) or 1.0
    grey = np.clip(trail / high, 0, 1) ** 0.6
    image = np.repeat(grey[:, :, None], 3, axis=2)
    image[skeleton] = (0.0, 0.85, 1.0)
    return image


def plot_graphs(
    path: Path, preset: Preset, snapshots: dict[int, tuple[np.ndarray, np.ndarray, nx.MultiGraph]], rows
) -> None:
    """snapshots: step -> (trail, skeleton, graph) for the panel steps; rows: the statistics."""
    plt = _pyplot()
    shown = sorted(snapshots)
    columns = max(len(shown), 3)
    figure = plt.figure(figsize=(4.2 * columns, 8.4), constrained_layout=True)
    grid = figure.add_gridspec(2, columns * 2)
    for k, step in enumerate(shown):
        trail, skeleton, graph = snapshots[step]
        axis = figure.add_subplot(grid[0, 2 * k : 2 * k + 2])
        axis.imshow(overlay(trail, skeleton), interpolation="nearest")
        for kind, colour in (("junction", "tab:red"), ("end", "gold"), ("dot", "magenta")):
            points = [(d["x"], d["y"]) for _, d in graph.nodes(data=True) if d["kind"] == kind]
            if points:
                px, py = zip(*points)
                axis.scatter(px, py, s=6, color=colour, linewidths=0, label=kind + "s")
        axis.set_title(
            f"step {step}: {graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges", fontsize=9
        )
        axis.set_xticks([])
        axis.set_yticks([])
        if k == 0 and axis.get_legend_handles_labels()[0]:  # no legend where no node is shown
            axis.legend(fontsize=7, loc="upper right", markerscale=3)
    steps = [row["step"] for row in rows]
    plots = (
        ("count", ("nodes", "edges", "junctions", "ends", "cycles")),
        ("cells", ("total_length",)),
        ("", ("mean_degree", "mean_width")),
    )
    span = 2 * columns // 3
    for k, (unit, names) in enumerate(plots):
        axis = figure.add_subplot(grid[1, k * span : (k + 1) * span if k < 2 else 2 * columns])
        for name in names:
            axis.plot(steps, [row[name] for row in rows], marker=".", lw=1.2, label=name.replace("_", " "))
        axis.set_xlabel("step")
        axis.set_ylabel(unit)
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.suptitle(
        f"{preset.name} (seed {preset.seed}, {preset.canvas.width}x{preset.canvas.height}, "
        f"{preset.agents.count} agents): the trail's skeleton graph",
        fontsize=11,
    )
    _save_figure(figure, path)
