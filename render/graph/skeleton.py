"""From a trail map to a one-pixel skeleton on the canvas's own topology (docs/graph.md section 2).

The trail is thresholded (`threshold_value`), specks and pinholes smaller than a minimum area are
removed, the mask is thinned to a skeleton (skimage.morphology.skeletonize) and the Euclidean
distance of every cell to the nearest cell below the threshold is measured
(scipy.ndimage.distance_transform_edt), all on the host in numpy.

On the torus (boundary: wrap) none of these library functions wraps, so each runs on a copy of
the mask padded by wrapping (np.pad mode="wrap") by a margin, and the central tile is kept. A
cell's result depends only on cells within a bounded distance (the thinning removes one layer
per pass), so the kept tile is exact once the margin exceeds that reach: the margin starts at
twice the widest structure's half-width plus 8 cells and doubles until the skeleton just outside
the kept tile equals the tile's own opposite edge (the wrap agrees), at most the canvas's size.
With another boundary the padding is background (nothing beyond the edge).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

THRESHOLD_RULES = ("otsu",)  # or a fraction in (0, 1] of the PERCENTILE-th percentile
PERCENTILE = 99.0
LOG_FLOOR = 0.01  # "otsu" reads the trail on a log scale from this fraction of the percentile up
MIN_AREA = 16  # specks and holes smaller than this many cells are removed
MAX_CLEAN_CELLS = 2**24  # the cleaning's padded copy may hold this many cells (or 9 canvases)


@dataclass(frozen=True)
class Skeleton:
    """A thresholded trail and its skeleton: `mask` (cells at or above `threshold`), `skeleton`
    (bool [H, W], one pixel wide) and `distance` (float64 [H, W], each mask cell's distance in
    cells to the nearest cell outside the mask; 0 outside), `wrap` (the canvas is a torus)."""

    threshold: float
    mask: np.ndarray
    skeleton: np.ndarray
    distance: np.ndarray
    wrap: bool
    margin: int


def threshold_value(trail: np.ndarray, rule: str | float) -> float:
    """The trail level that separates the network from the background. "otsu": Otsu's threshold
    (skimage.filters.threshold_otsu, 256 bins) of the log trail, log(max(T, LOG_FLOOR * P)), P the
    trail's PERCENTILE-th percentile: on a log scale the faint haze between veins and the veins
    separate (on the raw values the few brightest veins set the split and the faint filaments fall
    out), the floor keeps empty cells from stretching the scale, and the rule does not depend on
    the deposit's scale. A number f in (0, 1]: f * P. inf for a map with no positive cell."""
    from skimage.filters import threshold_otsu

    values = np.asarray(trail, dtype=np.float32)
    if not np.any(values > 0):
        return math.inf
    high = float(np.percentile(values, PERCENTILE))
    if rule != "otsu":
        return float(rule) * high
    if high <= 0:  # fewer than 1% of the cells hold any trail: they are the network
        return float(values[values > 0].min())
    logs = np.log(np.maximum(values, LOG_FLOOR * high))
    if logs.min() == logs.max():
        return float(values.max())
    return float(np.exp(threshold_otsu(logs)))


def _pad(mask: np.ndarray, margin: int, wrap: bool) -> np.ndarray:
    return np.pad(mask, margin, mode="wrap" if wrap else "constant")


def _crop(padded: np.ndarray, margin: int, shape: tuple[int, int]) -> np.ndarray:
    return padded[margin : margin + shape[0], margin : margin + shape[1]]


