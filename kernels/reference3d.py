"""The PyTorch reference of the 3D model (docs/model.md section 13): plain tensor code, CPU and CUDA.

State: position [B, 3, N] int32 16.16 (rows x, y, z), heading [B, N] int16 (a direction index of
kernels/exact3d.py), trail [B, Z, Y, X] float32 (z, y, x). A step, every agent reading T_t:

1. sense: the trail at the cell of each of the SENSORS points (forward, then the cone);
2. steer (`choose_sensor`): keep, or turn toward one sensor (turn_to table), ties and the random
   choice by the agent's hash;
3. move: one step_offset along the new direction, the boundary per axis (reflect mirrors the
   direction on each axis crossed, x then y then z);
4. deposit: integer counts per cell;
5. diffuse and decay: T' = T + deposit * count; S = the 27-cell sum in nested order (rows along
   x, then y, then z, each a left fold of three); T = retain * (keep * T' + spread * S), flushed.

Every product and sum is one float32 operation; integers elsewhere, so CUDA and CPU agree.
"""

from __future__ import annotations

import numpy as np
import torch

from .api import EMPTY_WORLD, FRAC_BITS, TRAIL_FLOOR, Phase, State, World, untimed
from .exact import lowbias32, step_key
from .exact3d import AROUND, SENSORS, Tables3D
from .reference_grid import clamp, reflect, wrap_

_BELOW_FLOOR = float(np.nextafter(np.float32(TRAIL_FLOOR), np.float32(0)))


def choose_sensor(readings: torch.Tensor, pick_bits: torch.Tensor) -> torch.Tensor:
    """[B, N] int64 sensor to turn toward (0: keep going) from readings [B, N, SENSORS] float32
    (forward F, then the cone S_1 .. S_AROUND) and 16 random bits per agent [B, N] int64:

        keep (0)        where F > every S_k, or F and every S_k are equal
        random          where F < every S_k: one of all AROUND cone sensors
        strongest       otherwise: one of the S_k equal to max S (usually just one)

    The choice among `count` candidates is the (pick_bits * count) >> 16-th of them, in k order.
    With AROUND = 2 this is exactly the 2D rule of section 6.2."""
    forward, cone = readings[..., 0], readings[..., 1:]
    strongest, weakest = cone.amax(-1), cone.amin(-1)
    keep = (forward > strongest) | ((forward == strongest) & (forward == weakest))
    random = forward < weakest
    candidates = random[..., None] | (cone == strongest[..., None])
    count = candidates.sum(-1)
    pick = (pick_bits * count) >> 16
    before = candidates.cumsum(-1) - candidates.to(torch.int64)  # candidates ahead of each k
    chosen = (candidates & (before == pick[..., None])).to(torch.int64).argmax(-1) + 1
    return torch.where(keep, 0, chosen)


def _edge(value: torch.Tensor, size: torch.Tensor, boundary: str) -> torch.Tensor:
    """int32 values in (-size, 2 * size) brought into [0, size) by the boundary."""
    if boundary == "wrap":
        return wrap_(value, size)
    return reflect(value, size) if boundary == "reflect" else clamp(value, size)


