"""The skeleton's graph and its statistics, on shapes whose answer is known
(render/graph/network.py)."""

from __future__ import annotations

import numpy as np
import pytest

from physarum.render.graph.network import build_graph, graph_statistics
from physarum.render.graph.skeleton import skeletonise


def _graph(trail: np.ndarray, wrap: bool = True):
    found = skeletonise(trail, 0.5, 1, wrap)
    graph = build_graph(found, trail)
    return graph, graph_statistics(graph, found)


def _canvas(size: int = 64) -> np.ndarray:
    return np.zeros((size, size), dtype=np.float32)


def test_a_ring_is_one_cycle():
    yy, xx = np.mgrid[:64, :64]
    radius = np.hypot(yy - 32, xx - 32)
    graph, stats = _graph(((radius > 12) & (radius < 16)).astype(np.float32))
    assert (stats["cycles"], stats["components"], stats["junctions"], stats["ends"]) == (1, 1, 0, 0)
    (u, v, length), *more = graph.edges(data="length")
    assert not more and u == v and 2 * np.pi * 12 < length < 2 * np.pi * 16


def test_a_plus_sign_is_one_junction_with_four_ends():
    trail = _canvas()
    trail[30:33, 10:53] = trail[10:53, 30:33] = 2.0
    graph, stats = _graph(trail)
    assert (stats["junctions"], stats["ends"], stats["edges"], stats["cycles"]) == (1, 4, 4, 0)
    junction = next(d for _, d in graph.nodes(data=True) if d["kind"] == "junction")
    assert junction["degree"] == 4 and junction["x"] == pytest.approx(31, abs=1)
    assert all(w == pytest.approx(3.0, abs=0.5) for *_, w in graph.edges(data="mean_width"))
    assert all(t == pytest.approx(2.0) for *_, t in graph.edges(data="mean_trail"))


def test_a_line_across_the_border_is_one_edge_that_wraps():
    trail = _canvas()
    trail[30:33, :12] = trail[30:33, 50:] = 1.0  # one segment, cut by the left and right edges
    graph, stats = _graph(trail)
    assert (stats["components"], stats["edges"], stats["ends"]) == (1, 1, 2)
    (*_, data), *_ = graph.edges(data=True)
    assert data["wraps"] == 1 and data["length"] == pytest.approx(25, abs=2)
    _, apart = _graph(trail, wrap=False)  # without the wrap: two pieces
    assert apart["components"] == 2


def test_a_line_around_the_torus_is_a_cycle():
    trail = _canvas()
    trail[30:33, :] = 1.0
    _, stats = _graph(trail)
    assert (stats["cycles"], stats["ends"], stats["total_length"]) == (1, 0, 64)


def test_an_l_bend_is_no_junction():
    trail = _canvas()
    trail[10:40, 10:13] = trail[37:40, 10:40] = 1.0
    _, stats = _graph(trail)
    assert (stats["junctions"], stats["ends"], stats["edges"]) == (0, 2, 1)


def test_a_figure_eight_has_two_cycles_and_node_ids_in_raster_order():
    trail = _canvas()
    trail[10:13, 10:50] = trail[30:33, 10:50] = trail[50:53, 10:50] = 1.0
    trail[10:53, 10:13] = trail[10:53, 47:50] = 1.0
    graph, stats = _graph(trail)
    assert (stats["cycles"], stats["components"]) == (2, 1)
    rows = [(round(d["y"]), round(d["x"])) for _, d in graph.nodes(data=True)]
    assert rows == sorted(rows) and list(graph.nodes) == list(range(len(rows)))


def test_lone_dots_and_an_empty_trail_make_graphs_without_edges():
    trail = _canvas()
    trail[10, 10] = trail[40, 20] = 1.0  # two one-cell specks: two dots
    graph, stats = _graph(trail)
    assert (stats["nodes"], stats["dots"], stats["edges"], stats["components"]) == (2, 2, 0, 2)
    assert stats["total_length"] == 0 and stats["cycles"] == 0
    _, empty = _graph(_canvas())
    assert (empty["nodes"], empty["edges"], empty["mean_degree"]) == (0, 0, 0.0)