def max_min_area(height: int, width: int, wrap: bool) -> int:
    """The largest --min-area on an H x W canvas: at most the canvas's cells (no piece is larger),
    and on the torus at most the margin m whose padded copy, (H + 2m) x (W + 2m) cells, stays
    within MAX_CLEAN_CELLS or nine canvases (what the thinning's widest copy holds), so the
    cleaning's memory (about 14 bytes a cell) is bounded before it starts."""
    cells = height * width
    if not wrap:
        return cells
    room = max(MAX_CLEAN_CELLS, 9 * cells)
    margin = int((math.isqrt((height + width) ** 2 + 4 * (room - cells)) - (height + width)) // 4)
    while (height + 2 * (margin + 1)) * (width + 2 * (margin + 1)) <= room:
        margin += 1
    while margin > 0 and (height + 2 * margin) * (width + 2 * margin) > room:
        margin -= 1
    return max(1, min(cells, margin))


def clean_mask(mask: np.ndarray, min_area: int, wrap: bool) -> np.ndarray:
    """The mask without components and holes of fewer than `min_area` cells (8-connected objects,
    4-connected holes; skimage.morphology), on the torus where `wrap`: on a copy padded by
    `min_area` cells on every side. That is exact: a piece smaller than min_area reaches less than
    min_area cells from the tile, so it lies whole in the copy; a piece the copy's edge cuts
    reaches at least min_area cells out from the tile, so it has at least min_area cells there."""
    from skimage.morphology import remove_small_holes, remove_small_objects

    if min_area <= 1:
        return mask.copy()
    if min_area > max_min_area(*mask.shape, wrap):
        raise ValueError(f"min_area {min_area} is above max_min_area {max_min_area(*mask.shape, wrap)}")
    margin = min_area if wrap else 1
    padded = _pad(mask, margin, wrap)
    padded = remove_small_objects(padded, max_size=min_area - 1, connectivity=2)
    padded = remove_small_holes(padded, max_size=min_area - 1, connectivity=1)
    return _crop(padded, margin, mask.shape).copy()


def torus_distance(mask: np.ndarray, wrap: bool) -> np.ndarray:
    """Each mask cell's Euclidean distance (cells) to the nearest cell outside the mask; on the
    torus the margin doubles until every kept distance is below it (the nearest outside cell is
    then inside the padded copy), up to the canvas's size."""
    from scipy.ndimage import distance_transform_edt

    if not mask.any():
        return np.zeros(mask.shape)
    margin, limit = 16, max(mask.shape)
    while True:
        padded = _pad(mask, margin, wrap)
        distance = _crop(distance_transform_edt(padded), margin, mask.shape)
        if not wrap or distance.max() < margin or margin >= limit:
            return np.ascontiguousarray(distance)
        margin = min(2 * margin, limit)


def _wrap_agrees(padded: np.ndarray, margin: int, shape: tuple[int, int]) -> bool:
    """Whether the two rows and columns just outside the kept tile equal the tile's own opposite
    edges (what a skeleton of the torus itself would have there)."""
    height, width = shape
    tile = _crop(padded, margin, shape)
    m = margin
    return (
        np.array_equal(padded[m - 2 : m, m : m + width], tile[height - 2 :])
        and np.array_equal(padded[m + height : m + height + 2, m : m + width], tile[:2])
        and np.array_equal(padded[m : m + height, m - 2 : m], tile[:, width - 2 :])
        and np.array_equal(padded[m : m + height, m + width : m + width + 2], tile[:, :2])
    )


def skeletonise(trail: np.ndarray, rule: str | float = "otsu", min_area: int = MIN_AREA, wrap: bool = True):
    """The `Skeleton` of a float32 trail map [H, W] (module docstring for the rules); the mask
    holds the cells at or above the threshold that hold any trail (a threshold of 0, where fewer
    than 1% of the cells hold trail, never takes the empty ones)."""
    from skimage.morphology import skeletonize

    trail = np.asarray(trail, dtype=np.float32)
    threshold = threshold_value(trail, rule)
    mask = clean_mask((trail >= threshold) & (trail > 0), min_area, wrap)  # never an empty cell
    distance = torus_distance(mask, wrap)
    reach = int(math.ceil(float(distance.max()))) if mask.any() else 0
    margin, limit = 2 * reach + 8, max(trail.shape)
    while True:
        margin = min(margin, limit)
        padded = skeletonize(_pad(mask, margin, wrap))
        if not wrap or margin >= limit or _wrap_agrees(padded, margin, trail.shape):
            break
        margin *= 2
    skeleton = np.ascontiguousarray(_crop(padded, margin, trail.shape))
    return Skeleton(threshold, mask, skeleton, distance, wrap, margin)
