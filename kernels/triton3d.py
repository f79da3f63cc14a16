"""The Triton backend of the 3D model (dims = 3), byte-identical to kernels/reference3d.py.

It keeps the 2D backend's habits and reuses its machinery (kernels/triton_backend.py): two
launches a step (kernels/triton3d_kernels.py), double-buffered trail and count volumes by step
parity, the step counter on the device, CUDA graphs of chunks of steps, and agents sorted by
cell every `sort_every` steps (here by 8 x 8 x 8-cell bricks: kernels/triton_sort.sort_agents3d)
with an `agent_id` per lane for the hash, so `state` gives them back in spawn order.
"""

from __future__ import annotations

import torch

from .api import EMPTY_WORLD, Phase, State, World, untimed
from .exact3d import DIRECTIONS, SENSORS, Tables3D
from .reference3d import unsupported
from .triton3d_kernels import diffuse3d, move_agents3d
from .triton_backend import (
    COUNTS_DOUBLE_BUFFER_BYTES,
    TritonSimulation,
    _own,
    interpreter_mode,
)
from .triton_kernels import MAX_GRID_YZ
from .triton_sort import BRICK_BITS, sort_agents3d

# Steps between sorts: measured on an H200 (the harness's case tune-3d), every 64 steps beats 128 by 10%
# at 256^3/16M (0.50 against 0.56 ms a step) and 5% at 512^3/64M (2.52 against 2.65), a sort
# then costing 2.3 and 8.3 ms (torch ops; fused, on an H100: 1.5 and 5.6 ms, the case sort-3d).
SORT_EVERY_3D = 64

_TABLES = {
    "sense_offset": ((DIRECTIONS, SENSORS, 4), torch.int32),
    "turn_to": ((DIRECTIONS, SENSORS), torch.int16),
    "step_offset": ((DIRECTIONS, 4), torch.int32),
    "deposit": ((), torch.float32),
    "keep": ((), torch.float32),
    "spread": ((), torch.float32),
    "retain": ((), torch.float32),
    "seed_key": ((), torch.int64),
}


def _prepare_tables(tables: Tables3D, batch: int, device: torch.device) -> Tables3D:
    """The tables on `device`, contiguous, after checking their shapes and dtypes."""
    prepared = {}
    for name, (shape, dtype) in _TABLES.items():
        value = getattr(tables, name)
        if value.dtype != dtype or tuple(value.shape) != (batch, *shape):
            raise ValueError(
                f"tables.{name}: expected {[batch, *shape]} {dtype}, got {list(value.shape)} {value.dtype}"
            )
        prepared[name] = value.to(device).contiguous()
    mirror = tables.mirror.to(device, torch.int16).contiguous()
    if tuple(mirror.shape) != (DIRECTIONS, 4):
        raise ValueError(f"tables.mirror: expected [{DIRECTIONS}, 4], got {list(mirror.shape)}")
    return Tables3D(mirror=mirror, **prepared)


def brick_keys(position: torch.Tensor, grid: tuple[int, int, int]) -> torch.Tensor:
    """[N] int32 sort key of positions [3, N]: the brick (z, y, x order), then the cell in it
    (below 2^31: a side is at most limits.MAX_SIDE_3D; 32-bit keys sort faster). The order
    kernels/triton_sort.sort_agents3d sorts by, written in torch (its tests' reference)."""
    depth, height, width = grid
    cell = position >> 16
    x, y, z = cell[0], cell[1], cell[2]
    bricks_x = -(-width >> BRICK_BITS)
    bricks_y = -(-height >> BRICK_BITS)
    brick = ((z >> BRICK_BITS) * bricks_y + (y >> BRICK_BITS)) * bricks_x + (x >> BRICK_BITS)
    mask = (1 << BRICK_BITS) - 1
    inner = (((z & mask) << BRICK_BITS) + (y & mask) << BRICK_BITS) + (x & mask)
    return (brick << (3 * BRICK_BITS)) + inner


