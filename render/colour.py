"""Colouring on the device: trail -> 8-bit palette index through levels and gamma.

The map index = round(255 * ((T - low) / (high - low)) ** gamma) is never evaluated per cell:
its 255 thresholds are computed once per frame in float64 on the host and rounded to float32,
and each cell's index is the number of thresholds at or below it. Comparisons are exact, so the
index frames are identical on every backend and device (pow on a GPU and a CPU is not).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from physarum.render.palette import palette_table
from physarum.render.preset import Palette


def thresholds(low: float, high: float, gamma: float) -> np.ndarray:
    """[255] float32, ascending: the trail value at which the index reaches 1, 2, ... 255."""
    level = (np.arange(1, 256, dtype=np.float64) - 0.5) / 255.0
    return (low + (high - low) * level ** (1.0 / gamma)).astype(np.float32)


def auto_high(trail: torch.Tensor, low: float, quantile: float) -> float:
    """The trail value at `quantile` (an element of the map, found exactly by kthvalue)."""
    flat = trail.reshape(-1)
    k = max(1, min(flat.numel(), math.ceil(quantile * flat.numel())))
    value = float(torch.kthvalue(flat, k).values)
    if not value > low:
        value = float(flat.max())
    return value if value > low else low + 1.0


class Colourist:
    """Turns one simulation's trail [H, W] into index frames and knows each frame's palette."""

    def __init__(self, palette: Palette):
        self.palette = palette
        self.tables = [palette_table(entry) for entry in palette.names]

    def index_frame(self, trail: torch.Tensor) -> torch.Tensor:
        """[H, W] uint8 palette indices, on the trail's device."""
        levels = self.palette.levels
        high = auto_high(trail, levels.low, levels.quantile) if levels.high == "auto" else levels.high
        if not high > levels.low:
            high = levels.low + 1.0
        bounds = torch.from_numpy(thresholds(levels.low, high, self.palette.gamma)).to(trail.device)
        return torch.bucketize(trail, bounds, right=True).to(torch.uint8)

    def palette_index(self, frame: int) -> int:
        """Which of the preset's palettes frame number `frame` is shown with."""
        return (frame // self.palette.every) % len(self.tables)

    def table(self, frame: int) -> np.ndarray:
        """[256, 3] uint8 RGB palette of frame number `frame`."""
        return self.tables[self.palette_index(frame)]

    def rgb(self, index: torch.Tensor, frame: int) -> torch.Tensor:
        """[H, W, 3] uint8 RGB of an index frame, looked up on the index frame's device."""
        table = torch.from_numpy(self.table(frame)).to(index.device)
        return table[index.to(torch.int64)]
