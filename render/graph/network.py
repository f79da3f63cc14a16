"""From a skeleton to a graph: nodes (junctions, ends), edges (skeleton paths), their statistics
(docs/graph.md section 3). Vectorised with numpy and scipy.sparse.csgraph; the graph itself is a
networkx MultiGraph (parallel paths and loops are kept).

The pixel graph joins every skeleton pixel to its 8 neighbours (across the border on a torus),
except a diagonal step whose corner is also a skeleton pixel (the two 4-steps through the corner
already join them; without this an L-shaped bend would count as a junction). A pixel's degree in
it decides what it is: 2 is a path pixel, anything else a node pixel (1 an end, 3 or more a
junction, 0 a lone dot). Adjacent node pixels are one node; each connected run of path pixels is
one edge between the nodes its two ends touch; a closed run with no node (a ring) gets one node
of its own at its first pixel and is an edge from that node to itself.
"""

from __future__ import annotations

import math

import networkx as nx
import numpy as np
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from .skeleton import Skeleton

FORWARD = ((0, 1), (1, -1), (1, 0), (1, 1))  # each neighbour pair once
NODE_KINDS = {0: "dot", 1: "end", 2: "point"}  # by degree; 3 or more: "junction"


def node_kind(degree: int) -> str:
    return NODE_KINDS.get(degree, "junction")


def pixel_graph(skeleton: np.ndarray, wrap: bool):
    """(ys, xs, i, j, step): the skeleton's pixels in raster order and its pixel graph's edges,
    pixel i to pixel j (indices into ys, xs), each `step` long (1 or sqrt 2 cells)."""
    height, width = skeleton.shape
    ys, xs = np.nonzero(skeleton)
    index = np.full(skeleton.shape, -1, dtype=np.int64)
    index[ys, xs] = np.arange(len(ys))
    first, second, steps = [], [], []
    for dy, dx in FORWARD:
        ny, nx_ = ys + dy, xs + dx
        inside = np.ones(len(ys), dtype=bool)
        if not wrap:
            inside = (ny >= 0) & (ny < height) & (nx_ >= 0) & (nx_ < width)
        ny, nx_ = ny % height, nx_ % width
        j = np.where(inside, index[ny, nx_], -1)
        keep = j >= 0
        if dy and dx:  # a diagonal: dropped where a corner cell already joins the two
            corner_a = skeleton[ny, xs % width] & inside
            corner_b = skeleton[ys, nx_] & inside
            keep &= ~(corner_a | corner_b)
        first.append(np.nonzero(keep)[0])
        second.append(j[keep])
        steps.append(np.full(int(keep.sum()), math.sqrt(2.0) if dy and dx else 1.0))
    i, j = np.concatenate(first), np.concatenate(second)
    keep = i != j  # a canvas one cell wide would join a cell to itself
    return ys, xs, i[keep], j[keep], np.concatenate(steps)[keep]


