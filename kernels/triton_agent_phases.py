"""The phases of the Triton agent kernel (kernels/triton_kernels.py) as device functions, in
the order it calls them: sense, turn_hash, steer, move (boundary and walls), deposit. Each
follows kernels/reference.py operation for operation (see triton_kernels for the contract).
"""

from __future__ import annotations

import triton
import triton.language as tl

from .api import FRAC_BITS, HEADING_MASK, HEADINGS

# Model constants as compile-time values the kernels can read.
_FRAC_BITS = tl.constexpr(FRAC_BITS)
_HEADINGS = tl.constexpr(HEADINGS)
_HEADING_MASK = tl.constexpr(HEADING_MASK)


@triton.jit
def _lowbias32(x):
    """lowbias32 of a uint32 value or block (multiplication wraps mod 2^32, >> is logical)."""
    x ^= x >> 16
    x *= 0x7FEB352D
    x ^= x >> 15
    x *= 0x846CA68B
    x ^= x >> 16
    return x


@triton.jit
def _wrap(value, size):
    """Wrap int32 values in (-size, 2 * size) into [0, size) with compares, not a modulo."""
    value = tl.where(value < 0, value + size, value)
    return tl.where(value >= size, value - size, value)


@triton.jit
def _edge(value, size, BOUNDARY: tl.constexpr):
    """int32 values in (-size, 2 * size) brought into [0, size) by the boundary (0 wrap,
    1 reflect, 2 clamp), as reference._wrap_, reference._reflect and a clamp do."""
    if BOUNDARY == 0:
        edged = _wrap(value, size)
    elif BOUNDARY == 1:
        edged = tl.where(value < 0, -1 - value, tl.where(value >= size, (size - 1) - (value - size), value))
    else:
        edged = tl.minimum(tl.maximum(value, 0), size - 1)
    return edged


@triton.jit
def _lookup(table_ptr, heading, mask):
    """(dx, dy) int32 at `heading` of one simulation's table, read as int64 pairs: one gather
    of 8 bytes instead of two of 4. dx is the low half (every target is little-endian)."""
    pair = tl.load(table_ptr + heading, mask=mask, other=0)
    return pair.to(tl.int32), (pair >> 32).to(tl.int32)


@triton.jit
def _read_sensor(
    trail_ptr,
    mix_ptr,
    x,
    y,
    heading,
    sense_offset_ptr,
    mask,
    height,
    width,
    SPECIES: tl.constexpr,
    BOUNDARY: tl.constexpr,
):
    """Trail at the nearest cell one sensor offset ahead of 16.16 (x, y) along `heading`;
    sense_offset_ptr points at this group's table, trail_ptr at its own map (one species) or at
    its simulation's first map (several: then the mix_ptr-weighted sum over species, species 0
    first, each product and sum rounded on its own)."""
    dx, dy = _lookup(sense_offset_ptr, heading, mask)
    cell_x = _edge((x + dx) >> _FRAC_BITS, width, BOUNDARY)
    cell_y = _edge((y + dy) >> _FRAC_BITS, height, BOUNDARY)
    cell = cell_y * width + cell_x
    # One return at the end: the compiler (unlike the interpreter) still builds the code after
    # an early return under a constexpr `if`, which here would load through mix_ptr = None.
    if SPECIES == 1:
        reading = tl.load(trail_ptr + cell, mask=mask, other=0.0)
    else:
        reading = tl.load(mix_ptr) * tl.load(trail_ptr + cell, mask=mask, other=0.0)
        for j in tl.static_range(1, SPECIES):
            reading += tl.load(mix_ptr + j) * tl.load(
                trail_ptr + j * height * width + cell, mask=mask, other=0.0
            )
    return reading


@triton.jit
def sense(
    trail_ptr,
    mix_ptr,
    sense_offset_ptr,
    sensor_turn,
    x,
    y,
    heading,
    mask,
    height,
    width,
    SPECIES: tl.constexpr,
    BOUNDARY: tl.constexpr,
):
    """Sense: the trail T_t at the forward, left and right sensors of agents at 16.16 (x, y)
    facing `heading` (left and right at heading -+ sensor_turn), as _read_sensor reads it."""
    left_heading = (heading - sensor_turn) & _HEADING_MASK
    right_heading = (heading + sensor_turn) & _HEADING_MASK
    forward = _read_sensor(
        trail_ptr, mix_ptr, x, y, heading, sense_offset_ptr, mask, height, width, SPECIES, BOUNDARY
    )
    left = _read_sensor(
        trail_ptr, mix_ptr, x, y, left_heading, sense_offset_ptr, mask, height, width, SPECIES, BOUNDARY
    )
    right = _read_sensor(
        trail_ptr, mix_ptr, x, y, right_heading, sense_offset_ptr, mask, height, width, SPECIES, BOUNDARY
    )
    return forward, left, right


