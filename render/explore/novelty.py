"""Novelty: descriptors scaled robustly, each candidate's distance from its nearest neighbours,
and farthest-point selection of what is kept.

- Scaling: each descriptor column minus its median over the archive, over MAD_SCALE times its
  median absolute deviation (a column whose deviation is 0 says nothing and is left out).
- Novelty: the mean Euclidean distance (over the square root of the columns kept) to the
  NEAREST nearest other candidates of the archive (fewer where the archive is smaller; 0 alone).
- Selection: the most novel first, then again and again the candidate farthest from everything
  chosen (the largest distance to its nearest chosen), ties to the more novel, then the earlier.

Everything is float64 numpy on the host, in a fixed order: the same archive gives the same
choice.
"""

from __future__ import annotations

import numpy as np

NEAREST = 5
MAD_SCALE = 1.4826  # the MAD of a normal distribution, times this, is its standard deviation


def robust_scale(matrix: np.ndarray) -> np.ndarray:
    """[n, d] descriptors scaled by the archive's median and MAD per column; columns of zero MAD
    (or NaN everywhere) left out: [n, d'] with d' <= d."""
    matrix = np.asarray(matrix, dtype=np.float64)
    if matrix.size == 0:
        return matrix.reshape(matrix.shape[0], 0)
    median = np.nanmedian(matrix, axis=0) if np.isfinite(matrix).any() else np.zeros(matrix.shape[1])
    mad = np.nanmedian(np.abs(matrix - median), axis=0) * MAD_SCALE
    keep = np.isfinite(mad) & (mad > 0)
    scaled = (matrix[:, keep] - median[keep]) / mad[keep]
    return np.nan_to_num(scaled, nan=0.0)


def distances(scaled: np.ndarray) -> np.ndarray:
    """[n, n] Euclidean distances between rows over sqrt(columns) (0 with no columns)."""
    columns = max(1, scaled.shape[1])
    difference = scaled[:, None, :] - scaled[None, :, :]
    return np.sqrt((difference * difference).sum(axis=-1) / columns)


def novelty(scaled: np.ndarray, nearest: int = NEAREST) -> np.ndarray:
    """[n] mean distance of each row to its `nearest` nearest other rows (0 for a lone row)."""
    count = scaled.shape[0]
    if count < 2:
        return np.zeros(count)
    table = distances(scaled)
    np.fill_diagonal(table, np.inf)
    k = min(nearest, count - 1)
    return np.sort(table, axis=1)[:, :k].mean(axis=1)


def farthest_points(scaled: np.ndarray, scores: np.ndarray, keep: int) -> list[int]:
    """Indices of `keep` rows (fewer if there are fewer): the most novel first, then each time the
    row farthest from those chosen (ties: more novel, then earlier)."""
    count = scaled.shape[0]
    if count == 0 or keep < 1:
        return []
    order = sorted(range(count), key=lambda i: (-scores[i], i))
    chosen = [order[0]]
    table = distances(scaled)
    nearest = table[order[0]].copy()
    while len(chosen) < min(keep, count):
        best = max(
            (i for i in order if i not in chosen),
            key=lambda i: (nearest[i], scores[i], -i),
        )
        chosen.append(best)
        nearest = np.minimum(nearest, table[best])
    return chosen