def _components(count: int, i: np.ndarray, j: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Component label of each member pixel (-1 for others) in the pixel graph restricted to
    the members, labels renumbered by their first (lowest) pixel, so raster order."""
    both = members[i] & members[j]
    matrix = sparse.coo_matrix((np.ones(int(both.sum())), (i[both], j[both])), shape=(count, count))
    _, raw = connected_components(matrix.tocsr(), directed=False)
    labels = np.full(count, -1, dtype=np.int64)
    where = np.nonzero(members)[0]
    if where.size == 0:
        return labels
    raw = raw[where]
    _, first = np.unique(raw, return_index=True)  # where (ascending) meets each label first
    order = np.argsort(first, kind="stable")
    renumber = np.empty(int(raw.max()) + 1, dtype=np.int64)
    renumber[np.unique(raw)[order]] = np.arange(len(order))
    labels[where] = renumber[raw]
    return labels


def _sums(labels: np.ndarray, weights: np.ndarray, count: int) -> np.ndarray:
    """float64 [count]: the sum of `weights` per label (np.bincount, float even when empty)."""
    return np.bincount(labels, weights.astype(np.float64), count).astype(np.float64)


def _mean_position(ys, xs, labels, count, shape, wrap):
    """Each label's mean pixel position (x, y), on the torus relative to its first pixel."""
    height, width = shape
    first = np.full(count, len(ys), dtype=np.int64)
    np.minimum.at(first, labels, np.arange(len(ys)))
    position = []
    for values, size in ((xs, width), (ys, height)):
        reference = values[first[labels]]
        offset = values - reference
        if wrap:
            offset = (offset + size // 2) % size - size // 2
        mean = _sums(labels, offset, count) / np.bincount(labels, minlength=count)
        centre = values[first] + mean
        position.append(centre % size if wrap else centre)
    return position


def build_graph(found: Skeleton, trail: np.ndarray) -> nx.MultiGraph:
    """The skeleton's graph: node attributes x, y (cells; mean of the node's pixels), kind, degree,
    pixels, trail (mean over its pixels); edge attributes length (cells along the path, from node
    pixel to node pixel), pixels (path pixels), mean_width (2 d - 1 cells, d the mean distance
    of its path pixels to the background), mean_trail, wraps (1 where it crosses the border).
    Node ids 0..N-1 in raster order of their first pixel; edges in order of their first pixel."""
    skeleton, wrap = found.skeleton, found.wrap
    ys, xs, i, j, step = pixel_graph(skeleton, wrap)
    count = len(ys)
    degree = np.bincount(i, minlength=count) + np.bincount(j, minlength=count)
    is_path = degree == 2
    node_of = _components(count, i, j, ~is_path)
    path_of = _components(count, i, j, is_path)
    nodes = int(node_of.max()) + 1 if count and (~is_path).any() else 0
    paths = int(path_of.max()) + 1 if is_path.any() else 0

    # a step between a path pixel and a node pixel attaches that path to that node
    crossing = np.abs(ys[i] - ys[j]) > 1
    crossing |= np.abs(xs[i] - xs[j]) > 1
    attach = is_path[i] != is_path[j]
    path_end = np.where(is_path[i], i, j)[attach]
    node_end = np.where(is_path[i], j, i)[attach]
    inner = is_path[i] & is_path[j]

    path_pixels = np.bincount(path_of[is_path], minlength=paths)
    length = _sums(path_of[i[inner]], step[inner], paths) + _sums(path_of[path_end], step[attach], paths)
    wraps = _sums(path_of[i[inner]], crossing[inner], paths) + _sums(
        path_of[path_end], crossing[attach], paths
    )
    width = 2 * found.distance[ys, xs] - 1
    values = np.asarray(trail, dtype=np.float64)[ys, xs]
    mean_width = _sums(path_of[is_path], width[is_path], paths) / np.maximum(path_pixels, 1)
    mean_trail = _sums(path_of[is_path], values[is_path], paths) / np.maximum(path_pixels, 1)
    first_pixel = np.full(paths, count, dtype=np.int64)
    np.minimum.at(first_pixel, path_of[is_path], np.nonzero(is_path)[0])

    ends: list[list[int]] = [[] for _ in range(paths)]
    for p, n in sorted(zip(path_of[path_end].tolist(), node_of[node_end].tolist())):
        ends[p].append(n)

    graph = nx.MultiGraph()
    node_pixels = ~is_path
    if nodes:
        x, y = _mean_position(
            ys[node_pixels], xs[node_pixels], node_of[node_pixels], nodes, skeleton.shape, wrap
        )
        size = np.bincount(node_of[node_pixels], minlength=nodes)
        trail_mean = _sums(node_of[node_pixels], values[node_pixels], nodes) / size
        for n in range(nodes):
            graph.add_node(n, x=float(x[n]), y=float(y[n]), pixels=int(size[n]), trail=float(trail_mean[n]))
    edges = []
    for p in range(paths):
        if not ends[p]:  # a closed run with no node: a node of its own at its first pixel
            n = graph.number_of_nodes()
            q = int(first_pixel[p])
            graph.add_node(n, x=float(xs[q]), y=float(ys[q]), pixels=0, trail=float(values[q]))
            ends[p] = [n, n]
        u, v = sorted(ends[p])
        edges.append((int(first_pixel[p]), u, v, p))
    for _, u, v, p in sorted(edges):
        graph.add_edge(
            u,
            v,
            length=float(length[p]),
            pixels=int(path_pixels[p]),
            mean_width=float(mean_width[p]),
            mean_trail=float(mean_trail[p]),
            wraps=int(wraps[p] > 0),
        )
    for n, d in graph.degree():
        graph.nodes[n]["degree"] = int(d)
        graph.nodes[n]["kind"] = node_kind(int(d))
    return graph


GRAPH_STATS = (
    "nodes",
    "edges",
    "junctions",
    "ends",
    "dots",
    "components",
    "cycles",
    "mean_degree",
    "total_length",
    "mean_edge_length",
    "mean_width",
    "skeleton_pixels",
    "coverage",
)


def graph_statistics(graph: nx.MultiGraph, found: Skeleton) -> dict[str, float]:
    """GRAPH_STATS of one graph: counts of nodes, edges and nodes by kind (junctions: degree 3 or
    more; ends: 1; dots: 0), components, cycles (the cycle rank E - N + C: independent loops),
    mean degree (2 E / N), total and mean edge length (cells), length-weighted mean width
    (cells), skeleton pixels and the mask's share of the canvas (coverage)."""
    nodes, edges = graph.number_of_nodes(), graph.number_of_edges()
    kinds = [kind for _, kind in graph.nodes(data="kind")]
    components = nx.number_connected_components(graph) if nodes else 0
    lengths = np.array([length for *_, length in graph.edges(data="length")], dtype=np.float64)
    widths = np.array([w for *_, w in graph.edges(data="mean_width")], dtype=np.float64)
    total = float(lengths.sum())
    return {
        "nodes": nodes,
        "edges": edges,
        "junctions": kinds.count("junction"),
        "ends": kinds.count("end"),
        "dots": kinds.count("dot"),
        "components": components,
        "cycles": edges - nodes + components,
        "mean_degree": 2 * edges / nodes if nodes else 0.0,
        "total_length": total,
        "mean_edge_length": total / edges if edges else 0.0,
        "mean_width": float((lengths * widths).sum() / total) if total > 0 else 0.0,
        "skeleton_pixels": int(found.skeleton.sum()),
        "coverage": float(found.mask.mean()),
    }
