"""Triton kernels of one 3D step (docs/model.md section 13) and their launchers: two launches a
step, like 2D (kernels/triton_kernels.py).

1. ``_agent3d_kernel``: per agent, the five sensor gathers, the steering rule
   (reference3d.choose_sensor), the move with its boundary, and one int32 atomic add to the
   agent's cell (one per cell per warp on sorted agents, NVIDIA only).
2. ``_diffuse3d_kernel``: a tile of columns marched along z, T' = T + deposit * count
   recomputed for each of the 9 cells of each plane sum, which is kept for the three slices that
   use it: the reference's nested order (rows along x, then y, then z), decay and the flush; it writes the other trail buffer, zeroes the next count buffer and increments the
   step counter on the device.

Operation for operation the reference (kernels/reference3d.py), FMA contraction off, so the bits
are the same. Offsets within one simulation are int32 (a side is at most limits.MAX_SIDE_3D, so
a volume has fewer than 2^31 cells); each program's group offset is int64.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .api import BOUNDARIES, FRAC_BITS, TRAIL_FLOOR
from .exact3d import AROUND, DIRECTIONS, SENSORS, Tables3D
from .triton_agent_phases import _edge, _lowbias32, count_cell
from .triton_kernels import MAX_GRID_YZ, _neighbour, launch_options

_FRAC_BITS = tl.constexpr(FRAC_BITS)
_TRAIL_FLOOR = tl.constexpr(TRAIL_FLOOR)
_DIRECTIONS = tl.constexpr(DIRECTIONS)
_SENSORS = tl.constexpr(SENSORS)
assert AROUND == 4, "the agent kernel reads the cone's four sensors by name"

# Tuning constants (none changes a result), measured with the harness's case tune-3d on an H200 at
# 256^3 with 16M agents: agent blocks of 256 (0.36 ms a launch against 0.41 for 1024), diffuse
# tiles of one 256-wide row (0.13 ms against 0.23 for 4 x 128; 8 x 64 0.33); 8 or 32 slices a
# program within 4% of 16; without warp-merged deposits the agent launch takes 1.38 ms.
AGENT_BLOCK = 256  # agents per program
AGENT_WARPS = 4
DIFFUSE_BLOCK_H = 1  # rows per diffuse tile
DIFFUSE_BLOCK_W = 256  # columns per diffuse tile
DIFFUSE_BLOCK_Z = 16  # slices one diffuse program marches through
DIFFUSE_WARPS = 4
WARP_AGGREGATED_DEPOSITS = True  # as in 2D: only on sorted agents, NVIDIA PTX only


@triton.jit
def _read(trail_ptr, sense_ptr, d, k, x, y, z, mask, depth, height, width, BOUNDARY: tl.constexpr):
    """T_t at the cell of sensor k of agents at 16.16 (x, y, z) facing d: the offset's
    (dx, dy) and (dz, 0) read as two int64 pairs (dx, dz the low halves)."""
    base = (d * _SENSORS + k) * 2
    first = tl.load(sense_ptr + base, mask=mask, other=0)
    second = tl.load(sense_ptr + base + 1, mask=mask, other=0)
    cx = _edge((x + first.to(tl.int32)) >> _FRAC_BITS, width, BOUNDARY)
    cy = _edge((y + (first >> 32).to(tl.int32)) >> _FRAC_BITS, height, BOUNDARY)
    cz = _edge((z + second.to(tl.int32)) >> _FRAC_BITS, depth, BOUNDARY)
    return tl.load(trail_ptr + (cz * height + cy) * width + cx, mask=mask, other=0.0)


@triton.jit
def _choose(forward, s1, s2, s3, s4, bits):
    """reference3d.choose_sensor: 0 keeps, else the cone sensor 1 .. 4 to turn toward."""
    strongest = tl.maximum(tl.maximum(s1, s2), tl.maximum(s3, s4))
    weakest = tl.minimum(tl.minimum(s1, s2), tl.minimum(s3, s4))
    keep = (forward > strongest) | ((forward == strongest) & (forward == weakest))
    random = forward < weakest
    c1 = (random | (s1 == strongest)).to(tl.int32)
    c2 = (random | (s2 == strongest)).to(tl.int32)
    c3 = (random | (s3 == strongest)).to(tl.int32)
    c4 = (random | (s4 == strongest)).to(tl.int32)
    pick = ((bits >> 16).to(tl.int32) * (c1 + c2 + c3 + c4)) >> 16
    chosen = tl.where(
        (c1 == 1) & (pick == 0),
        1,
        tl.where((c2 == 1) & (pick == c1), 2, tl.where((c3 == 1) & (pick == c1 + c2), 3, 4)),
    )
    return tl.where(keep, 0, chosen)


@triton.jit
def _agent3d_kernel(
    position_ptr,  # [B, 3, N] int32 16.16 (rows x, y, z); updated in place
    heading_ptr,  # [B, N] int16 direction index; updated in place
    agent_id_ptr,  # [B, N] int32 spawn-order index of each lane's agent (None: the lane's own)
    trail_ptr,  # [B, Z, Y, X] float32 T_t
    counts_ptr,  # [B, Z, Y, X] int32, zero on entry
    step_ptr,  # [] int64 steps taken
    sense_ptr,  # [B, DIRECTIONS, SENSORS, 2] int64 pairs of int32 offsets
    turn_ptr,  # [B, DIRECTIONS, SENSORS] int16
    step_offset_ptr,  # [B, DIRECTIONS, 2] int64 pairs
    mirror_ptr,  # [DIRECTIONS, 4] int16
    seed_key_ptr,  # [B] int64
    agents,
    depth,
    height,
    width,
    BLOCK: tl.constexpr,
    WARP_AGGREGATED: tl.constexpr,
    BOUNDARY: tl.constexpr,  # 0 wrap, 1 reflect, 2 clamp
):
    batch = tl.program_id(1).to(tl.int64)
    lane = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = lane < agents
    x_ptr = position_ptr + batch * 3 * agents + lane
    heading_ptr += batch * agents
    volume = depth * height * width
    trail_ptr += batch * volume
    counts_ptr += batch * volume
    sense_ptr += batch * (_DIRECTIONS * _SENSORS * 2)
    turn_ptr += batch * (_DIRECTIONS * _SENSORS)
    step_offset_ptr += batch * (_DIRECTIONS * 2)
    if agent_id_ptr is None:
        agent = lane
    else:
        agent = tl.load(agent_id_ptr + batch * agents + lane, mask=mask, other=0)
    x = tl.load(x_ptr, mask=mask, other=0)
    y = tl.load(x_ptr + agents, mask=mask, other=0)
    z = tl.load(x_ptr + 2 * agents, mask=mask, other=0)
    d = tl.load(heading_ptr + lane, mask=mask, other=0).to(tl.int32)

    forward = _read(trail_ptr, sense_ptr, d, 0, x, y, z, mask, depth, height, width, BOUNDARY)
    s1 = _read(trail_ptr, sense_ptr, d, 1, x, y, z, mask, depth, height, width, BOUNDARY)
    s2 = _read(trail_ptr, sense_ptr, d, 2, x, y, z, mask, depth, height, width, BOUNDARY)
    s3 = _read(trail_ptr, sense_ptr, d, 3, x, y, z, mask, depth, height, width, BOUNDARY)
    s4 = _read(trail_ptr, sense_ptr, d, 4, x, y, z, mask, depth, height, width, BOUNDARY)
    seed_key = tl.load(seed_key_ptr + batch)
    key = _lowbias32(seed_key.to(tl.uint32) ^ _lowbias32(tl.load(step_ptr).to(tl.uint32)))
    bits = _lowbias32(agent.to(tl.uint32) ^ key)
    sensor = _choose(forward, s1, s2, s3, s4, bits)
    d = tl.load(turn_ptr + d * _SENSORS + sensor, mask=mask, other=0).to(tl.int32)

    first = tl.load(step_offset_ptr + d * 2, mask=mask, other=0)
    second = tl.load(step_offset_ptr + d * 2 + 1, mask=mask, other=0)
    mx = x + first.to(tl.int32)
    my = y + (first >> 32).to(tl.int32)
    mz = z + second.to(tl.int32)
    size_x, size_y, size_z = width << _FRAC_BITS, height << _FRAC_BITS, depth << _FRAC_BITS
    if BOUNDARY == 1:
        d = tl.where(
            (mx < 0) | (mx >= size_x), tl.load(mirror_ptr + d * 4, mask=mask, other=0).to(tl.int32), d
        )
        d = tl.where(
            (my < 0) | (my >= size_y), tl.load(mirror_ptr + d * 4 + 1, mask=mask, other=0).to(tl.int32), d
        )
        d = tl.where(
            (mz < 0) | (mz >= size_z), tl.load(mirror_ptr + d * 4 + 2, mask=mask, other=0).to(tl.int32), d
        )
    mx = _edge(mx, size_x, BOUNDARY)
    my = _edge(my, size_y, BOUNDARY)
    mz = _edge(mz, size_z, BOUNDARY)
    tl.store(x_ptr, mx, mask=mask)
    tl.store(x_ptr + agents, my, mask=mask)
    tl.store(x_ptr + 2 * agents, mz, mask=mask)
    tl.store(heading_ptr + lane, d.to(tl.int16), mask=mask)
    cell = ((mz >> _FRAC_BITS) * height + (my >> _FRAC_BITS)) * width + (mx >> _FRAC_BITS)
    count_cell(counts_ptr, cell, lane, mask, WARP_AGGREGATED)


@triton.jit
def _deposited(trail_ptr, counts_ptr, index, mask, deposit):
    """T' = T + deposit * float32(count) at flat int32 indices."""
    trail = tl.load(trail_ptr + index, mask=mask, other=0.0)
    count = tl.load(counts_ptr + index, mask=mask, other=0)
    return trail + deposit * count.to(tl.float32)


