"""Render layers (palette.layer): what a plain preset's frames show, beside its trail.

- trail (the default): the trail map, coloured as always (render/look/colour.py).
- density: the agents standing in each cell, counted in int64 on the state's device (an exact
  integer scatter), as a float32 map (exact below 2 ** 24 agents a cell, above that the
  correctly rounded float32, the same everywhere) coloured like a trail:
  the preset's palettes, levels and gamma, whose thresholds compare exactly.
- heading: the hue of the mean heading of each cell's agents. Each agent adds its heading's
  unit vector from the 16-bit unit circle (the kernels' exact circle rounded half even to
  UNIT16 fixed point) to its cell's int64 sums (x, y); the cell's index is 1 + the bin of
  (x, y) among HEADING_BINS equal sectors counted anticlockwise from east (+x), found with
  integer cross products only (heading_bins), so every backend and device gives the same index.
  Index 0 (black) is a cell with no agents or whose vectors cancel exactly (sum (0, 0)). The
  frame is shown with the fixed hue wheel hue_table (HeadingColourist, render/look/colour.py).
- mix: the trail's index i_t and the density's i_d, each found as for its own layer (each with
  the preset's levels and gamma), blended in integers with w = round(256 * layer_mix) (unset:
  0.5): (i_t * (256 - w) + i_d * w + 128) >> 8, shown with the preset's palettes
  (MixColourist, render/look/colour.py).

A layer reads the simulation's agents once a frame as the backend holds them
(api.Simulation.agents: no copy, no reordering); the order of agents does not matter to sums of
integers.
"""

from __future__ import annotations

from fractions import Fraction
from functools import lru_cache

import numpy as np
import torch

from ...kernels.api import FRAC_BITS, UNIT_BITS
from ...kernels.exact import decimal_cos_sin, unit_circle
from ..preset import Palette, Preset
from ..sim.simulation import simulation_maps

LAYERS = ("trail", "density", "heading", "mix")
MIX_DEFAULT = 0.5
HEADING_BINS = 252  # 63 a quadrant; indices 1 .. 252, 0 for none, 253 .. 255 unused (black)
QUADRANT_BINS = HEADING_BINS // 4
UNIT16 = 16  # fixed point of the heading layer's unit vectors and sector boundaries


def layer_of(preset: Preset) -> str:
    return preset.palette.layer


def needs_agents(presets) -> bool:
    """Whether any of these presets colours a layer read from the agents."""
    return any(layer_of(p) != "trail" for p in presets)


def _round16(value: int) -> int:
    """value / 2 ** (UNIT_BITS - UNIT16) rounded half even, in integers (odd-symmetric)."""
    shift = UNIT_BITS - UNIT16
    quotient, rest = divmod(value, 1 << shift)
    half = 1 << (shift - 1)
    return quotient + (rest > half or (rest == half and quotient % 2 == 1))


@lru_cache(maxsize=1)
def unit_vectors() -> np.ndarray:
    """[HEADINGS, 2] int64 (cos, sin) of each heading at UNIT16 fixed point (exactly symmetric)."""
    return np.array([(_round16(c), _round16(s)) for c, s in unit_circle()], dtype=np.int64)


@lru_cache(maxsize=1)
def sector_bounds() -> np.ndarray:
    """[QUADRANT_BINS - 1, 2] int64: (cos, sin) of j / HEADING_BINS turns, j = 1 .. 62, at UNIT16
    fixed point, rounded half even from Decimal sums (platform independent)."""
    scale = 1 << UNIT16
    rows = []
    for j in range(1, QUADRANT_BINS):
        cos, sin = decimal_cos_sin(Fraction(j, HEADING_BINS))
        rows.append([int((cos * scale).to_integral_value()), int((sin * scale).to_integral_value())])
    return np.array(rows, dtype=np.int64)


def agent_cells(position: torch.Tensor, width: int) -> torch.Tensor:
    """[N] int64 cell index y * W + x of each agent (position [2, N] int32 16.16)."""
    cells = position >> FRAC_BITS
    return cells[1].to(torch.int64) * width + cells[0].to(torch.int64)


