"""Spawning: the initial state of a batch, agents placed by one of SPAWNS with an empty trail.

Placement is computed in integers and correctly rounded float64 operations, so that it is the same
on every device it is computed on (docs/model.md section 7.1). Every random number is a named
stream of lowbias32 of the seed, never torch.rand.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .api import (
    FRAC_BITS,
    HEADING_BITS,
    HEADING_MASK,
    HEADINGS,
    ONE,
    UNIT_BITS,
    State,
)
from .exact import lowbias32, lowbias32_int, unit_circle

SPAWN_X_STREAM = 0x5EED0001
SPAWN_Y_STREAM = 0x5EED0002  # also the disk spawn's radius
SPAWN_ANGLE_STREAM = 0x5EED0003
SPAWN_HEADING_STREAM = 0x5EED0004
SPAWN_CELL_STREAM = 0x5EED0005  # the cell of `image` spawns and of agents moved off walls
SPAWN_SUBCELL_STREAM = 0x5EED0006  # where in that cell (16 bits of x, 16 of y)
SPECIES_STREAM = 0x5BEC1E50  # seeds of species 1, 2, 3 of a simulation

SPAWNS = ("random", "disk", "ring", "center", "image")


def species_seed(seed: int, species: int) -> int:
    """The seed of one species of a simulation: the simulation's own seed for species 0 (so one
    species is exactly the plain model), a hash of it for the others."""
    if species == 0:
        return seed
    return lowbias32_int(seed ^ lowbias32_int(SPECIES_STREAM + species))


def _stream(seed: int, stream: int, agents: int, device: torch.device | str = "cpu") -> torch.Tensor:
    """[N] int64 uniform 32-bit integers of one named random stream of one seed."""
    key = lowbias32_int(lowbias32_int(seed) ^ stream)
    return lowbias32(torch.arange(agents, dtype=torch.int64, device=device) ^ key)


def _weighted_cells(seed: int, weights: torch.Tensor, agents: int) -> torch.Tensor:
    """[2, N] int32 16.16 positions of N agents placed with probability proportional to the
    integer weights [H, W] of the cells, in integers only: agent i's cell is the first whose
    running total of weights exceeds (u * total) >> 32, and its place in the cell 32 more bits."""
    height, width = weights.shape
    running = torch.cumsum(weights.reshape(-1).to(torch.int64), 0)
    total = int(running[-1])
    if total <= 0:
        raise ValueError("no cell has weight: nothing to place agents on")
    u = _stream(seed, SPAWN_CELL_STREAM, agents, weights.device)
    # (u * total) >> 32 without overflowing int64: u = hi * 2^16 + lo
    target = ((u >> 16) * total + (((u & 0xFFFF) * total) >> 16)) >> 16
    cell = torch.searchsorted(running, target, right=True)
    within = _stream(seed, SPAWN_SUBCELL_STREAM, agents, weights.device)
    x = (cell % width) << FRAC_BITS | (within & 0xFFFF)
    y = (cell // width) << FRAC_BITS | (within >> 16)
    return torch.stack([x, y]).to(torch.int32)


def _spawn_one(
    seed: int,
    agents: int,
    width: int,
    height: int,
    spawn: str,
    radius: float,
    density: torch.Tensor | None,
    device: torch.device,
) -> tuple[torch.Tensor, torch.Tensor]:
    """position [2, N] int32 and heading [N] int16 of one simulation, computed on `device`."""
    heading = _stream(seed, SPAWN_HEADING_STREAM, agents, device) >> (32 - HEADING_BITS)
    if spawn == "image":
        return _weighted_cells(seed, density, agents), heading.to(torch.int16)
    if spawn == "random":
        x = (_stream(seed, SPAWN_X_STREAM, agents, device) * (width << FRAC_BITS)) >> 32
        y = (_stream(seed, SPAWN_Y_STREAM, agents, device) * (height << FRAC_BITS)) >> 32
        return torch.stack([x, y]).to(torch.int32), heading.to(torch.int16)
    circle = torch.tensor(unit_circle(), dtype=torch.float64, device=device) / (1 << UNIT_BITS)
    angle = _stream(seed, SPAWN_ANGLE_STREAM, agents, device) >> (32 - HEADING_BITS)
    r_max = radius * min(width, height)
    if spawn == "disk":
        # float64 sqrt, multiply and round are correctly rounded by IEEE 754: exact everywhere
        u = _stream(seed, SPAWN_Y_STREAM, agents, device).to(torch.float64) / 2.0**32
        r = r_max * torch.sqrt(u)
    elif spawn == "ring":
        r = torch.full((agents,), r_max, dtype=torch.float64, device=device)
        heading = (angle + HEADINGS // 2) & HEADING_MASK  # facing the centre
    else:  # center
        r = torch.zeros(agents, dtype=torch.float64, device=device)
    x = torch.round((width / 2 + r * circle[angle, 0]) * ONE).to(torch.int64) % (width << FRAC_BITS)
    y = torch.round((height / 2 + r * circle[angle, 1]) * ONE).to(torch.int64) % (height << FRAC_BITS)
    return torch.stack([x, y]).to(torch.int32), heading.to(torch.int16)


def _off_walls(seed: int, position: torch.Tensor, wall: torch.Tensor) -> torch.Tensor:
    """position [2, N] with every agent that stands on a wall moved to a free cell, chosen
    uniformly (by the same integer method as `image` spawns); the others stay."""
    width = wall.shape[1]
    on_wall = wall.reshape(-1)[(position[1] >> FRAC_BITS) * width + (position[0] >> FRAC_BITS)] != 0
    if not bool(on_wall.any()):
        return position
    free = _weighted_cells(seed ^ 0x3A11, (wall == 0).to(torch.int64), position.shape[1])
    return torch.where(on_wall[None, :], free, position)


def spawn(
    seeds: Sequence[int],
    agents: int,
    width: int,
    height: int,
    spawn: str = "random",
    radius: float = 0.35,
    device: torch.device | str = "cpu",
    density: torch.Tensor | None = None,
    wall: torch.Tensor | None = None,
) -> State:
    """The initial state of a batch: agents placed by `spawn`, an empty trail, step 0.

    radius is a fraction of the canvas's short side (disk and ring spawns). density: [H, W]
    integer weights of the `image` spawn (agents per cell in proportion). wall: [H, W], non-zero
    on walls; agents spawned on a wall are moved to a free cell. Computed on `device`, with the
    same result on every device.
    """
    if spawn not in SPAWNS:
        raise ValueError(f"spawn must be one of {', '.join(SPAWNS)}, not {spawn!r}")
    if spawn == "image" and (density is None or tuple(density.shape) != (height, width)):
        raise ValueError(f"the image spawn needs density weights of shape [{height}, {width}]")
    device = torch.device(device)
    density = None if density is None else density.to(device)
    parts = [_spawn_one(s, agents, width, height, spawn, radius, density, device) for s in seeds]
    if wall is not None:
        wall = wall.to(device)
        parts = [(_off_walls(s, p, wall), h) for s, (p, h) in zip(seeds, parts)]
    return State(
        position=torch.stack([p for p, _ in parts]),
        heading=torch.stack([h for _, h in parts]),
        trail=torch.zeros((len(seeds), height, width), dtype=torch.float32, device=device),
        step=torch.zeros((), dtype=torch.int64, device=device),
    )