@triton.jit
def _row(trail_ptr, counts_ptr, start, left, column, right, mask, deposit):
    """The row sum (T'[x-1] + T'[x]) + T'[x+1] of rows starting at `start`, and T'[x]."""
    centre = _deposited(trail_ptr, counts_ptr, start[:, None] + column[None, :], mask, deposit)
    total = _deposited(trail_ptr, counts_ptr, start[:, None] + left[None, :], mask, deposit) + centre
    total += _deposited(trail_ptr, counts_ptr, start[:, None] + right[None, :], mask, deposit)
    return total, centre


@triton.jit
def _plane(trail_ptr, counts_ptr, plane, up, row, down, width, left, column, right, mask, deposit):
    """The plane sum (row[y-1] + row[y]) + row[y+1] in plane `plane` (its first row index), and
    the centre T' of its middle row."""
    total, _ = _row(trail_ptr, counts_ptr, (plane + up) * width, left, column, right, mask, deposit)
    middle, centre = _row(trail_ptr, counts_ptr, (plane + row) * width, left, column, right, mask, deposit)
    total += middle
    below, _ = _row(trail_ptr, counts_ptr, (plane + down) * width, left, column, right, mask, deposit)
    total += below
    return total, centre


@triton.jit
def _diffuse3d_kernel(
    trail_ptr,  # [B, Z, Y, X] float32 T_t
    counts_ptr,  # [B, Z, Y, X] int32 this step's counts
    next_counts_ptr,  # zeroed here if CLEAR_NEXT
    next_trail_ptr,  # T_{t+1}
    step_ptr,  # [] int64, incremented by program (0, 0, 0)
    deposit_ptr,
    keep_ptr,
    spread_ptr,
    retain_ptr,
    depth,
    height,
    width,
    chunks,  # z-chunks per simulation: program_id(2) = b * chunks + chunk
    BLOCK_H: tl.constexpr,
    BLOCK_W: tl.constexpr,
    BLOCK_Z: tl.constexpr,  # slices marched by one program
    CLEAR_NEXT: tl.constexpr,
    BOUNDARY: tl.constexpr,  # 0 wrap; reflect and clamp repeat the edge cell
):
    """A tile of BLOCK_H x BLOCK_W columns marched through BLOCK_Z slices: each plane sum p(z)
    is computed once and kept for the three outputs that use it (S = (p(z-1) + p(z)) + p(z+1):
    the same values in the same order as the reference, a third of the loads)."""
    batch = (tl.program_id(2) // chunks).to(tl.int64)
    first = (tl.program_id(2) % chunks) * BLOCK_Z
    column = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    row = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    tile = (row[:, None] < height) & (column[None, :] < width)
    left = _neighbour(column, width, -1, BOUNDARY)
    right = _neighbour(column, width, 1, BOUNDARY)
    up = _neighbour(row, height, -1, BOUNDARY)
    down = _neighbour(row, height, 1, BOUNDARY)
    volume = batch * depth * height * width
    trail_ptr += volume
    counts_ptr += volume
    next_counts_ptr += volume
    next_trail_ptr += volume
    deposit = tl.load(deposit_ptr + batch)
    keep = tl.load(keep_ptr + batch)
    spread = tl.load(spread_ptr + batch)
    retain = tl.load(retain_ptr + batch)

    before = _neighbour(first, depth, -1, BOUNDARY)
    previous, _ = _plane(
        trail_ptr, counts_ptr, before * height, up, row, down, width, left, column, right, tile, deposit
    )
    current, centre = _plane(
        trail_ptr, counts_ptr, first * height, up, row, down, width, left, column, right, tile, deposit
    )
    for i in range(BLOCK_Z):
        z = first + i
        mask = tile & ((row * 0 + z) < depth)[:, None]  # a block, as the interpreter's loads want
        after = _neighbour(z, depth, 1, BOUNDARY)
        following, next_centre = _plane(
            trail_ptr, counts_ptr, after * height, up, row, down, width, left, column, right, mask, deposit
        )
        total = previous + current
        total += following
        updated = retain * (keep * centre + spread * total)
        updated = tl.where(updated < _TRAIL_FLOOR, 0.0, updated)
        index = (z * height + row)[:, None] * width + column[None, :]
        tl.store(next_trail_ptr + index, updated, mask=mask)
        if CLEAR_NEXT:
            tl.store(next_counts_ptr + index, tl.zeros([BLOCK_H, BLOCK_W], tl.int32), mask=mask)
        previous, current, centre = current, following, next_centre
    if (tl.program_id(0) == 0) & (tl.program_id(1) == 0) & (tl.program_id(2) == 0):
        tl.store(step_ptr, tl.load(step_ptr) + 1)


def move_agents3d(position, heading, agent_id, trail, counts, step, tables: Tables3D, boundary: str) -> None:
    """Sense, steer, move and count every agent, in place (shapes as in _agent3d_kernel)."""
    batch, depth, height, width = trail.shape
    agents = heading.shape[1]
    if agents == 0:
        return
    aggregated = (
        WARP_AGGREGATED_DEPOSITS and agent_id is not None and trail.is_cuda and torch.version.hip is None
    )
    _agent3d_kernel[(triton.cdiv(agents, AGENT_BLOCK), batch)](
        position,
        heading,
        agent_id,
        trail,
        counts,
        step,
        tables.sense_offset.view(torch.int64),
        tables.turn_to,
        tables.step_offset.view(torch.int64),
        tables.mirror,
        tables.seed_key,
        agents,
        depth,
        height,
        width,
        BLOCK=AGENT_BLOCK,
        WARP_AGGREGATED=aggregated,
        BOUNDARY=BOUNDARIES.index(boundary),
        **launch_options(AGENT_WARPS),
    )


def diffuse3d(trail, counts, next_counts, next_trail, step, tables: Tables3D, boundary: str) -> None:
    """next_trail = T_{t+1}; zero next_counts (or, one buffer given twice, a memset after); step += 1."""
    batch, depth, height, width = trail.shape
    single = counts.data_ptr() == next_counts.data_ptr()
    block_w = min(DIFFUSE_BLOCK_W, triton.next_power_of_2(width))
    block_h = min(DIFFUSE_BLOCK_H * (DIFFUSE_BLOCK_W // block_w), triton.next_power_of_2(height))
    block_z = min(DIFFUSE_BLOCK_Z, depth)
    chunks = triton.cdiv(depth, block_z)
    if batch * chunks > MAX_GRID_YZ:
        raise ValueError(f"at most {MAX_GRID_YZ} z-chunks in a batch, got {batch} x {chunks}")
    grid = (triton.cdiv(width, block_w), triton.cdiv(height, block_h), batch * chunks)
    _diffuse3d_kernel[grid](
        trail,
        counts,
        next_counts,
        next_trail,
        step,
        tables.deposit,
        tables.keep,
        tables.spread,
        tables.retain,
        depth,
        height,
        width,
        chunks,
        BLOCK_H=block_h,
        BLOCK_W=block_w,
        BLOCK_Z=block_z,
        CLEAR_NEXT=not single,
        BOUNDARY=BOUNDARIES.index(boundary),
        **launch_options(DIFFUSE_WARPS),
    )
    if single:
        counts.zero_()