def density_counts(position: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """[H, W] int64 agents per cell, counted on the positions' device (exact)."""
    cells = agent_cells(position, width)
    counts = torch.zeros(height * width, dtype=torch.int64, device=position.device)
    counts.index_add_(0, cells, torch.ones_like(cells))
    return counts.reshape(height, width)


def heading_sums(position: torch.Tensor, heading: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """[2, H, W] int64: the sums of the UNIT16 unit vectors (x, y) of each cell's agents."""
    cells = agent_cells(position, width)
    vectors = torch.from_numpy(unit_vectors()).to(position.device)[heading.to(torch.int64)]
    sums = torch.zeros((2, height * width), dtype=torch.int64, device=position.device)
    sums[0].index_add_(0, cells, vectors[:, 0].contiguous())
    sums[1].index_add_(0, cells, vectors[:, 1].contiguous())
    return sums.reshape(2, height, width)


def heading_bins(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """uint8 index of vectors (x, y) int64: 0 for (0, 0), else 1 + the sector, 0 .. 251.

    The vector is rotated by quarter turns (exact) into the quadrant x > 0, y >= 0, quadrant q
    counted anticlockwise; its sector there is the number of bounds b (sector_bounds) it lies at
    or anticlockwise of: b.x * y - b.y * x >= 0 (no overflow: at most MAX_AGENTS = 2 ** 28 agents
    a cell keep |x|, |y| <= 2 ** 44, and bounds are at most 2 ** 16, so products stay below 2 ** 61)."""
    q1 = (x <= 0) & (y > 0)
    q2 = (x < 0) & (y <= 0)
    q3 = (x >= 0) & (y < 0)
    rx = torch.where(q1, y, torch.where(q2, -x, torch.where(q3, -y, x)))
    ry = torch.where(q1, -x, torch.where(q2, -y, torch.where(q3, x, y)))
    quadrant = q1.to(torch.int64) + 2 * q2.to(torch.int64) + 3 * q3.to(torch.int64)
    sector = sector_count(rx, ry)
    index = 1 + quadrant * QUADRANT_BINS + sector
    return torch.where((x == 0) & (y == 0), torch.zeros_like(index), index).to(torch.uint8)


def sector_count(rx: torch.Tensor, ry: torch.Tensor) -> torch.Tensor:
    """int64 number of sector_bounds b with b.x * ry - b.y * rx >= 0, for vectors in the quadrant
    x > 0, y >= 0. The bounds' angles rise, so the bounds counted are the first ones: a binary
    search of six integer comparisons, the same count as comparing with all 62."""
    table = sector_bounds()
    last = len(table)
    # bounds 1 .. 62 at their own index, 0 and 63 unused (63 is never taken: candidate <= last)
    padded = np.zeros((last + 2, 2), dtype=np.int64)
    padded[1 : last + 1] = table
    bx, by = (torch.from_numpy(padded[:, i].copy()).to(rx.device) for i in (0, 1))
    sector = torch.zeros_like(rx)
    for bit in (32, 16, 8, 4, 2, 1):
        candidate = sector + bit
        ahead = (bx[candidate] * ry - by[candidate] * rx >= 0) & (candidate <= last)
        sector = torch.where(ahead, candidate, sector)
    return sector


def hue_table() -> np.ndarray:
    """[256, 3] uint8: index 0 (and 253 .. 255) black; 1 + k the hue k / HEADING_BINS of a turn
    at full saturation and value, in integers: six ramps of 42 steps, r g b = 255 or
    255 * i // 42."""
    table = np.zeros((256, 3), dtype=np.int64)
    per = HEADING_BINS // 6
    for k in range(HEADING_BINS):
        segment, i = divmod(k, per)
        up, down = 255 * i // per, 255 - 255 * i // per
        table[1 + k] = [
            (255, up, 0),
            (down, 255, 0),
            (0, 255, up),
            (0, down, 255),
            (up, 0, 255),
            (255, 0, down),
        ][segment]
    return table.astype(np.uint8)


def mix_weight(palette: Palette) -> int:
    """w of a mix layer: round(256 * layer_mix), on the host (Python's round, everywhere the same)."""
    share = MIX_DEFAULT if palette.layer_mix is None else palette.layer_mix
    return round(256 * share)


def layer_map(preset: Preset, trail: torch.Tensor, agents, b: int) -> torch.Tensor:
    """What colours simulation b of a batch: simulation_maps' trail (layer trail), or the
    float32 [H, W] map of its layer from `agents` (the simulation's api.Simulation.agents: sums
    over cells, the same whatever order the agents are in)."""
    layer = layer_of(preset)
    if layer == "trail":
        return simulation_maps(preset, trail, b)
    height, width = preset.canvas.height, preset.canvas.width
    position, heading = agents
    if layer in ("density", "mix"):
        density = density_counts(position[b], height, width).to(torch.float32)
        return density if layer == "density" else torch.stack([trail[b], density])
    sums = heading_sums(position[b], heading[b], height, width)
    return heading_bins(sums[0], sums[1]).to(torch.float32)
