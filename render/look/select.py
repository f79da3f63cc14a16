"""Exact order statistics of a trail map: the values of chosen ranks, on the map's device.

kth_values(trail, ks) gives, for each 1-based rank k, the k-th smallest element of the map: the
element torch.kthvalue(trail.reshape(-1), k) finds, and so the same value on every device (an
order statistic is one value, however it is found; no arithmetic touches it). It is found faster
than kthvalue, which on CUDA runs one thread block per slice (about 50 ms for a 3840x2160 map on
an H200) and on a CPU a slow quickselect:

- on a GPU, torch.topk(sorted=False) of the smaller side of the rank (the n - k + 1 largest, or the
  k smallest) and the min (or max) of what it returns: a multi-block radix select, then an exact
  reduction (a min or max does not depend on the order it is taken in);
- on the CPU, numpy's introselect (np.partition) on a copy, every rank in one call.

Integer histograms (radix select by torch.bincount over bit fields of the float32 pattern) were
measured and are slower on both (the harness's case colour shows all the candidates); they stay in
the bench script, not here. So was a Triton radix select (four passes, each counting one 8-bit
digit of the floats' ordered bit patterns by tl.histogram in registers): on an H100, 3.14 ms
against topk's 2.70 for 134M cells (a 512^3 volume), 1.08 against 0.22 for 3840x2160.
quantile_rank is the rank of a quantile, as the colouring has always taken it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch


def quantile_rank(cells: int, quantile: float) -> int:
    """The 1-based rank (1 .. cells) shown as a quantile: ceil(quantile * cells) in float64."""
    return max(1, min(cells, math.ceil(quantile * cells)))


def kth_values(trail: torch.Tensor, ks: Sequence[int]) -> torch.Tensor:
    """[len(ks)] float32 on the trail's device: the ks[i]-th smallest element of `trail` (any
    shape, float32, no NaN), for 1 <= ks[i] <= trail.numel(). No host synchronisation on a GPU."""
    flat = trail.reshape(-1)
    cells = flat.numel()
    if not all(1 <= k <= cells for k in ks):
        raise ValueError(f"ranks must be 1 .. {cells}, got {list(ks)}")
    if flat.device.type == "cpu":
        return _partition(flat, ks)
    return torch.stack([_topk(flat, k) for k in ks])


def _topk(flat: torch.Tensor, k: int) -> torch.Tensor:
    """[] the k-th smallest of `flat` by topk of the smaller side (less memory, less work)."""
    cells = flat.numel()
    if 2 * k > cells:
        return torch.topk(flat, cells - k + 1, sorted=False).values.min()
    return torch.topk(flat, k, largest=False, sorted=False).values.max()


def _partition(flat: torch.Tensor, ks: Sequence[int]) -> torch.Tensor:
    """[len(ks)] the ks-th smallest of a CPU tensor, by np.partition (introselect) on a copy."""
    where = [k - 1 for k in ks]
    chosen = np.partition(flat.detach().numpy(), where)[where]
    return torch.from_numpy(np.ascontiguousarray(chosen))
