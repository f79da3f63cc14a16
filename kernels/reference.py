"""The PyTorch reference backend: the model of docs/model.md as plain tensor code.

Runs on CPU and CUDA. Every other backend is tested against it byte for byte, so it is written
for clarity first; each phase of a step is one function in the model's words.
"""

from __future__ import annotations

import torch

from physarum.kernels.api import (FRAC_BITS, HEADING_MASK, HEADINGS, TRAIL_FLOOR, State, Tables,
                                  turn_bits)


def _wrap(value: torch.Tensor, size: int) -> torch.Tensor:
    """Wrap values in (-size, 2 * size) into [0, size) with compares, not a modulo."""
    value = torch.where(value < 0, value + size, value)
    return torch.where(value >= size, value - size, value)


def _lookup(table: torch.Tensor, heading: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(dx, dy) [B, N] int32 from a [B, HEADINGS, 2] table at headings [B, N]."""
    batch = torch.arange(table.shape[0], device=table.device)[:, None]
    row = table.reshape(-1, 2)[batch * HEADINGS + heading]
    return row[..., 0], row[..., 1]


def _cell_index(x: torch.Tensor, y: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Flat [B, N] index into a [B, H, W] map of the cells holding 16.16 positions x, y."""
    batch = torch.arange(x.shape[0], device=x.device)[:, None]
    return (batch * height + (y >> FRAC_BITS)) * width + (x >> FRAC_BITS)


def sense(trail: torch.Tensor, x: torch.Tensor, y: torch.Tensor, heading: torch.Tensor,
          tables: Tables) -> torch.Tensor:
    """Trail [B, N] float32 at the nearest cell one sensor offset ahead along `heading`."""
    _, height, width = trail.shape
    dx, dy = _lookup(tables.sense_offset, heading)
    cx = _wrap((x + dx) >> FRAC_BITS, width)
    cy = _wrap((y + dy) >> FRAC_BITS, height)
    batch = torch.arange(x.shape[0], device=x.device)[:, None]
    return trail.reshape(-1)[(batch * height + cy) * width + cx]


def steer(forward: torch.Tensor, left: torch.Tensor, right: torch.Tensor,
          turn_positive: torch.Tensor, turn: torch.Tensor) -> torch.Tensor:
    """Heading change [B, N] int32 from the three readings (DESIGN.md section 3, step 2)."""
    turn = turn[:, None]
    zero = torch.zeros_like(turn)
    random_turn = torch.where(turn_positive, turn, -turn)
    side_turn = torch.where(left > right, -turn, torch.where(right > left, turn, zero))
    change = torch.where((forward < left) & (forward < right), random_turn, side_turn)
    return torch.where((forward > left) & (forward > right), zero, change)


def move(x: torch.Tensor, y: torch.Tensor, heading: torch.Tensor, tables: Tables,
         height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Positions after one step along `heading`, wrapped onto the torus."""
    dx, dy = _lookup(tables.step_offset, heading)
    return _wrap(x + dx, width << FRAC_BITS), _wrap(y + dy, height << FRAC_BITS)


def deposit_counts(x: torch.Tensor, y: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """[B, H, W] int32 number of agents in each cell (integer, so order does not matter)."""
    batch = x.shape[0]
    index = _cell_index(x, y, height, width).reshape(-1)
    counts = torch.bincount(index, minlength=batch * height * width)
    return counts.to(torch.int32).reshape(batch, height, width)


def neighbour_sum(trail: torch.Tensor) -> torch.Tensor:
    """Sum of each cell's 3x3 wrap-around neighbourhood, added row by row, left to right.

    The order is part of the contract: (((T[y-1,x-1] + T[y-1,x]) + T[y-1,x+1]) + T[y,x-1]) ...
    """
    total = None
    for dy in (-1, 0, 1):
        for dx in (-1, 0, 1):
            shifted = torch.roll(trail, shifts=(-dy, -dx), dims=(1, 2))
            total = shifted if total is None else total + shifted
    return total


def diffuse_and_decay(trail: torch.Tensor, counts: torch.Tensor, tables: Tables) -> torch.Tensor:
    """T_{t+1} = retain * (keep * T' + spread * sum3x3(T')), T' = T + deposit * counts."""
    deposit = tables.deposit[:, None, None]
    keep = tables.keep[:, None, None]
    spread = tables.spread[:, None, None]
    retain = tables.retain[:, None, None]
    deposited = trail + deposit * counts.to(torch.float32)
    blended = keep * deposited + spread * neighbour_sum(deposited)
    updated = retain * blended
    return torch.where(updated < TRAIL_FLOOR, torch.zeros_like(updated), updated)


def step(state: State, tables: Tables) -> State:
    """One step of every simulation in the batch; returns the new state."""
    _, height, width = state.trail.shape
    x, y = state.position[:, 0], state.position[:, 1]
    heading = state.heading.to(torch.int32)
    sensor_turn = tables.sensor_turn[:, None]
    forward = sense(state.trail, x, y, heading, tables)
    left = sense(state.trail, x, y, (heading - sensor_turn) & HEADING_MASK, tables)
    right = sense(state.trail, x, y, (heading + sensor_turn) & HEADING_MASK, tables)
    turn_positive = turn_bits(tables.seed_key, state.step, state.agents)
    heading = (heading + steer(forward, left, right, turn_positive, tables.turn)) & HEADING_MASK
    x, y = move(x, y, heading, tables, height, width)
    counts = deposit_counts(x, y, height, width)
    return State(
        position=torch.stack([x, y], dim=1),
        heading=heading.to(torch.int16),
        trail=diffuse_and_decay(state.trail, counts, tables),
        step=state.step + 1,
    )


class TorchSimulation:
    """The reference backend behind the common simulation interface (see kernels/__init__)."""

    name = "torch"

    def __init__(self, state: State, tables: Tables):
        self.state = state
        self.tables = tables

    def advance(self, steps: int) -> None:
        for _ in range(steps):
            self.state = step(self.state, self.tables)

    @property
    def trail(self) -> torch.Tensor:
        return self.state.trail
