"""The graph command's files (docs/graph.md section 4): per chosen step a GraphML file and the
node and edge CSVs, and over the run the statistics CSV; each written whole or not at all.

Numbers in CSVs have 9 significant digits; GraphML keeps Python's shortest round-trip repr of
every float. Node ids are 0..N-1 in raster order, so the same trail gives the same bytes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import networkx as nx

from ..base.files import write_csv, written_whole
from ..preset import Preset
from .network import GRAPH_STATS

NODE_COLUMNS = ("node", "x", "y", "kind", "degree", "pixels", "trail")
EDGE_COLUMNS = ("edge", "u", "v", "length", "pixels", "mean_width", "mean_trail", "wraps")
STATS_COLUMNS = ("step", "threshold", *GRAPH_STATS)


def _format(value) -> str:
    return f"{value:.9g}" if isinstance(value, float) else str(value)


def output_paths(preset: Preset, out_dir: Path) -> dict[str, Path]:
    """The statistics CSV, the figure, and the folder of per-step files:
    out_dir/<name>/<name>-s<seed>-graph.{csv,png} and out_dir/<name>/<name>-s<seed>-graph/."""
    stem = Path(out_dir) / preset.name / f"{preset.name}-s{preset.seed}-graph"
    return {"csv": stem.with_suffix(".csv"), "png": stem.with_suffix(".png"), "steps": stem}


def step_paths(folder: Path, step: int) -> dict[str, Path]:
    """step-NNNNNNN.graphml, step-NNNNNNN-nodes.csv and step-NNNNNNN-edges.csv in `folder`."""
    stem = f"step-{step:07d}"
    return {
        "graphml": folder / f"{stem}.graphml",
        "nodes": folder / f"{stem}-nodes.csv",
        "edges": folder / f"{stem}-edges.csv",
    }


def write_step(folder: Path, step: int, graph: nx.MultiGraph) -> dict[str, Path]:
    """One step's GraphML, nodes CSV and edges CSV (the graph's own attributes on GraphML)."""
    paths = step_paths(folder, step)
    with written_whole(paths["graphml"]) as temporary:
        nx.write_graphml(graph, temporary)
    write_csv(
        paths["nodes"],
        NODE_COLUMNS,
        ((n, *(_format(data[c]) for c in NODE_COLUMNS[1:])) for n, data in graph.nodes(data=True)),
    )
    write_csv(
        paths["edges"],
        EDGE_COLUMNS,
        (
            (k, u, v, *(_format(data[c]) for c in EDGE_COLUMNS[3:]))
            for k, (u, v, data) in enumerate(graph.edges(data=True))
        ),
    )
    return paths


def write_stats(path: Path, rows: Sequence[dict]) -> None:
    """One row per chosen step: STATS_COLUMNS."""
    write_csv(path, STATS_COLUMNS, ([_format(row[c]) for c in STATS_COLUMNS] for row in rows))
