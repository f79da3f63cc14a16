"""The reference's cell arithmetic: int32 positions and cells brought onto a canvas by its
boundary (wrap, reflect, clamp), and flat cell indices, in whole-tensor operations.

Every shortcut is exact: on power-of-two canvases wrapping is a mask, elsewhere two sign-bit
corrections; 16.16 values and cells of one simulation always fit int32 (api.MAX_CANVAS).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .api import FRAC_BITS


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def wrap_(value: torch.Tensor, size: int | torch.Tensor) -> torch.Tensor:
    """Wrap int32 values in (-size, 2 * size) into [0, size) in place, as
    `if v < 0: v += size; if v >= size: v -= size` does.

    (v >> 31) is -1 exactly where v < 0, so v + ((v >> 31) & size) is the first correction; the
    second subtracts size and adds it back where that went negative. `size` may be a tensor
    that broadcasts against `value`.
    """
    value += (value >> 31) & size
    value -= size
    value += (value >> 31) & size
    return value


def reflect(value: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """Mirror int32 values in (-size, 2 * size) into [0, size) at the edges: v < 0 gives -1 - v,
    v >= size gives (size - 1) - (v - size) (never 2 * size - 1 - v, which overflows int32 on
    the largest canvases in 16.16). The same rule serves cells and 16.16 positions."""
    low = torch.bitwise_not(value)
    high = (size - 1) - (value - size)
    return torch.where(value < 0, low, torch.where(value >= size, high, value))


def clamp(value: torch.Tensor, size: torch.Tensor) -> torch.Tensor:
    """Hold int32 values at the edges of [0, size): cells and 16.16 positions alike."""
    return torch.minimum(value.clamp_(min=0), size - 1)


def _pair(x: int, y: int, device) -> torch.Tensor:
    """[1, 2, 1] int32 constants, one for the x row and one for the y row of a [B, 2, N] pair."""
    return torch.tensor([[[x], [y]]], dtype=torch.int32, device=device)


@dataclass
class Grid:
    """Cell arithmetic of one canvas on int32 [B, 2, ...] pairs (x row, y row) of 16.16 values.

    On a canvas whose sides are powers of two, wrapping is a mask (two's complement: v & (n - 1)
    is v mod n for every v), and (y_cell mod H) * W is one shift and one mask: y >> (16 - log2 W)
    is (y >> 16) * W plus the top log2 W fractional bits, which the mask clears along with
    everything above the cell. Other canvases use wrap_ and a multiply-add.
    """

    width: int
    sizes: torch.Tensor  # [1, 2, 1]: W, H
    shifts: torch.Tensor | None  # [1, 2, 1]: 16, 16 - log2 W, if W is a power of two
    masks: torch.Tensor | None  # [1, 2, 1]: W - 1, (H - 1) << log2 W, if W and H are (and wrap)
    boundary: str = "wrap"

    @staticmethod
    def build(height: int, width: int, device, boundary: str = "wrap") -> Grid:
        log_w = width.bit_length() - 1
        shifts = _pair(FRAC_BITS, FRAC_BITS - log_w, device) if _power_of_two(width) else None
        masks = (
            _pair(width - 1, (height - 1) << log_w, device)
            if _power_of_two(width) and _power_of_two(height) and boundary == "wrap"
            else None
        )
        return Grid(width, _pair(width, height, device), shifts, masks, boundary)

    def wrapped_cells_(self, xy: torch.Tensor) -> torch.Tensor:
        """Flat cell (y_cell * W + x_cell) [B, ...] of 16.16 pairs xy [B, 2, ...] whose cells lie
        in (-W, 2W) x (-H, 2H), brought onto the canvas by the boundary. Overwrites xy."""
        rows = (1, 2) + (1,) * (xy.dim() - 2)
        if self.masks is not None:
            xy >>= self.shifts.view(rows)
            xy &= self.masks.view(rows)
            xy[:, 1] += xy[:, 0]
            return xy[:, 1]
        xy >>= FRAC_BITS
        if self.boundary == "wrap":
            wrap_(xy, self.sizes.view(rows))
        elif self.boundary == "reflect":
            xy = reflect(xy, self.sizes.view(rows))
        else:
            xy = clamp(xy, self.sizes.view(rows))
        return torch.add(xy[:, 0], xy[:, 1], alpha=self.width)  # integer: exact

    def cells(self, position: torch.Tensor) -> torch.Tensor:
        """Flat cell [B, N] of positions [B, 2, N] on the canvas (no wrap needed)."""
        if self.shifts is not None:
            xy = position >> self.shifts
            xy[:, 1] &= -self.width  # clears the fractional bits below the cell row
            return xy[:, 0] + xy[:, 1]
        xy = position >> FRAC_BITS
        return torch.add(xy[:, 0], xy[:, 1], alpha=self.width)

    def wrapped_positions_(self, position: torch.Tensor) -> torch.Tensor:
        """16.16 positions [B, 2, N] in (-size, 2 * size) wrapped onto the canvas, in place."""
        if self.masks is not None:  # (n << 16) - 1: the mask n - 1 and 16 fractional bits
            return position.bitwise_and_((self.sizes << FRAC_BITS) - 1)
        return wrap_(position, self.sizes << FRAC_BITS)


def batch_offsets(batch: int, stride: int, device) -> torch.Tensor | None:
    """[B, 1, 1] start of each simulation in a flat batch of `stride` elements each (None for
    B = 1); int32 when the whole batch fits, else int64 (sums with it are then int64)."""
    if batch == 1:
        return None
    dtype = torch.int32 if batch * stride < 2**31 else torch.int64
    return (torch.arange(batch, device=device, dtype=dtype) * stride)[:, None, None]
