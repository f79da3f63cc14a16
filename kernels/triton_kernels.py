"""Triton kernels of one simulation step and their launchers: two launches per step.

1. ``_agent_kernel``: per agent, sense (three trail gathers), steer, move, write position and
   heading, and add 1 to the agent's cell in an int32 count map (relaxed atomics; integer sums
   do not depend on order).
2. ``_diffuse_kernel``: per cell, T' = T + deposit * count over the 3x3 wrap-around
   neighbourhood, the nine-neighbour sum in the reference's order, decay, the subnormal flush;
   it writes the other trail buffer, zeroes the other count buffer (the next step's) and
   increments the step counter on the device.

Both follow kernels/reference.py operation for operation, in float32 mul and add only, and are
launched with FMA contraction off, so their results are bit-identical to the reference
(kernels/api.py states the contract). Callers never see grids, strides or block sizes.

Index arithmetic that can exceed 2^31 (flat cell and agent indices of a batch, e.g. 256M agents
on 16384^2) is done in int64; in-canvas coordinates and 16.16 positions stay int32, which
api.MAX_CANVAS and api.MAX_DISTANCE keep in range.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from physarum.kernels.api import FRAC_BITS, HEADING_MASK, HEADINGS, TRAIL_FLOOR, Tables

# Model constants as compile-time values the kernels can read.
_FRAC_BITS = tl.constexpr(FRAC_BITS)
_HEADINGS = tl.constexpr(HEADINGS)
_HEADING_MASK = tl.constexpr(HEADING_MASK)
_TRAIL_FLOOR = tl.constexpr(TRAIL_FLOOR)

# Tuning constants. Not chosen by measurement yet: the conventional 1024 elements and 4 warps per
# program (8 cells per thread in the diffuse tile, rows of 128 cells for coalesced loads).
# Re-tune on the target GPU with `physarum bench` and record the numbers here.
AGENT_BLOCK = 1024  # agents per program of the agent kernel
AGENT_WARPS = 4
DIFFUSE_BLOCK_H = 8  # rows per diffuse tile
DIFFUSE_BLOCK_W = 128  # columns per diffuse tile
DIFFUSE_WARPS = 4

MAX_GRID_YZ = 65535  # CUDA's limit on grid axes 1 and 2 (the batch axis here)


def _launch_options(num_warps: int) -> dict:
    """Launch options shared by every kernel: no FMA contraction, so float results round as in
    the reference (which multiplies and adds in separate operations)."""
    return dict(num_warps=num_warps, enable_fp_fusion=False)


# ---------------------------------------------------------------------------------------------
# Device helpers.


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
def _sense(trail_ptr, map_row, x, y, heading, sense_offset_ptr, table_base, mask, height, width):
    """Trail at the nearest cell one sensor offset ahead of 16.16 (x, y) along `heading`."""
    offset_ptr = sense_offset_ptr + table_base + heading * 2
    dx = tl.load(offset_ptr, mask=mask, other=0)
    dy = tl.load(offset_ptr + 1, mask=mask, other=0)
    cell_x = _wrap((x + dx) >> _FRAC_BITS, width)
    cell_y = _wrap((y + dy) >> _FRAC_BITS, height)
    return tl.load(trail_ptr + (map_row + cell_y) * width + cell_x, mask=mask, other=0.0)


@triton.jit
def _deposited(trail_ptr, counts_ptr, row_start, column, mask, deposit):
    """T' = T + deposit * count on a tile of cells (rows start at row_start, int64)."""
    index = row_start[:, None] + column[None, :]
    trail = tl.load(trail_ptr + index, mask=mask, other=0.0)
    count = tl.load(counts_ptr + index, mask=mask, other=0)
    return trail + deposit * count.to(tl.float32)


# ---------------------------------------------------------------------------------------------
# Kernels.


