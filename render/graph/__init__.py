"""`physarum graph`: the trail's network as a graph (docs/graph.md).

The modules, in the order data flows through them: skeleton (threshold, clean, thin, distance,
on the torus), network (the pixel graph, nodes and edges, statistics), report (GraphML and CSV
files), figures (the figure), command (the run and its options). This package re-exports their
public names."""

from __future__ import annotations

from .command import (
    MAX_STEPS_CHOSEN,
    WARN_NODES,
    GraphOptions,
    check_min_area,
    chosen_steps,
    graph_command,
    network_trail,
    parse_threshold,
    summary_lines,
)
from .network import GRAPH_STATS, build_graph, graph_statistics, node_kind, pixel_graph
from .report import (
    EDGE_COLUMNS,
    NODE_COLUMNS,
    STATS_COLUMNS,
    output_paths,
    step_paths,
    write_stats,
    write_step,
)
from .skeleton import (
    MAX_CLEAN_CELLS,
    MIN_AREA,
    PERCENTILE,
    THRESHOLD_RULES,
    Skeleton,
    max_min_area,
    skeletonise,
)

__all__ = [
    "MIN_AREA",
    "MAX_CLEAN_CELLS",
    "max_min_area",
    "check_min_area",
    "PERCENTILE",
    "THRESHOLD_RULES",
    "Skeleton",
    "skeletonise",
    "GRAPH_STATS",
    "pixel_graph",
    "build_graph",
    "graph_statistics",
    "node_kind",
    "NODE_COLUMNS",
    "EDGE_COLUMNS",
    "STATS_COLUMNS",
    "output_paths",
    "step_paths",
    "write_step",
    "write_stats",
    "MAX_STEPS_CHOSEN",
    "WARN_NODES",
    "GraphOptions",
    "chosen_steps",
    "parse_threshold",
    "network_trail",
    "graph_command",
    "summary_lines",
]