class Reference3D:
    """One batch's step in the reference: the tables, the boundary, the grid's shape."""

    def __init__(self, tables: Tables3D, grid: tuple[int, int, int], boundary: str = "wrap"):
        self.tables, self.grid, self.boundary = tables, grid, boundary
        device = tables.deposit.device
        depth, height, width = grid
        self.sizes = torch.tensor([width, height, depth], dtype=torch.int32, device=device)[None, :, None]
        self.strides = torch.tensor([1, width, width * height], dtype=torch.int64, device=device)

    def flat(self, cell: torch.Tensor) -> torch.Tensor:
        """[B, ...] int64 flat index (z * Y + y) * X + x of cells [B, 3, ...] on the grid, plus
        each simulation's start in a flat batch."""
        index = (cell.to(torch.int64) * self.strides.view((1, 3) + (1,) * (cell.dim() - 2))).sum(1)
        start = torch.arange(cell.shape[0], device=cell.device) * int(np.prod(self.grid))
        return index + start.view((-1,) + (1,) * (index.dim() - 1))

    def sense(self, trail: torch.Tensor, position: torch.Tensor, heading: torch.Tensor) -> torch.Tensor:
        """[B, N, SENSORS] trail T_t at every sensor's cell (nearest cell, by the boundary)."""
        batch, agents = heading.shape
        table = self.tables.sense_offset.reshape(batch, -1, SENSORS * 4)
        offset = table.gather(1, heading.to(torch.int64)[..., None].expand(batch, agents, SENSORS * 4))
        offset = offset.view(batch, agents, SENSORS, 4)[..., :3].permute(0, 3, 1, 2)  # [B, 3, N, K]
        point = (position[..., None] + offset) >> FRAC_BITS
        cell = _edge(point, self.sizes[..., None], self.boundary)
        return trail.reshape(-1)[self.flat(cell)]

    def hash_bits(self, step: torch.Tensor, agents: int) -> torch.Tensor:
        """[B, N] int64: lowbias32(agent ^ key) of every agent this step (exact.turn_bits' hash)."""
        key = step_key(self.tables.seed_key, step)[:, None]
        agent = torch.arange(agents, dtype=torch.int64, device=key.device)[None, :]
        return lowbias32(agent ^ key)

    def steer(self, heading: torch.Tensor, readings: torch.Tensor, bits: torch.Tensor) -> torch.Tensor:
        """[B, N] int16 direction after the steering rule (choose_sensor, top 16 hash bits)."""
        sensor = choose_sensor(readings, bits >> 16)
        row = heading.to(torch.int64) * SENSORS + sensor
        return self.tables.turn_to.reshape(heading.shape[0], -1).gather(1, row)

    def move(self, position: torch.Tensor, heading: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Positions one step along `heading`, the boundary applied per axis; reflect mirrors the
        direction on every axis crossed (x, then y, then z)."""
        batch, agents = heading.shape
        table = self.tables.step_offset.reshape(batch, -1, 4)
        step = table.gather(1, heading.to(torch.int64)[..., None].expand(batch, agents, 4))
        moved = position + step[..., :3].permute(0, 2, 1)
        size = self.sizes << FRAC_BITS
        if self.boundary == "reflect":
            hit = (moved < 0) | (moved >= size)
            for axis in range(3):
                mirrored = self.tables.mirror[:, axis][heading.to(torch.int64)]
                heading = torch.where(hit[:, axis], mirrored, heading)
        return _edge(moved, size, self.boundary), heading

    def deposit_counts(self, position: torch.Tensor) -> torch.Tensor:
        """[B, Z, Y, X] int64 agents per cell."""
        batch, cells = position.shape[0], int(np.prod(self.grid))
        flat = self.flat(position >> FRAC_BITS)
        return torch.bincount(flat.reshape(-1), minlength=batch * cells).view(batch, *self.grid)

    def _padded(self, volume: torch.Tensor) -> torch.Tensor:
        """volume [B, Z, Y, X] with one cell more on every side: wrapped, or the edge repeated."""
        for dim in (1, 2, 3):
            n = volume.shape[dim]
            before, after = (n - 1, 0) if self.boundary == "wrap" else (0, n - 1)
            index = torch.cat([torch.tensor([before]), torch.arange(n), torch.tensor([after])])
            volume = volume.index_select(dim, index.to(volume.device))
        return volume

    def diffuse_and_decay(self, trail: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """T_{t+1} = retain * (keep * T' + spread * S) with S the nested 27-cell sum, flushed."""
        t = self.tables
        deposited = trail + t.deposit[:, None, None, None] * counts
        padded = self._padded(deposited)
        rows = padded[..., :-2] + padded[..., 1:-1]
        rows += padded[..., 2:]
        planes = rows[:, :, :-2] + rows[:, :, 1:-1]
        planes += rows[:, :, 2:]
        total = planes[:, :-2] + planes[:, 1:-1]
        total += planes[:, 2:]
        total *= t.spread[:, None, None, None]
        blended = t.keep[:, None, None, None] * deposited
        blended += total
        blended *= t.retain[:, None, None, None]
        return torch.threshold_(blended, _BELOW_FLOOR, 0.0)

    def step(self, state: State, phase: Phase = untimed) -> State:
        """The state one step later, each phase inside phase(name)."""
        with phase("sense"):
            readings = self.sense(state.trail, state.position, state.heading)
        with phase("steer"):
            heading = self.steer(state.heading, readings, self.hash_bits(state.step, state.agents))
        with phase("move"):
            position, heading = self.move(state.position, heading)
        with phase("deposit"):
            counts = self.deposit_counts(position)
        with phase("diffuse"):
            trail = self.diffuse_and_decay(state.trail, counts)
        return State(position=position, heading=heading, trail=trail, step=state.step + 1)


def step3d(state: State, tables: Tables3D, world: World = EMPTY_WORLD) -> State:
    """One step of every simulation of a 3D batch."""
    return Reference3D(tables, state.grid, world.boundary).step(state)


def unsupported(world: World | None) -> str | None:
    """What of a World the 3D model does not simulate (species, walls, food), or None."""
    if world is None:
        return None
    if world.species != 1:
        return "species"
    if world.wall is not None:
        return "walls"
    return "food" if world.food is not None else None


class TorchSimulation3D:
    """The 3D reference behind the Simulation protocol (api.Simulation), dims = 3."""

    name = "torch"
    dims = 3
    phases = ("sense", "steer", "move", "deposit", "diffuse")

    def __init__(self, state: State, tables: Tables3D, world: World | None = None, device=None):
        if unsupported(world):
            raise ValueError(f"the 3D model has no {unsupported(world)} (one species, no walls or food)")
        world = world or EMPTY_WORLD
        if device is not None:
            state, tables = state.to(device), tables.to(device)
        self.state, self.tables, self.world = state, tables, world
        self._step = Reference3D(tables, state.grid, world.boundary)

    def advance(self, steps: int) -> None:
        state = self.state
        for _ in range(steps):
            state = self._step.step(state)
        self.state = state

    def eager_step(self) -> None:
        self.advance(1)

    def profiled_step(self, phase: Phase) -> None:
        self.state = self._step.step(self.state, phase)

    def retune(self, tables: Tables3D, mix=None, food=None) -> None:
        """New tables from the next step on (mix and food: the 3D model has neither)."""
        if mix is not None or food is not None:
            raise ValueError("the 3D model has no species mix or food")
        self.tables = tables.to(self.state.trail.device)
        self._step = Reference3D(self.tables, self.state.grid, self.world.boundary)

    @staticmethod
    def unusable_on(device: torch.device) -> str | None:
        return None

    @staticmethod
    def device_bytes(agents: int) -> tuple[float, float]:
        """Per agent the gathers of 5 sensors in int64 (about 400 bytes); per cell about ten
        4-byte volumes (trail, counts, the padded copy, row and plane sums) and slack."""
        return 400, 4 * 10 + 24

    @property
    def trail(self) -> torch.Tensor:
        return self.state.trail

    @property
    def agents(self) -> tuple[torch.Tensor, torch.Tensor]:
        return self.state.position, self.state.heading


assert AROUND >= 2
