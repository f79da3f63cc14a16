"""Colouring on the device: trail -> 8-bit palette index through levels and gamma.

The map index = round(255 * ((T - low) / (high - low)) ** gamma) is never evaluated per cell:
the gamma curve is tabulated once on the host, each frame's 255 thresholds follow from it in
plain float32 operations, and each cell's index is the number of thresholds at or below it.
Comparisons are exact, so index frames are identical on every backend and device (a per-cell
pow on a GPU and on a CPU is not).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from physarum.render.palette import palette_table
from physarum.render.preset import Palette


def gamma_levels(gamma: float) -> np.ndarray:
    """[255] float32, ascending: where in [0, 1] of the level range the index reaches 1 .. 255.

    Computed once, on the host, in float64 (pow is not exact across devices; this runs once).
    """
    level = (np.arange(1, 256, dtype=np.float64) - 0.5) / 255.0
    return (level ** (1.0 / gamma)).astype(np.float32)


def auto_high(trail: torch.Tensor, quantile: float) -> torch.Tensor:
    """[] float32: the trail value at `quantile`, an element of the map found by kthvalue."""
    flat = trail.reshape(-1)
    k = max(1, min(flat.numel(), math.ceil(quantile * flat.numel())))
    return torch.kthvalue(flat, k).values


class Colourist:
    """Turns one simulation's trail [H, W] into index frames and knows each frame's palette.

    Everything per frame stays on the device with no host synchronisation: the thresholds are
    low + (high - low) * level in separate float32 operations (each rounded the same way on every
    device), and a cell's index is the number of thresholds at or below it.
    """

    def __init__(self, palette: Palette):
        self.palette = palette
        self.tables = [palette_table(entry) for entry in palette.names]
        self._levels = torch.from_numpy(gamma_levels(palette.gamma))
        self._device_tables: dict = {}

    def _on(self, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        if device not in self._device_tables:
            self._device_tables[device] = (
                self._levels.to(device), torch.from_numpy(np.stack(self.tables)).to(device))
        return self._device_tables[device]

    def index_frame(self, trail: torch.Tensor) -> torch.Tensor:
        """[H, W] uint8 palette indices, on the trail's device."""
        levels, _ = self._on(trail.device)
        low = torch.tensor(self.palette.levels.low, dtype=torch.float32, device=trail.device)
        high = self.palette.levels.high
        if high == "auto":
            high = auto_high(trail, self.palette.levels.quantile)
            high = torch.where(high > low, high, trail.max())
        else:
            high = torch.tensor(high, dtype=torch.float32, device=trail.device)
        high = torch.where(high > low, high, low + 1.0)
        bounds = (high - low) * levels + low
        return torch.bucketize(trail, bounds, right=True).to(torch.uint8)

    def palette_index(self, frame: int) -> int:
        """Which of the preset's palettes frame number `frame` is shown with."""
        return (frame // self.palette.every) % len(self.tables)

    def table(self, frame: int) -> np.ndarray:
        """[256, 3] uint8 RGB palette of frame number `frame`."""
        return self.tables[self.palette_index(frame)]

    def rgb(self, index: torch.Tensor, frame: int) -> torch.Tensor:
        """[H, W, 3] uint8 RGB of an index frame, looked up on the index frame's device."""
        _, tables = self._on(index.device)
        return tables[self.palette_index(frame)][index.to(torch.int64)]


def preview_size(width: int, height: int, scale: float) -> tuple[int, int]:
    return max(1, round(width * scale)), max(1, round(height * scale))


def downscale(index: torch.Tensor, size: tuple[int, int]) -> torch.Tensor:
    """Nearest-neighbour resampling of an index frame to (width, height), in integers (exact)."""
    height, width = index.shape
    out_w, out_h = size
    if (out_w, out_h) == (width, height):
        return index
    columns = (torch.arange(out_w, device=index.device) * 2 + 1) * width // (2 * out_w)
    rows = (torch.arange(out_h, device=index.device) * 2 + 1) * height // (2 * out_h)
    return index[rows][:, columns]
