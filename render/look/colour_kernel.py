"""A trail's palette indices on a GPU as one Triton kernel: torch.bucketize(trail, bounds,
right=True).to(torch.uint8) for the Colourist's 255 ascending bounds (render/look/colour.py),
the same bytes (tests/test_look_colour_kernel.py), without bucketize's int64 indices (8 bytes a
cell written and read again by the conversion) or its copy: each cell reads its float and writes
its byte. The index of a cell is the number of bounds <= its value, found by a binary search of
eight comparisons over the bounds padded to 256 with NaN (no value is >= NaN, so the pad is never
counted): the comparisons bucketize makes, so the same index for every value, infinities and
signed zeros included.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 1024  # cells a program
WARPS = 4


@triton.jit
def _index_kernel(trail_ptr, bounds_ptr, index_ptr, cells, BLOCK: tl.constexpr):
    offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < cells
    value = tl.load(trail_ptr + offsets, mask=mask, other=0.0)
    below = tl.zeros([BLOCK], tl.int32)  # bounds <= value found so far
    for step in tl.static_range(8):
        half = 128 >> step
        bound = tl.load(bounds_ptr + below + (half - 1))
        below += tl.where(bound <= value, half, 0)
    tl.store(index_ptr + offsets, below.to(tl.uint8), mask=mask)


def palette_indices(trail: torch.Tensor, bounds: torch.Tensor) -> torch.Tensor:
    """uint8 of the trail's shape: torch.bucketize(trail, bounds, right=True) for 255 ascending
    float32 bounds on the trail's device (trail: float32, contiguous or not)."""
    if bounds.numel() != 255:
        raise ValueError(f"expected 255 bounds, got {bounds.numel()}")
    padded = torch.cat([bounds.reshape(-1).to(torch.float32), bounds.new_full((1,), float("nan"))])
    flat = trail.reshape(-1).contiguous()
    index = torch.empty(flat.shape, dtype=torch.uint8, device=flat.device)
    cells = flat.numel()
    if cells:
        _index_kernel[(triton.cdiv(cells, BLOCK),)](flat, padded, index, cells, BLOCK=BLOCK, num_warps=WARPS)
    return index.reshape(trail.shape)
