"""The spatial sort of the agents (every so many steps, see kernels/triton_backend.py and
kernels/triton3d.py): the cell of each agent as a key in tiled order (``_sort_key_kernel``; in 3D
``_brick_key_kernel``), torch's stable radix sort of the keys, and the agents gathered into key
order (``_permute_agents_kernel``, in 2D and 3D), so that neighbouring lanes sense
and deposit in nearby memory. The model does not depend on the order of the agents.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from .api import FRAC_BITS, MAX_CANVAS
from .limits import MAX_SIDE_3D
from .triton_kernels import launch_options

_FRAC_BITS = tl.constexpr(FRAC_BITS)


# Side of the square tiles of cells the sort key walks in row-major order (of tiles, and of cells
# within a tile); 1 is plain row-major order of cells (docs/benchmarks.md,
# "Measurements behind the code: kernels").
SORT_TILE = 16
SORT_BLOCK = 1024  # agents per program of the sort key and permutation kernels
SORT_WARPS = 4
# Agents per simulation sorted in one pass. Sorting segments instead of the whole population
# bounds the sort's temporaries (about 40 bytes per agent of a segment), which is what lets the
# largest populations fit; within a segment a warp's lanes are still neighbours in space, which
# is what the gathers and atomics need.
SORT_SEGMENT = 1 << 24

# Sort keys are int32: the padded tile grid of the largest canvas must fit (and in 3D the padded
# brick grid of the largest volume).
assert (MAX_CANVAS + SORT_TILE) ** 2 < 2**31
BRICK_BITS = 3  # 3D agents are sorted by bricks of 2^3 cells a side, then by cell within a brick
assert (MAX_SIDE_3D + (1 << BRICK_BITS)) ** 3 < 2**31


@triton.jit
def _sort_key_kernel(
    position_ptr,  # [B, 2, N] int32, 16.16 fixed point (row 0 x, row 1 y)
    key_ptr,  # [B, count] int32, written: the agent's cell in tiled row-major order
    agents,  # N, agents per simulation (the row stride of position)
    start,  # first lane of the segment being sorted
    count,  # lanes in the segment
    width,  # W, canvas columns
    TILE: tl.constexpr,  # side of a square tile of cells
    BLOCK: tl.constexpr,  # agents per program
):
    batch = tl.program_id(1).to(tl.int64)
    offset = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offset < count
    lane = start + offset
    x_ptr = position_ptr + batch * 2 * agents + lane
    column = tl.load(x_ptr, mask=mask, other=0) >> _FRAC_BITS
    row = tl.load(x_ptr + agents, mask=mask, other=0) >> _FRAC_BITS
    # Tiles in row-major order, cells in row-major order within a tile; edge tiles are padded
    # (keys may skip values, which sorting does not mind). Cells are >= 0: // and % are exact.
    tiles_across = (width + TILE - 1) // TILE
    tile = (row // TILE) * tiles_across + column // TILE
    key = (tile * TILE + row % TILE) * TILE + column % TILE
    tl.store(key_ptr + batch * count + offset, key, mask=mask)


@triton.jit
def _permute_agents_kernel(
    order_ptr,  # [B, count] int64, the segment lane each lane takes its agent from
    position_ptr,  # [B, DIMS, N] int32, 16.16 positions (read)
    heading_ptr,  # [B, N] int16, headings (read)
    agent_id_ptr,  # [B, N] int32, agent ids (read)
    sorted_position_ptr,  # [B, DIMS, count] int32, the segment's positions in the new order
    sorted_heading_ptr,  # [B, count] int16, the segment's headings in the new order
    sorted_agent_id_ptr,  # [B, count] int32, the segment's agent ids in the new order
    agents,  # N, agents per simulation (the row stride of the inputs)
    start,  # first lane of the segment
    count,  # lanes in the segment
    DIMS: tl.constexpr,  # 2 or 3: rows of a position
    BLOCK: tl.constexpr,  # agents per program
):
    batch = tl.program_id(1).to(tl.int64)
    lane = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = lane < count
    row_base = batch * agents + start  # [B, N] inputs
    x_base = batch * DIMS * agents + start  # [B, DIMS, N] inputs
    source = tl.load(order_ptr + batch * count + lane, mask=mask, other=0).to(tl.int32)
    for row in tl.static_range(DIMS):
        value = tl.load(position_ptr + x_base + row * agents + source, mask=mask)
        tl.store(sorted_position_ptr + batch * DIMS * count + row * count + lane, value, mask=mask)
    heading = tl.load(heading_ptr + row_base + source, mask=mask)
    agent_id = tl.load(agent_id_ptr + row_base + source, mask=mask)
    tl.store(sorted_heading_ptr + batch * count + lane, heading, mask=mask)
    tl.store(sorted_agent_id_ptr + batch * count + lane, agent_id, mask=mask)


@triton.jit
def _brick_key_kernel(
    position_ptr,  # [B, 3, N] int32, 16.16 fixed point (rows x, y, z)
    key_ptr,  # [B, N] int32, written: the agent's brick (z, y, x order), then its cell in it
    agents,  # N, agents per simulation
    height,  # H, cells along y
    width,  # W, cells along x
    BRICK: tl.constexpr,  # log2 of a brick's side
    BLOCK: tl.constexpr,  # agents per program
):
    batch = tl.program_id(1).to(tl.int64)
    lane = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = lane < agents
    x_ptr = position_ptr + batch * 3 * agents + lane
    x = tl.load(x_ptr, mask=mask, other=0) >> _FRAC_BITS
    y = tl.load(x_ptr + agents, mask=mask, other=0) >> _FRAC_BITS
    z = tl.load(x_ptr + 2 * agents, mask=mask, other=0) >> _FRAC_BITS
    # Edge bricks are padded (keys may skip values, which sorting does not mind); cells are >= 0.
    bricks_x = (width + (1 << BRICK) - 1) >> BRICK
    bricks_y = (height + (1 << BRICK) - 1) >> BRICK
    brick = ((z >> BRICK) * bricks_y + (y >> BRICK)) * bricks_x + (x >> BRICK)
    within = (1 << BRICK) - 1  # a cell's place in its brick, per axis
    inner = ((((z & within) << BRICK) + (y & within)) << BRICK) + (x & within)
    tl.store(key_ptr + batch * agents + lane, (brick << (3 * BRICK)) + inner, mask=mask)


# ---------------------------------------------------------------------------------------------
# Launcher: it allocates its temporaries, so it runs between steps, outside any CUDA graph.


def sort_agents(position: torch.Tensor, heading: torch.Tensor, agent_id: torch.Tensor, width: int) -> None:
    """Reorder each simulation's agents by their cell, in SORT_TILE tiles, in place.

    position: [B, 2, N] int32 16.16, heading: [B, N] int16, agent_id: [B, N] int32, permuted
    together (the model does not depend on the order: see kernels/triton_backend.py); width: W.
    Stable, so the order is deterministic. Launches: the key kernel, torch.argsort (a radix sort
    of [B, N] int32 keys), the permutation kernel, three copies back into the given buffers (a
    captured graph holds their addresses). Temporaries: 4 + 8 + 14 bytes per agent, plus the
    radix sort's own.
    """
    batch, agents = heading.shape
    for start in range(0, agents, SORT_SEGMENT):
        _sort_segment(position, heading, agent_id, width, start, min(SORT_SEGMENT, agents - start))


def _sort_segment(
    position: torch.Tensor, heading: torch.Tensor, agent_id: torch.Tensor, width: int, start: int, count: int
) -> None:
    """Sort lanes [start, start + count) of every simulation by cell, in place."""
    batch, agents = heading.shape
    if count < 2:
        return
    grid = (triton.cdiv(count, SORT_BLOCK), batch)
    key = torch.empty((batch, count), dtype=torch.int32, device=heading.device)
    _sort_key_kernel[grid](
        position,
        key,
        agents,
        start,
        count,
        width,
        TILE=SORT_TILE,
        BLOCK=SORT_BLOCK,
        **launch_options(SORT_WARPS),
    )
    order = torch.argsort(key, dim=1, stable=True)
    del key
    _permute(order, position, heading, agent_id, start, count)


def _permute(order, position, heading, agent_id, start: int, count: int) -> None:
    """Lanes [start, start + count) of every simulation take the agents `order` names (segment
    lanes), in place: the permutation kernel into temporaries, then three copies back into the
    given buffers (a captured graph holds their addresses)."""
    batch, dims, _ = position.shape
    sorted_position = torch.empty((batch, dims, count), dtype=position.dtype, device=position.device)
    sorted_heading = torch.empty((batch, count), dtype=heading.dtype, device=heading.device)
    sorted_agent_id = torch.empty((batch, count), dtype=agent_id.dtype, device=agent_id.device)
    _permute_agents_kernel[(triton.cdiv(count, SORT_BLOCK), batch)](
        order,
        position,
        heading,
        agent_id,
        sorted_position,
        sorted_heading,
        sorted_agent_id,
        position.shape[2],
        start,
        count,
        DIMS=dims,
        BLOCK=SORT_BLOCK,
        **launch_options(SORT_WARPS),
    )
    end = start + count
    position[:, :, start:end].copy_(sorted_position)
    heading[:, start:end].copy_(sorted_heading)
    agent_id[:, start:end].copy_(sorted_agent_id)


def sort_agents3d(position: torch.Tensor, heading: torch.Tensor, agent_id: torch.Tensor, grid) -> None:
    """Reorder each group's 3D agents by brick of 2^BRICK_BITS cells, then by cell within the
    brick (kernels/triton3d.brick_keys' order), in place.

    position: [B, 3, N] int32 16.16, heading: [B, N] int16, agent_id: [B, N] int32, permuted
    together; grid: (D, H, W). Stable, so the order is deterministic. Launches: the key kernel,
    torch.argsort of [B, N] int32 keys, the permutation kernel, three copies back into the given
    buffers (a captured graph holds their addresses). Temporaries: 4 + 8 + 18 bytes per agent,
    plus the radix sort's own.
    """
    batch, agents = heading.shape
    if agents < 2:
        return
    _, height, width = grid
    launch = (triton.cdiv(agents, SORT_BLOCK), batch)
    key = torch.empty((batch, agents), dtype=torch.int32, device=heading.device)
    _brick_key_kernel[launch](
        position, key, agents, height, width, BRICK=BRICK_BITS, BLOCK=SORT_BLOCK, **launch_options(SORT_WARPS)
    )
    order = torch.argsort(key, dim=1, stable=True)
    del key
    _permute(order, position, heading, agent_id, 0, agents)