class TritonSimulation3D(TritonSimulation):
    """B groups of the 3D model advanced by the Triton kernels (api.Simulation, dims = 3)."""

    name = "triton"
    dims = 3
    phases = ("sort", "sense/steer/move/deposit", "diffuse")

    def __init__(
        self,
        state: State,
        tables: Tables3D,
        world: World | None = None,
        device: torch.device | str | None = None,
        *,
        sort_every: int = SORT_EVERY_3D,
        graphs: bool | None = None,
    ):
        """As TritonSimulation (sort_every, graphs change only the speed); the world may set the
        boundary only (reference3d.unsupported)."""
        if unsupported(world):
            raise ValueError(f"the 3D model has no {unsupported(world)} (one species, no walls or food)")
        if sort_every < 0:
            raise ValueError(f"sort_every must be >= 0, got {sort_every}")
        device = torch.device(device) if device is not None else state.trail.device
        if device.type != "cuda" and not interpreter_mode():
            raise RuntimeError(
                "the triton backend needs CUDA tensors, or TRITON_INTERPRET=1 "
                "set before Python starts to run its kernels on the CPU"
            )
        if state.batch > MAX_GRID_YZ:
            raise ValueError(f"at most {MAX_GRID_YZ} simulations per batch, got {state.batch}")
        self._boundary = (world or EMPTY_WORLD).boundary
        self._world = EMPTY_WORLD
        self._tables = _prepare_tables(tables, state.batch, device)
        self._grid = state.grid
        self._position = _own(state.position, device, torch.int32)
        self._heading = _own(state.heading, device, torch.int16)
        trail = _own(state.trail, device, torch.float32)
        self._trails = (trail, torch.empty_like(trail))
        counts = torch.zeros(trail.shape, dtype=torch.int32, device=device)
        single = counts.numel() * 4 > COUNTS_DOUBLE_BUFFER_BYTES
        self._counts = (counts, counts if single else torch.zeros_like(counts))
        self._step = state.step.to(device, torch.int64).reshape(()).clone()
        self._sort_every = sort_every
        self._agent_id = (
            torch.arange(state.agents, dtype=torch.int32, device=device).repeat(state.batch, 1)
            if sort_every
            else None
        )
        self._steps_since_sort = sort_every
        self._parity = 0
        self._use_graphs = (device.type == "cuda" and not interpreter_mode()) if graphs is None else graphs
        self._compiled = False
        self._graphs = {}

    def retune(self, tables: Tables3D, mix=None, food=None) -> None:
        """New tables from the next step on, copied into the buffers the graphs read."""
        if mix is not None or food is not None:
            raise ValueError("the 3D model has no species mix or food")
        new = _prepare_tables(tables, self.trail.shape[0], tables.deposit.device)
        for name in _TABLES:
            getattr(self._tables, name).copy_(getattr(new, name))

    @staticmethod
    def device_bytes(agents: int) -> tuple[float, float]:
        """Per agent its state (x, y, z, direction: 14 bytes), its id (4) and its share of a
        sort's temporaries (keys, order, the radix sort's buffers, gathered copies: 56 bytes);
        per cell two trail and two count volumes (4 bytes each) and 8 bytes of slack. Measured
        peaks on an H200: 1.44 GiB at 256^3/16M (this: 1.53), 5.75 GiB at 512^3/64M (7.6)."""
        return 18 + 56, 4 * 2 + 4 * 2 + 8

    def _sort_if_due(self, phase: Phase = untimed) -> None:
        """Reorder the agents by brick when sort_every steps have passed since the last sort."""
        if self._sort_every and self._steps_since_sort >= self._sort_every:
            with phase("sort"):
                sort_agents3d(self._position, self._heading, self._agent_id, self._grid)
            self._steps_since_sort = 0

    def _launch_step(self, parity: int, phase: Phase = untimed) -> None:
        """The two launches of one step whose buffers have the given parity."""
        trail, next_trail = self._trails[parity], self._trails[parity ^ 1]
        counts, next_counts = self._counts[parity], self._counts[parity ^ 1]
        args = (self._step, self._tables, self._boundary)
        with phase("sense/steer/move/deposit"):
            move_agents3d(self._position, self._heading, self._agent_id, trail, counts, *args)
        with phase("diffuse"):
            diffuse3d(trail, counts, next_counts, next_trail, *args)
