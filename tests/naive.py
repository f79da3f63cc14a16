"""The naive model: a slow, obviously-correct step in plain Python, that the reference is tested
against bit for bit (tests/test_kernels_reference.py).

It loops over agents and cells: Python ints for positions and headings, numpy float32 scalars
for the trail, the order of operations of docs/model.md, and its own copy of the lowbias32 hash.
It reads only the contract's inputs (the Tables of exact.build_tables, an api.World).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from physarum.kernels import api

HEADINGS = 4096
FRAC = 16


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
class Sim:
    """One simulation in Python objects: lists of ints, a list of rows of np.float32."""

    x: list[int]
    y: list[int]
    heading: list[int]
    trail: list[list[np.float32]]


@dataclass
class Constants:
    sense_offset: list[list[int]]
    step_offset: list[list[int]]
    sensor_turn: int
    turn: int
    deposit: np.float32
    keep: np.float32
    spread: np.float32
    retain: np.float32
    seed_key: int


def constants_of(tables: api.Tables, b: int) -> Constants:
    return Constants(
        sense_offset=tables.sense_offset[b].tolist(),
        step_offset=tables.step_offset[b].tolist(),
        sensor_turn=int(tables.sensor_turn[b]),
        turn=int(tables.turn[b]),
        deposit=np.float32(tables.deposit[b].item()),
        keep=np.float32(tables.keep[b].item()),
        spread=np.float32(tables.spread[b].item()),
        retain=np.float32(tables.retain[b].item()),
        seed_key=int(tables.seed_key[b]),
    )


def sims_of(state: api.State) -> list[Sim]:
    sims = []
    for b in range(state.batch):
        rows = state.trail[b].numpy()
        sims.append(
            Sim(
                x=state.position[b, 0].tolist(),
                y=state.position[b, 1].tolist(),
                heading=state.heading[b].tolist(),
                trail=[[np.float32(v) for v in row] for row in rows],
            )
        )
    return sims


def steering(forward, left, right, turn_positive: bool, turn: int) -> tuple[int, str]:
    """The heading change and the name of the branch taken, as DESIGN.md section 3 words it."""
    if forward > left and forward > right:
        return 0, "keep"
    if forward < left and forward < right:
        return (turn if turn_positive else -turn), "random"
    if left > right:
        return -turn, "left"
    if right > left:
        return turn, "right"
    return 0, "tie"


def naive_step(sim: Sim, c: Constants, step: int, branches: dict | None = None) -> Sim:
    height, width = len(sim.trail), len(sim.trail[0])
    key = hash32(c.seed_key ^ hash32(step))

    def sample(x: int, y: int, heading: int) -> np.float32:
        dx, dy = c.sense_offset[heading]
        return sim.trail[((y + dy) >> FRAC) % height][((x + dx) >> FRAC) % width]

    xs, ys, headings = [], [], []
    counts = [[0] * width for _ in range(height)]
    for agent, (x, y, heading) in enumerate(zip(sim.x, sim.y, sim.heading)):
        forward = sample(x, y, heading)
        left = sample(x, y, (heading - c.sensor_turn) % HEADINGS)
        right = sample(x, y, (heading + c.sensor_turn) % HEADINGS)
        turn_positive = hash32(agent ^ key) >> 31 == 1
        change, branch = steering(forward, left, right, turn_positive, c.turn)
        if branches is not None:
            branches[branch] = branches.get(branch, 0) + 1
        heading = (heading + change) % HEADINGS
        dx, dy = c.step_offset[heading]
        x = (x + dx) % (width << FRAC)
        y = (y + dy) % (height << FRAC)
        counts[y >> FRAC][x >> FRAC] += 1
        xs.append(x)
        ys.append(y)
        headings.append(heading)

    deposited = [
        [sim.trail[j][i] + c.deposit * np.float32(counts[j][i]) for i in range(width)] for j in range(height)
    ]
    trail = []
    for j in range(height):
        row = []
        for i in range(width):
            total = None
            for dy in (-1, 0, 1):
                for dx in (-1, 0, 1):
                    value = deposited[(j + dy) % height][(i + dx) % width]
                    total = value if total is None else total + value
            new = c.retain * (c.keep * deposited[j][i] + c.spread * total)
            if new < np.float32(api.TRAIL_FLOOR):
                new = np.float32(0.0)
            assert isinstance(new, np.float32)
            row.append(new)
        trail.append(row)
    return Sim(xs, ys, headings, trail)


def edge(c: int, n: int, boundary: str) -> int:
    """A cell index c in (-n, 2n) on a side of n cells, after the boundary."""
    if boundary == "wrap":
        return c % n
    if boundary == "clamp":
        return min(max(c, 0), n - 1)
    return -1 - c if c < 0 else (2 * n - 1 - c if c >= n else c)


def naive_world_step(state: api.State, tables: api.Tables, world: api.World) -> api.State:
    """One step of every group, agent by agent and cell by cell."""
    groups, agents, height, width = state.batch, state.agents, state.height, state.width
    species, boundary = world.species, world.boundary
    step = int(state.step)
    trail = state.trail.numpy()
    wall = None if world.wall is None else world.wall.numpy() != 0
    f32 = np.float32
    position = state.position.clone()
    heading = state.heading.clone()
    counts = np.zeros((groups, height, width), np.int64)
    for g in range(groups):
        b, first = g // species, g - g % species
        sense, steps = tables.sense_offset[g].tolist(), tables.step_offset[g].tolist()
        sensor_turn, turn = int(tables.sensor_turn[g]), int(tables.turn[g])
        key = hash32(int(tables.seed_key[g]) ^ hash32(step))

        def sample(x, y, h):
            dx, dy = sense[h]
            cx = edge((x + dx) >> FRAC, width, boundary)
            cy = edge((y + dy) >> FRAC, height, boundary)
            if world.mix is None:
                return trail[g, cy, cx]
            total = None
            for j in range(species):  # species 0 first, each product and sum rounded
                term = f32(world.mix[g, j].item()) * trail[first + j, cy, cx]
                total = term if total is None else f32(total + term)
            return total

        for a in range(agents):
            x, y, h = int(position[g, 0, a]), int(position[g, 1, a]), int(heading[g, a])
            forward, left = sample(x, y, h), sample(x, y, (h - sensor_turn) % HEADINGS)
            right = sample(x, y, (h + sensor_turn) % HEADINGS)
            bits = hash32(a ^ key)
            change, _ = steering(forward, left, right, bits >> 31 == 1, turn)
            h = (h + change) % HEADINGS
            nx, ny = x + steps[h][0], y + steps[h][1]
            for axis, size in ((0, width << FRAC), (1, height << FRAC)):
                v = (nx, ny)[axis]
                if boundary == "wrap":
                    v %= size
                elif boundary == "clamp":
                    v = min(max(v, 0), size - 1)
                elif v < 0 or v >= size:
                    v = -1 - v if v < 0 else size - 1 - (v - size)
                    h = (HEADINGS // 2 - h) % HEADINGS if axis == 0 else (-h) % HEADINGS
                nx, ny = (v, ny) if axis == 0 else (nx, v)
            if wall is not None and wall[b, ny >> FRAC, nx >> FRAC]:
                nx, ny, h = x, y, bits & 0xFFF  # stopped: stays, random heading
            position[g, 0, a], position[g, 1, a], heading[g, a] = nx, ny, h
            counts[g, ny >> FRAC, nx >> FRAC] += 1

    new = np.zeros_like(trail)
    for g in range(groups):
        b = g // species
        deposit, keep = f32(tables.deposit[g].item()), f32(tables.keep[g].item())
        spread, retain = f32(tables.spread[g].item()), f32(tables.retain[g].item())
        deposited = trail[g] + deposit * counts[g].astype(f32)
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
                value = retain * f32(f32(keep * deposited[j, i]) + f32(spread * total))
                if value < f32(api.TRAIL_FLOOR) or (wall is not None and wall[b, j, i]):
                    value = f32(0)
                new[g, j, i] = value
    return api.State(position, heading, torch.from_numpy(new), state.step + 1)
