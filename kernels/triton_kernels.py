"""Triton kernels of one simulation step and their launchers: two launches per step (the
occasional spatial sort of the agents is kernels/triton_sort.py).

1. ``_agent_kernel``: per agent, sense (three trail gathers), steer, move, write position and
   heading, and add 1 to the agent's cell in an int32 count map (relaxed atomics; integer sums
   do not depend on order; on sorted agents, one atomic per cell per warp). Its random turn bit
   hashes the agent's id, not its lane, so agents may be stored in any order.
2. ``_diffuse_kernel``: per cell, T' = T + deposit * count over the 3x3 wrap-around
   neighbourhood, the nine-neighbour sum in the reference's order, decay, the subnormal flush;
   it writes the other trail buffer, zeroes the other count buffer (the next step's) and
   increments the step counter on the device.

The step kernels follow kernels/reference.py operation for operation, in float32 mul and add
only, and are launched with FMA contraction off, so their results are bit-identical to the
reference (kernels/api.py states the contract). Callers never see grids, strides or block sizes.

Index arithmetic that can exceed 2^31 (offsets of a simulation within the batch, e.g. 256M agents
on 16384^2) is done once per program, in int64, on the base pointers; per-lane offsets within one
simulation (agent < N < 2^31, cell < MAX_CANVAS^2 = 2^28) and 16.16 positions stay int32, which
api.MAX_CANVAS and api.MAX_DISTANCE keep in range.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from . import triton_agent_phases as phases
from .api import (
    BOUNDARIES,
    EMPTY_WORLD,
    HEADINGS,
    TRAIL_FLOOR,
    Tables,
    World,
)

# Model constants as compile-time values the kernels can read.
_HEADINGS = tl.constexpr(HEADINGS)
_TRAIL_FLOOR = tl.constexpr(TRAIL_FLOOR)

# Tuning constants: none changes a result. Their timings are in docs/benchmarks.md
# ("Measurements behind the code: kernels"); re-tune with the harness's case tune-batch.
AGENT_BLOCK = 1024  # agents per program of the agent kernel
AGENT_WARPS = 4
# Diffuse tiles of single long rows load whole lines per neighbour.
DIFFUSE_BLOCK_H = 1  # rows per diffuse tile
DIFFUSE_BLOCK_W = 512  # columns per diffuse tile
DIFFUSE_WARPS = 4
# Deposits of lanes of one warp that share a cell go out as one atomic add of their number (PTX
# match.any, NVIDIA only; plain atomics elsewhere and in the interpreter). Only on sorted agents,
# where lanes share cells (on unsorted ones it is a little slower).
WARP_AGGREGATED_DEPOSITS = True

MAX_GRID_YZ = 65535  # CUDA's limit on grid axes 1 and 2 (the batch axis here)

# Warp-aggregated deposits count the lanes holding each element: no element may sit in two
# threads, which a block at least as large as the program's threads guarantees.
assert AGENT_BLOCK % (32 * AGENT_WARPS) == 0


def launch_options(num_warps: int) -> dict:
    """Launch options shared by every kernel: no FMA contraction, so float results round as in
    the reference (which multiplies and adds in separate operations)."""
    return dict(num_warps=num_warps, enable_fp_fusion=False)


# ---------------------------------------------------------------------------------------------
# Device helpers.


@triton.jit
def _deposited(trail_ptr, counts_ptr, food_ptr, row_start, column, mask, deposit):
    """T' = T + deposit * count (+ food, when there is food) on a tile of cells of one group's
    maps (rows start at row_start, int32)."""
    index = row_start[:, None] + column[None, :]
    trail = tl.load(trail_ptr + index, mask=mask, other=0.0)
    count = tl.load(counts_ptr + index, mask=mask, other=0)
    deposited = trail + deposit * count.to(tl.float32)
    if food_ptr is not None:
        deposited += tl.load(food_ptr + index, mask=mask, other=0.0)
    return deposited


@triton.jit
def _neighbour(index, size, STEP: tl.constexpr, BOUNDARY: tl.constexpr):
    """The row or column next to `index` (STEP -1 or +1): wrapping on a torus, else the edge
    cell itself (what reflect and clamp both give one cell past the edge)."""
    if STEP < 0:
        beyond = size - 1 if BOUNDARY == 0 else 0  # past the first: wrap to the last, or stay
        neighbour = tl.where(index == 0, beyond, index - 1)
    else:
        beyond = 0 if BOUNDARY == 0 else size - 1
        neighbour = tl.where(index == size - 1, beyond, index + 1)
    return neighbour


# ---------------------------------------------------------------------------------------------
# Kernels: the agent kernel calls its phases (kernels/triton_agent_phases.py) in order.


@triton.jit
def _agent_kernel(
    position_ptr,  # [B, 2, N] int32, 16.16 fixed point (row 0 x, row 1 y); updated in place
    heading_ptr,  # [B, N] int16, heading in [0, HEADINGS); updated in place
    agent_id_ptr,  # [B, N] int32, each lane's agent (index in spawn order); None: the lane's own
    trail_ptr,  # [B, H, W] float32, trail T_t read by the sensors
    counts_ptr,  # [B, H, W] int32, this step's deposit counts; zero on entry
    step_ptr,  # [] int64, steps taken so far (read only here)
    sense_offset_ptr,  # [B, HEADINGS] int64, sensor offset (dx, dy) per heading, int32 pairs
    step_offset_ptr,  # [B, HEADINGS] int64, step vector (dx, dy) per heading, int32 pairs
    sensor_turn_ptr,  # [B] int32, sensor angle in heading units
    turn_ptr,  # [B] int32, turn angle in heading units
    seed_key_ptr,  # [B] int64, lowbias32(seed), in [0, 2^32)
    mix_ptr,  # [B, SPECIES] float32, sensing weights of the species (None: one species)
    wall_ptr,  # [B / SPECIES, H, W] uint8, 1 on walls (None: no walls)
    agents,  # N, agents per simulation
    height,  # H, canvas rows
    width,  # W, canvas columns
    BLOCK: tl.constexpr,  # agents per program
    WARP_AGGREGATED: tl.constexpr,  # one atomic per cell per warp (NVIDIA PTX), see phases.deposit
    SPECIES: tl.constexpr,  # S, species per simulation; B counts groups (api.World)
    BOUNDARY: tl.constexpr,  # 0 wrap, 1 reflect, 2 clamp
):
    """One step of every agent of every group: sense, steer, move, deposit (docs/model.md
    section 6.1-6.4); program (i, b) takes BLOCK lanes of group b."""
    batch = tl.program_id(1).to(tl.int64)
    lane = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # int32: N < 2^31
    mask = lane < agents
    # This group's slices: int64 base pointers once per program, int32 offsets per lane.
    x_ptr = position_ptr + batch * 2 * agents + lane
    y_ptr = x_ptr + agents
    heading_ptr += batch * agents
    counts_ptr += batch * height * width
    # Sensors read this group's map, or with several species all maps of its simulation.
    if SPECIES == 1:
        trail_ptr += batch * height * width
    else:
        trail_ptr += (batch - batch % SPECIES) * height * width
    if mix_ptr is not None:
        mix_ptr += batch * SPECIES
    if wall_ptr is not None:  # the walls of the group's simulation
        wall_ptr += (batch // SPECIES) * height * width
    sense_offset_ptr += batch * _HEADINGS
    step_offset_ptr += batch * _HEADINGS
    if agent_id_ptr is None:
        agent = lane
    else:
        agent = tl.load(agent_id_ptr + batch * agents + lane, mask=mask, other=0)
    x = tl.load(x_ptr, mask=mask, other=0)
    y = tl.load(y_ptr, mask=mask, other=0)
    heading = tl.load(heading_ptr + lane, mask=mask, other=0).to(tl.int32)

    forward, left, right = phases.sense(
        trail_ptr,
        mix_ptr,
        sense_offset_ptr,
        tl.load(sensor_turn_ptr + batch),
        x,
        y,
        heading,
        mask,
        height,
        width,
        SPECIES,
        BOUNDARY,
    )
    bits = phases.turn_hash(tl.load(seed_key_ptr + batch), tl.load(step_ptr), agent)
    heading = phases.steer(heading, forward, left, right, bits, tl.load(turn_ptr + batch))
    x, y, heading = phases.move(x, y, heading, bits, step_offset_ptr, wall_ptr, mask, height, width, BOUNDARY)
    tl.store(x_ptr, x, mask=mask)
    tl.store(y_ptr, y, mask=mask)
    tl.store(heading_ptr + lane, heading.to(tl.int16), mask=mask)
    phases.deposit(counts_ptr, x, y, lane, mask, width, WARP_AGGREGATED)


@triton.jit
def _diffuse_kernel(
    trail_ptr,  # [B, H, W] float32, trail T_t (read)
    counts_ptr,  # [B, H, W] int32, this step's deposit counts (read)
    next_counts_ptr,  # [B, H, W] int32, the next step's count buffer (zeroed here if CLEAR_NEXT)
    next_trail_ptr,  # [B, H, W] float32, trail T_{t+1} (written)
    step_ptr,  # [] int64, steps taken so far; incremented once by program (0, 0, 0)
    deposit_ptr,  # [B] float32, trail added per agent in a cell
    keep_ptr,  # [B] float32, 1 - diffuse
    spread_ptr,  # [B] float32, diffuse / 9
    retain_ptr,  # [B] float32, 1 - decay
    food_ptr,  # [B, H, W] float32, trail added every step, 0 on walls (None: no food)
    wall_ptr,  # [B / SPECIES, H, W] uint8, 1 on walls, whose trail is 0 (None: no walls)
    height,  # H, canvas rows
    width,  # W, canvas columns
    BLOCK_H: tl.constexpr,  # rows per tile
    BLOCK_W: tl.constexpr,  # columns per tile
    CLEAR_NEXT: tl.constexpr,  # zero next_counts (False when the caller clears a single buffer)
    SPECIES: tl.constexpr,  # S, species per simulation (groups of one simulation share walls)
    BOUNDARY: tl.constexpr,  # 0 wrap; 1 reflect and 2 clamp repeat the edge cell
):
    batch = tl.program_id(2).to(tl.int64)
    column = tl.program_id(0) * BLOCK_W + tl.arange(0, BLOCK_W)
    row = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = (row[:, None] < height) & (column[None, :] < width)
    column_left = _neighbour(column, width, -1, BOUNDARY)
    column_right = _neighbour(column, width, 1, BOUNDARY)
    row_above = _neighbour(row, height, -1, BOUNDARY)
    row_below = _neighbour(row, height, 1, BOUNDARY)
    # This simulation's maps: an int64 base once per program, int32 offsets within the canvas.
    plane = batch * height * width
    trail_ptr += plane
    counts_ptr += plane
    next_counts_ptr += plane
    next_trail_ptr += plane
    if food_ptr is not None:
        food_ptr += plane
    start_above = row_above * width
    start_here = row * width
    start_below = row_below * width

    deposit = tl.load(deposit_ptr + batch)
    keep = tl.load(keep_ptr + batch)
    spread = tl.load(spread_ptr + batch)
    retain = tl.load(retain_ptr + batch)

    # The nine-neighbour sum in the reference's order: rows dy = -1, 0, 1, within a row
    # dx = -1, 0, 1, accumulated left to right. Float addition is not associative.
    total = _deposited(trail_ptr, counts_ptr, food_ptr, start_above, column_left, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, food_ptr, start_above, column, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, food_ptr, start_above, column_right, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, food_ptr, start_here, column_left, mask, deposit)
    centre = _deposited(trail_ptr, counts_ptr, food_ptr, start_here, column, mask, deposit)
    total += centre
    total += _deposited(trail_ptr, counts_ptr, food_ptr, start_here, column_right, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, food_ptr, start_below, column_left, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, food_ptr, start_below, column, mask, deposit)
    total += _deposited(trail_ptr, counts_ptr, food_ptr, start_below, column_right, mask, deposit)

    updated = retain * (keep * centre + spread * total)
    updated = tl.where(updated < _TRAIL_FLOOR, 0.0, updated)
    index = start_here[:, None] + column[None, :]
    if wall_ptr is not None:
        wall_ptr += (batch // SPECIES) * height * width
        updated = tl.where(tl.load(wall_ptr + index, mask=mask, other=0) != 0, 0.0, updated)
    tl.store(next_trail_ptr + index, updated, mask=mask)
    if CLEAR_NEXT:
        tl.store(next_counts_ptr + index, tl.zeros([BLOCK_H, BLOCK_W], tl.int32), mask=mask)

    # No program of this launch reads the counter; the next step's agent kernel does.
    if (tl.program_id(0) == 0) & (tl.program_id(1) == 0) & (tl.program_id(2) == 0):
        tl.store(step_ptr, tl.load(step_ptr) + 1)


# ---------------------------------------------------------------------------------------------
# Launchers. The step's launchers allocate nothing, so a sequence of them can be captured in a
# CUDA graph.


def _pairs(table: torch.Tensor) -> torch.Tensor:
    """A [B, HEADINGS, 2] int32 table viewed as [B, HEADINGS, 1] int64 (dx, dy) pairs."""
    return table.view(torch.int64)


def move_agents(
    position: torch.Tensor,
    heading: torch.Tensor,
    agent_id: torch.Tensor | None,
    trail: torch.Tensor,
    counts: torch.Tensor,
    step: torch.Tensor,
    tables: Tables,
    world: World = EMPTY_WORLD,
) -> None:
    """Sense, steer, move and count every agent of every simulation, in place.

    position: [B, 2, N] int32 16.16, heading: [B, N] int16 (both updated in place);
    agent_id: [B, N] int32, the spawn-order index of the agent in each lane (the random turn
    hashes it), or None when every agent is still in its spawn-order lane;
    trail: [B, H, W] float32 T_t; counts: [B, H, W] int32, zero on entry, receives the counts;
    step: [] int64 on the device; tables: contiguous, on the same device; world: its tensors
    contiguous on the same device (uint8 walls, float32 mix), B counting groups (api.World).
    """
    batch, height, width = trail.shape
    agents = heading.shape[1]
    if agents == 0:
        return
    # Lanes share cells only once agents are sorted (agent_id given); match.any is NVIDIA PTX.
    warp_aggregated = (
        WARP_AGGREGATED_DEPOSITS and agent_id is not None and trail.is_cuda and torch.version.hip is None
    )
    grid = (triton.cdiv(agents, AGENT_BLOCK), batch)
    _agent_kernel[grid](
        position,
        heading,
        agent_id,
        trail,
        counts,
        step,
        _pairs(tables.sense_offset),
        _pairs(tables.step_offset),
        tables.sensor_turn,
        tables.turn,
        tables.seed_key,
        world.mix,
        world.wall,
        agents,
        height,
        width,
        BLOCK=AGENT_BLOCK,
        WARP_AGGREGATED=warp_aggregated,
        SPECIES=world.species,
        BOUNDARY=BOUNDARIES.index(world.boundary),
        **launch_options(AGENT_WARPS),
    )


def diffuse_and_decay(
    trail: torch.Tensor,
    counts: torch.Tensor,
    next_counts: torch.Tensor,
    next_trail: torch.Tensor,
    step: torch.Tensor,
    tables: Tables,
    world: World = EMPTY_WORLD,
) -> None:
    """Deposit, diffuse and decay: next_trail = T_{t+1}; zero next_counts; step += 1.

    trail, next_trail: [B, H, W] float32 (distinct buffers); counts, next_counts: [B, H, W] int32
    (distinct buffers, or one buffer twice: then it is cleared by a memset after the kernel,
    a third launch that saves a whole count map of memory); step: [] int64 on the device;
    world: as for move_agents, its food 0 on walls.
    """
    batch, height, width = trail.shape
    single = counts.data_ptr() == next_counts.data_ptr()
    # Narrow canvases (the batched 256-wide sweeps) get tiles of several shorter rows instead of
    # one mostly masked-off 512-wide row.
    block_w = min(DIFFUSE_BLOCK_W, triton.next_power_of_2(width))
    block_h = DIFFUSE_BLOCK_H * max(1, DIFFUSE_BLOCK_W // block_w)
    grid = (triton.cdiv(width, block_w), triton.cdiv(height, block_h), batch)
    _diffuse_kernel[grid](
        trail,
        counts,
        next_counts,
        next_trail,
        step,
        tables.deposit,
        tables.keep,
        tables.spread,
        tables.retain,
        world.food,
        world.wall,
        height,
        width,
        BLOCK_H=block_h,
        BLOCK_W=block_w,
        CLEAR_NEXT=not single,
        SPECIES=world.species,
        BOUNDARY=BOUNDARIES.index(world.boundary),
        **launch_options(DIFFUSE_WARPS),
    )
    if single:
        counts.zero_()
