"""The graph command's files: GraphML that networkx reads back whole, CSVs of the same graph,
the same bytes for the same graph (render/graph/report.py)."""

from __future__ import annotations

import csv

import networkx as nx
import numpy as np
import pytest

from physarum.render.graph.network import build_graph
from physarum.render.graph.report import EDGE_COLUMNS, NODE_COLUMNS, write_step
from physarum.render.graph.skeleton import skeletonise


def _graph() -> nx.MultiGraph:
    trail = np.zeros((48, 48), dtype=np.float32)
    trail[20:23, :] = trail[:, 20:23] = 1.5  # a cross around the torus: two loops, one junction
    graph = build_graph(skeletonise(trail, 0.5, 1), trail)
    graph.graph.update(preset="cross", step=7)
    return graph


def test_graphml_round_trips_with_networkx(tmp_path):
    graph = _graph()
    paths = write_step(tmp_path, 7, graph)
    back = nx.read_graphml(paths["graphml"], node_type=int, force_multigraph=True)
    assert back.graph["preset"] == "cross" and back.graph["step"] == 7
    assert dict(back.nodes(data=True)) == dict(graph.nodes(data=True))
    assert sorted((u, v, d["length"]) for u, v, d in back.edges(data=True)) == sorted(
        (u, v, d["length"]) for u, v, d in graph.edges(data=True)
    )
    assert back.number_of_edges() == 2 and all(u == v for u, v in back.edges())  # two self-loops


def test_csvs_hold_the_same_graph(tmp_path):
    graph = _graph()
    paths = write_step(tmp_path, 7, graph)
    with open(paths["nodes"], newline="") as file:
        nodes = list(csv.DictReader(file))
    with open(paths["edges"], newline="") as file:
        edges = list(csv.DictReader(file))
    assert tuple(nodes[0]) == NODE_COLUMNS and tuple(edges[0]) == EDGE_COLUMNS
    assert len(nodes) == graph.number_of_nodes() and len(edges) == graph.number_of_edges()
    assert [float(e["length"]) for e in edges] == pytest.approx([d for *_, d in graph.edges(data="length")])


def test_the_same_graph_gives_the_same_bytes(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, second = write_step(tmp_path / "a", 7, _graph()), write_step(tmp_path / "b", 7, _graph())
    assert all(first[k].read_bytes() == second[k].read_bytes() for k in first)