@triton.jit
def _agent_kernel(
    position_ptr,  # [B, 2, N] int32, 16.16 fixed point (row 0 x, row 1 y); updated in place
    heading_ptr,  # [B, N] int16, heading in [0, HEADINGS); updated in place
    trail_ptr,  # [B, H, W] float32, trail T_t read by the sensors
    counts_ptr,  # [B, H, W] int32, this step's deposit counts; zero on entry
    step_ptr,  # [] int64, steps taken so far (read only here)
    sense_offset_ptr,  # [B, HEADINGS, 2] int32, sensor offset (dx, dy) in 16.16 per heading
    step_offset_ptr,  # [B, HEADINGS, 2] int32, step vector (dx, dy) in 16.16 per heading
    sensor_turn_ptr,  # [B] int32, sensor angle in heading units
    turn_ptr,  # [B] int32, turn angle in heading units
    seed_key_ptr,  # [B] int64, lowbias32(seed), in [0, 2^32)
    agents,  # N, agents per simulation
    height,  # H, canvas rows
    width,  # W, canvas columns
    BLOCK: tl.constexpr,  # agents per program
):
    batch = tl.program_id(1).to(tl.int64)
    agent = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # int32: N < 2^31
    mask = agent < agents
    x_ptr = position_ptr + batch * 2 * agents + agent
    y_ptr = x_ptr + agents
    x = tl.load(x_ptr, mask=mask, other=0)
    y = tl.load(y_ptr, mask=mask, other=0)
    heading = tl.load(heading_ptr + batch * agents + agent, mask=mask, other=0).to(tl.int32)
    table_base = batch * (_HEADINGS * 2)
    map_row = batch * height  # first row of this simulation's maps, int64

    # Sense: forward, left, right on T_t.
    sensor_turn = tl.load(sensor_turn_ptr + batch)
    left_heading = (heading - sensor_turn) & _HEADING_MASK
    right_heading = (heading + sensor_turn) & _HEADING_MASK
    forward = _sense(trail_ptr, map_row, x, y, heading, sense_offset_ptr, table_base, mask,
                     height, width)
    left = _sense(trail_ptr, map_row, x, y, left_heading, sense_offset_ptr, table_base, mask,
                  height, width)
    right = _sense(trail_ptr, map_row, x, y, right_heading, sense_offset_ptr, table_base, mask,
                   height, width)

    # Random turn direction: lowbias32(agent ^ lowbias32(seed_key ^ lowbias32(step))) >> 31.
    step = tl.load(step_ptr).to(tl.uint32)  # truncation: step mod 2^32, as api.step_key
    seed_key = tl.load(seed_key_ptr + batch).to(tl.uint32)
    key = _lowbias32(seed_key ^ _lowbias32(step))
    turn_positive = (_lowbias32(agent.to(tl.uint32) ^ key) >> 31) == 1

    # Steer, with reference.steer's rule and tie-breaking.
    turn = tl.load(turn_ptr + batch)
    random_turn = tl.where(turn_positive, turn, -turn)
    side_turn = tl.where(left > right, -turn, tl.where(right > left, turn, 0))
    change = tl.where((forward < left) & (forward < right), random_turn, side_turn)
    change = tl.where((forward > left) & (forward > right), 0, change)
    heading = (heading + change) & _HEADING_MASK

    # Move and wrap onto the torus.
    step_vector_ptr = step_offset_ptr + table_base + heading * 2
    x = _wrap(x + tl.load(step_vector_ptr, mask=mask, other=0), width << _FRAC_BITS)
    y = _wrap(y + tl.load(step_vector_ptr + 1, mask=mask, other=0), height << _FRAC_BITS)
    tl.store(x_ptr, x, mask=mask)
    tl.store(y_ptr, y, mask=mask)
    tl.store(heading_ptr + batch * agents + agent, heading.to(tl.int16), mask=mask)

    # Deposit: count agents per cell.
    cell = (map_row + (y >> _FRAC_BITS)) * width + (x >> _FRAC_BITS)
    one = tl.full([BLOCK], 1, tl.int32)
    tl.atomic_add(counts_ptr + cell, one, mask=mask, sem="relaxed")