@triton.jit
def turn_hash(seed_key, step, agent):
    """lowbias32(agent ^ lowbias32(seed_key ^ lowbias32(step))) in uint32, as exact.turn_bits
    keys it: bit 31 is the random turn (1: turn +), the low 12 bits the heading an agent that
    a wall stops takes. `agent` is the index in spawn order, whatever lane the agent sits in."""
    key = _lowbias32(seed_key.to(tl.uint32) ^ _lowbias32(step.to(tl.uint32)))  # step mod 2^32
    return _lowbias32(agent.to(tl.uint32) ^ key)


@triton.jit
def steer(heading, forward, left, right, bits, turn):
    """Steer: the heading after reference.steer_sign's rule and tie-breaking turned it by
    `turn` heading steps (bits: turn_hash's)."""
    turn_positive = (bits >> 31) == 1
    random_turn = tl.where(turn_positive, turn, -turn)
    side_turn = tl.where(left > right, -turn, tl.where(right > left, turn, 0))
    change = tl.where((forward < left) & (forward < right), random_turn, side_turn)
    change = tl.where((forward > left) & (forward > right), 0, change)
    return (heading + change) & _HEADING_MASK


@triton.jit
def move(x, y, heading, bits, step_offset_ptr, wall_ptr, mask, height, width, BOUNDARY: tl.constexpr):
    """Move: (x, y, heading) one step along `heading`, after the boundary (wrap onto the torus,
    mirror and turn, or stop at the edge) and the walls of wall_ptr's map (None: no walls), where
    a move onto a wall stays put and takes the heading in bits' low 12 bits."""
    step_x, step_y = _lookup(step_offset_ptr, heading, mask)
    moved_x, moved_y = x + step_x, y + step_y
    size_x, size_y = width << _FRAC_BITS, height << _FRAC_BITS
    if BOUNDARY == 1:
        hit_x = (moved_x < 0) | (moved_x >= size_x)
        hit_y = (moved_y < 0) | (moved_y >= size_y)
        heading = tl.where(hit_x, (_HEADINGS // 2 - heading) & _HEADING_MASK, heading)
        heading = tl.where(hit_y, (-heading) & _HEADING_MASK, heading)
    moved_x = _edge(moved_x, size_x, BOUNDARY)
    moved_y = _edge(moved_y, size_y, BOUNDARY)
    if wall_ptr is not None:
        cell = (moved_y >> _FRAC_BITS) * width + (moved_x >> _FRAC_BITS)
        blocked = tl.load(wall_ptr + cell, mask=mask, other=0) != 0
        moved_x = tl.where(blocked, x, moved_x)
        moved_y = tl.where(blocked, y, moved_y)
        heading = tl.where(blocked, (bits & _HEADING_MASK).to(tl.int32), heading)
    return moved_x, moved_y, heading


@triton.jit
def count_cell(counts_ptr, cell, lane, mask, WARP_AGGREGATED: tl.constexpr):
    """Add 1 per agent to the count at `cell` (relaxed int32 atomics: the sums are order-free);
    the 2D and the 3D deposits both end here.

    WARP_AGGREGATED: the lanes of a warp whose agents stand in one cell find each other with
    match.any, and the lowest of them adds their number; the others add nothing.
    """
    if WARP_AGGREGATED:
        group = tl.where(mask, cell, -1 - lane)  # lanes past the end: a group of one each
        count = tl.inline_asm_elementwise(
            asm="""{
            .reg .b32 peers, lower;
            .reg .pred follower;
            match.any.sync.b32 peers, $1, 0xffffffff;
            mov.u32 lower, %lanemask_lt;
            and.b32 lower, peers, lower;
            setp.ne.u32 follower, lower, 0;
            popc.b32 $0, peers;
            @follower mov.u32 $0, 0;
            }""",
            constraints="=r,r",
            args=[group],
            dtype=tl.int32,
            is_pure=True,
            pack=1,
        )
        tl.atomic_add(counts_ptr + cell, count, mask=mask & (count > 0), sem="relaxed")
    else:
        one = tl.full(cell.shape, 1, tl.int32)
        tl.atomic_add(counts_ptr + cell, one, mask=mask, sem="relaxed")


@triton.jit
def deposit(counts_ptr, x, y, lane, mask, width, WARP_AGGREGATED: tl.constexpr):
    """Deposit: add 1 per agent to the count of the cell of its 16.16 (x, y) in this group's map
    (count_cell)."""
    cell = (y >> _FRAC_BITS) * width + (x >> _FRAC_BITS)
    count_cell(counts_ptr, cell, lane, mask, WARP_AGGREGATED)
