"""Spawning in 3D: the initial state of a batch of voxel simulations (docs/model.md section 13.4).

Like 2D spawning (kernels/spawn.py), every random number is a named lowbias32 stream of the seed
and placement uses integers and correctly rounded float64 operations only, so every device
computes the same bits. Directions are indices into exact3d's table.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from .api import FRAC_BITS, ONE, UNIT_BITS, State
from .exact3d import DIRECTIONS, frames, mirrors
from .spawn import (
    SPAWN_ANGLE_STREAM,
    SPAWN_HEADING_STREAM,
    SPAWN_X_STREAM,
    SPAWN_Y_STREAM,
    _stream,
)

SPAWN_Z_STREAM = 0x5EED0007  # z of `random`
SPAWNS_3D = ("random", "center", "ball", "sphere")


def _direction(u: torch.Tensor) -> torch.Tensor:
    """[N] int64 direction index of 32-bit numbers: (u * DIRECTIONS) >> 32."""
    return (u * DIRECTIONS) >> 32


def cube_root_floor(n: torch.Tensor) -> torch.Tensor:
    """floor(cbrt(n)) of int64 values in [0, 2^48), exactly: a float64 estimate corrected by
    integer comparisons (the estimate is within one of the answer; two rounds each way)."""
    guess = torch.pow(n.to(torch.float64), 1.0 / 3.0).floor().to(torch.int64).clamp(0, 1 << 16)
    for _ in range(2):
        guess = torch.where((guess + 1) ** 3 <= n, guess + 1, guess)
    for _ in range(2):
        guess = torch.where(guess**3 > n, guess - 1, guess)
    return guess


def _spawn_one(seed: int, agents: int, grid: tuple[int, int, int], spawn: str, radius: float, device):
    """position [3, N] int32 and heading [N] int16 of one simulation on grid (Z, Y, X)."""
    depth, height, width = grid
    sizes = (width, height, depth)
    heading = _direction(_stream(seed, SPAWN_HEADING_STREAM, agents, device))
    if spawn == "random":
        streams = (SPAWN_X_STREAM, SPAWN_Y_STREAM, SPAWN_Z_STREAM)
        axes = [(_stream(seed, s, agents, device) * (n << FRAC_BITS)) >> 32 for s, n in zip(streams, sizes)]
        return torch.stack(axes).to(torch.int32), heading.to(torch.int16)
    unit = torch.from_numpy(frames()[0]).to(device, torch.float64) / (1 << UNIT_BITS)  # exact
    where = _direction(_stream(seed, SPAWN_ANGLE_STREAM, agents, device))
    r_max = radius * min(sizes)
    if spawn == "ball":  # uniform in the ball: r = r_max * cbrt(u / 2^32), u's cube root in 16 bits
        u = _stream(seed, SPAWN_Y_STREAM, agents, device)
        r = r_max * (cube_root_floor(u << 16).to(torch.float64) / ONE)
    elif spawn == "sphere":  # on the sphere, facing the centre
        r = torch.full((agents,), r_max, dtype=torch.float64, device=device)
        heading = torch.from_numpy(mirrors()[:, 3]).to(device)[where]
    else:  # center
        r = torch.zeros(agents, dtype=torch.float64, device=device)
    axes = [
        torch.round((n / 2 + r * unit[where, axis]) * ONE).to(torch.int64) % (n << FRAC_BITS)
        for axis, n in enumerate(sizes)
    ]
    return torch.stack(axes).to(torch.int32), heading.to(torch.int16)


def spawn3d(
    seeds: Sequence[int],
    agents: int,
    grid: tuple[int, int, int],
    spawn: str = "random",
    radius: float = 0.35,
    device: torch.device | str = "cpu",
) -> State:
    """The initial state of a 3D batch on grid (depth, height, width): agents placed by `spawn`
    (random in the volume, all at the centre, uniform in a ball, or on a sphere facing its
    centre; radius a fraction of the shortest side), an empty trail [B, Z, Y, X], step 0."""
    if spawn not in SPAWNS_3D:
        raise ValueError(f"a 3D spawn must be one of {', '.join(SPAWNS_3D)}, not {spawn!r}")
    device = torch.device(device)
    parts = [_spawn_one(s, agents, tuple(grid), spawn, radius, device) for s in seeds]
    return State(
        position=torch.stack([p for p, _ in parts]),
        heading=torch.stack([h for _, h in parts]),
        trail=torch.zeros((len(seeds), *grid), dtype=torch.float32, device=device),
        step=torch.zeros((), dtype=torch.int64, device=device),
    )