@triton.jit
def _diffuse_kernel(
    trail_ptr,  # [B, H, W] float32, trail T_t (read)
    counts_ptr,  # [B, H, W] int32, this step's deposit counts (read)
    next_counts_ptr,  # [B, H, W] int32, the next step's count buffer (zeroed here)
    next_trail_ptr,  # [B, H, W] float32, trail T_{t+1} (written)
    step_ptr,  # [] int64, steps taken so far; incremented once by program (0, 0, 0)
    deposit_ptr,  # [B] float32, trail added per agent in a cell
    keep_ptr,  # [B] float32, 1 - diffuse
    spread_ptr,  # [B] float32, diffuse / 9
    retain_ptr,  # [B] float32, 1 - decay
    height,  # H, canvas rows
    width,  # W, canvas columns
    BLOCK_H: tl.constexpr,  # rows per tile
    BLOCK_W: tl.constexpr,  # columns per tile
):
    batch = tl.program_id(2).to(tl.int64)
    column = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    row = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (row[:, None] < height) & (column[None, :] < width)
    column_left = tl.where(column == 0, width - 1, column - 1)
    column_right = tl.where(column == width - 1, 0, column + 1)
    row_above = tl.where(row == 0, height - 1, row - 1)
    row_below = tl.where(row == height - 1, 0, row + 1)
    map_row = batch * height
    start_above = (map_row + row_above) * width
    start_here = (map_row + row) * width
    start_below = (map_row + row_below) * width

    deposit = tl.load(deposit_ptr + batch)
    keep = tl.load(keep_ptr + batch)
    spread = tl.load(spread_ptr + batch)
    retain = tl.load(retain_ptr + batch)

    # The nine-neighbour sum in the reference's order: rows dy = -1, 0, 1, within a row
    # dx = -1, 0, 1, accumulated left to right. Float addition is not associative.
    total = _deposited(trail_ptr, counts_ptr, start_above, column_left, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, start_above, column, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, start_above, column_right, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, start_here, column_left, mask, deposit)
    centre = _deposited(trail_ptr, counts_ptr, start_here, column, mask, deposit)
    total += centre
    total += _deposited(trail_ptr, counts_ptr, start_here, column_right, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, start_below, column_left, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, start_below, column, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, start_below, column_right, mask, deposit)

    updated = retain * (keep * centre + spread * total)
    updated = tl.where(updated < _TRAIL_FLOOR, 0.0, updated)
    index = start_here[:, None] + column[None, :]
    tl.store(next_trail_ptr + index, updated, mask=mask)
    tl.store(next_counts_ptr + index, tl.zeros([BLOCK_H, BLOCK_W], tl.int32), mask=mask)

    # No program of this launch reads the counter; the next step's agent kernel does.
    if (tl.program_id(0) == 0) & (tl.program_id(1) == 0) & (tl.program_id(2) == 0):
        tl.store(step_ptr, tl.load(step_ptr) + 1)


# ---------------------------------------------------------------------------------------------
# Launchers. They allocate nothing, so a sequence of them can be captured in a CUDA graph.


def move_agents(position: torch.Tensor, heading: torch.Tensor, trail: torch.Tensor,
                counts: torch.Tensor, step: torch.Tensor, tables: Tables) -> None:
    """Sense, steer, move and count every agent of every simulation, in place.

    position: [B, 2, N] int32 16.16, heading: [B, N] int16 (both updated in place);
    trail: [B, H, W] float32 T_t; counts: [B, H, W] int32, zero on entry, receives the counts;
    step: [] int64 on the device; tables: contiguous, on the same device.
    """
    batch, height, width = trail.shape
    agents = heading.shape[1]
    if agents == 0:
        return
    grid = (triton.cdiv(agents, AGENT_BLOCK), batch)
    _agent_kernel[grid](
        position, heading, trail, counts, step,
        tables.sense_offset, tables.step_offset, tables.sensor_turn, tables.turn, tables.seed_key,
        agents, height, width,
        BLOCK=AGENT_BLOCK, **_launch_options(AGENT_WARPS),
    )


def diffuse_and_decay(trail: torch.Tensor, counts: torch.Tensor, next_counts: torch.Tensor,
                      next_trail: torch.Tensor, step: torch.Tensor, tables: Tables) -> None:
    """Deposit, diffuse and decay: next_trail = T_{t+1}; zero next_counts; step += 1.

    trail, next_trail: [B, H, W] float32 (distinct buffers); counts, next_counts: [B, H, W] int32
    (distinct buffers); step: [] int64 on the device.
    """
    batch, height, width = trail.shape
    grid = (triton.cdiv(width, DIFFUSE_BLOCK_W), triton.cdiv(height, DIFFUSE_BLOCK_H), batch)
    _diffuse_kernel[grid](
        trail, counts, next_counts, next_trail, step,
        tables.deposit, tables.keep, tables.spread, tables.retain,
        height, width,
        BLOCK_H=DIFFUSE_BLOCK_H, BLOCK_W=DIFFUSE_BLOCK_W, **_launch_options(DIFFUSE_WARPS),
    )
