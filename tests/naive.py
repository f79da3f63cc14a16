"""The naive model: a slow, obviously-correct step in plain Python, that the reference is tested
against bit for bit (tests/test_kernels_reference.py).

It loops over groups, agents and cells: Python ints for positions and headings, numpy float32
scalars for the trail, the order of operations of docs/model.md (section 6, and section 12 for
boundaries, walls, food and species), and its own copy of the lowbias32 hash. It reads only the
contract's inputs (an api.State, the Tables of exact.build_tables, an api.World), never the
reference or the exact module.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from physarum.kernels import api

HEADINGS = 4096
FRAC = 16
f32 = np.float32


def hash32(x: int) -> int:
    """lowbias32, written out again: xorshift-multiply twice, all mod 2^32."""
    x &= 0xFFFFFFFF
    x ^= x >> 16
    x = (x * 0x7FEB352D) % 2**32
    x ^= x >> 15
    x = (x * 0x846CA68B) % 2**32
    x ^= x >> 16
    return x


@dataclass
class Constants:
    """One group's tables as Python ints and numpy float32 scalars."""

    sense_offset: list[list[int]]
    step_offset: list[list[int]]
    sensor_turn: int
    turn: int
    deposit: np.float32
    keep: np.float32
    spread: np.float32
    retain: np.float32
    seed_key: int


def constants_of(tables: api.Tables, g: int) -> Constants:
    return Constants(
        sense_offset=tables.sense_offset[g].tolist(),
        step_offset=tables.step_offset[g].tolist(),
        sensor_turn=int(tables.sensor_turn[g]),
        turn=int(tables.turn[g]),
        deposit=f32(tables.deposit[g].item()),
        keep=f32(tables.keep[g].item()),
        spread=f32(tables.spread[g].item()),
        retain=f32(tables.retain[g].item()),
        seed_key=int(tables.seed_key[g]),
    )


def steering(forward, left, right, turn_positive: bool, turn: int) -> tuple[int, str]:
    """The heading change and the name of the branch taken, as docs/model.md section 6.2 words it."""
    if forward > left and forward > right:
        return 0, "keep"
    if forward < left and forward < right:
        return (turn if turn_positive else -turn), "random"
    if left > right:
        return -turn, "left"
    if right > left:
        return turn, "right"
    return 0, "tie"


def edge(c: int, n: int, boundary: str) -> int:
    """A cell index c in (-n, 2n) on a side of n cells, after the boundary."""
    if boundary == "wrap":
        return c % n
    if boundary == "clamp":
        return min(max(c, 0), n - 1)
    return -1 - c if c < 0 else (2 * n - 1 - c if c >= n else c)


def moved(x: int, y: int, h: int, c: Constants, width: int, height: int, boundary: str):
    """(x, y, h) one step along heading h, after the boundary: wrapped, held at the edge, or
    mirrored with the heading turned (h -> 180 - h at a side, h -> -h at the top or bottom)."""
    position = [x + c.step_offset[h][0], y + c.step_offset[h][1]]
    for axis, size in ((0, width << FRAC), (1, height << FRAC)):
        v = position[axis]
        if boundary == "wrap":
            v %= size
        elif boundary == "clamp":
            v = min(max(v, 0), size - 1)
        elif v < 0 or v >= size:
            v = -1 - v if v < 0 else size - 1 - (v - size)
            h = (HEADINGS // 2 - h) % HEADINGS if axis == 0 else (-h) % HEADINGS
        position[axis] = v
    return position[0], position[1], h


def naive_step(
    state: api.State, tables: api.Tables, world: api.World = api.EMPTY_WORLD, branches: dict | None = None
) -> api.State:
    """One step of every group, agent by agent and cell by cell; counts the steering branches
    taken into `branches` (by name) when given one."""
    groups, height, width = state.batch, state.height, state.width
    species, boundary = world.species, world.boundary
    step = int(state.step)
    trail = state.trail.numpy()
    wall = None if world.wall is None else world.wall.numpy() != 0
    consts = [constants_of(tables, g) for g in range(groups)]
    position, heading = state.position.tolist(), state.heading.tolist()
    counts = np.zeros((groups, height, width), np.int64)
    for g, c in enumerate(consts):
        b, first = g // species, g - g % species
        key = hash32(c.seed_key ^ hash32(step))

        def sample(x: int, y: int, h: int) -> np.float32:
            dx, dy = c.sense_offset[h]
            cx = edge((x + dx) >> FRAC, width, boundary)
            cy = edge((y + dy) >> FRAC, height, boundary)
            if world.mix is None:
                return trail[g, cy, cx]
            total = None
            for j in range(species):  # species 0 first, each product and sum rounded
                term = f32(world.mix[g, j].item()) * trail[first + j, cy, cx]
                total = term if total is None else f32(total + term)
            return total

        xs, ys, hs = position[g][0], position[g][1], heading[g]
        for a, (x, y, h) in enumerate(zip(xs, ys, hs)):
            forward = sample(x, y, h)
            left = sample(x, y, (h - c.sensor_turn) % HEADINGS)
            right = sample(x, y, (h + c.sensor_turn) % HEADINGS)
            bits = hash32(a ^ key)
            change, branch = steering(forward, left, right, bits >> 31 == 1, c.turn)
            if branches is not None:
                branches[branch] = branches.get(branch, 0) + 1
            nx, ny, nh = moved(x, y, (h + change) % HEADINGS, c, width, height, boundary)
            if wall is not None and wall[b, ny >> FRAC, nx >> FRAC]:
                nx, ny, nh = x, y, bits & 0xFFF  # stopped: stays, random heading
            xs[a], ys[a], hs[a] = nx, ny, nh
            counts[g, ny >> FRAC, nx >> FRAC] += 1

    new = np.zeros_like(trail)
    for g, c in enumerate(consts):
        b = g // species
        deposited = trail[g] + c.deposit * counts[g].astype(f32)
        if world.food is not None:
            food = world.food[g].numpy()
            deposited = deposited + (np.where(wall[b], f32(0), food) if wall is not None else food)
        for j in range(height):
            for i in range(width):
                total = None
                for dy in (-1, 0, 1):
                    for dx in (-1, 0, 1):
                        v = deposited[edge(j + dy, height, boundary), edge(i + dx, width, boundary)]
                        total = v if total is None else f32(total + v)
                value = c.retain * f32(f32(c.keep * deposited[j, i]) + f32(c.spread * total))
                assert isinstance(value, np.float32)
                if value < f32(api.TRAIL_FLOOR) or (wall is not None and wall[b, j, i]):
                    value = f32(0)
                new[g, j, i] = value
    return api.State(
        torch.tensor(position, dtype=torch.int32),
        torch.tensor(heading, dtype=torch.int16),
        torch.from_numpy(new),
        state.step + 1,
    )
