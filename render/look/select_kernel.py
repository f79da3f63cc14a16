"""The k-th smallest element of a float32 map on a GPU by radix select, as Triton kernels: the same
element torch.kthvalue finds (an order statistic is one value, however it is found), in less
time than torch.topk's select (render/look/select.py chooses between them).

Each float is mapped to a 32-bit key whose unsigned order is the floats' order (its sign bit set
for x >= 0, every bit flipped for x < 0; -0.0 counts as +0.0). Four passes over the map each count
one 8-bit digit of the keys (most significant first) among the elements whose higher digits are
those chosen so far: a program counts its share of the map in registers (tl.histogram) and adds
its 256 counts to the pass's with one atomic add each. Between passes, torch ops on the device
pick the digit whose cumulative count reaches the rank and take the elements below it off the
rank, so nothing waits for the host. The chosen key is mapped back to its float.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

BLOCK = 2048  # elements a program counts at once
PROGRAMS_PER_SM = 4  # programs of a pass, each counting one contiguous share of the map
DIGIT_BITS = 8
BINS = 1 << DIGIT_BITS


@triton.jit
def _digit_counts_kernel(
    values_ptr, cells, share, chosen_ptr, counts_ptr, SHIFT: tl.constexpr, BLOCK: tl.constexpr
):
    """counts[d] += the elements of this program's share whose key's digit at SHIFT is d and whose
    higher digits are the key bits chosen so far (chosen_ptr, int64; every element at SHIFT 24)."""
    first = tl.program_id(0).to(tl.int64) * share
    chosen = tl.load(chosen_ptr)
    lanes = tl.arange(0, BLOCK)
    counts = tl.zeros([256], tl.int32)
    for offset in range(0, share, BLOCK):
        index = first + offset + lanes
        inside = index < cells
        bits = (tl.load(values_ptr + index, mask=inside, other=0.0) + 0.0).to(tl.uint32, bitcast=True)
        key = bits ^ tl.where((bits >> 31) == 1, 0xFFFFFFFF, 0x80000000).to(tl.uint32)
        if SHIFT == 24:
            match = inside
        else:
            match = inside & ((key >> (SHIFT + 8)).to(tl.int64) == chosen)
        digit = tl.where(match, (key >> SHIFT) & 255, 0).to(tl.int32)
        unmatched = BLOCK - tl.sum(match.to(tl.int32), axis=0)
        counts += tl.histogram(digit, 256) - tl.where(tl.arange(0, 256) == 0, unmatched, 0)
    tl.atomic_add(counts_ptr + tl.arange(0, 256), counts)


def kth_smallest(values: torch.Tensor, k: int) -> torch.Tensor:
    """[] float32 on the values' device: the k-th smallest (1-based) of `values` (float32, no
    NaN, 1 <= k <= values.numel()), with no host synchronisation."""
    flat = values.reshape(-1)
    cells = flat.numel()
    device = flat.device
    programs = max(1, min(triton.cdiv(cells, BLOCK), _processors(device) * PROGRAMS_PER_SM))
    share = triton.cdiv(triton.cdiv(cells, programs), BLOCK) * BLOCK
    programs = triton.cdiv(cells, share)
    counts = torch.empty(BINS, dtype=torch.int32, device=device)
    chosen = torch.zeros((), dtype=torch.int64, device=device)
    rank = torch.full((), k, dtype=torch.int64, device=device)
    for shift in range(32 - DIGIT_BITS, -1, -DIGIT_BITS):
        counts.zero_()
        _digit_counts_kernel[(programs,)](flat, cells, share, chosen, counts, SHIFT=shift, BLOCK=BLOCK)
        through = torch.cumsum(counts.to(torch.int64), 0)
        digit = (through < rank).sum()  # the first digit whose cumulative count reaches the rank
        rank = rank - (through - counts)[digit]
        chosen = chosen * BINS + digit
    bits = torch.where(chosen >= 1 << 31, chosen - (1 << 31), (1 << 32) - 1 - chosen)
    return torch.where(bits >= 1 << 31, bits - (1 << 32), bits).to(torch.int32).view(torch.float32)


def _processors(device: torch.device) -> int:
    """Streaming multiprocessors of a CUDA device (a few elsewhere: the interpreter)."""
    if device.type != "cuda":
        return 2
    return torch.cuda.get_device_properties(device).multi_processor_count
