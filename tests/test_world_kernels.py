"""Worlds in the kernels (docs/model.md section 12): boundaries, walls, food and species.

The reference against a plain-Python step written from docs/model.md, bit for bit, then the
Triton kernels (interpreter mode in CI, CUDA where there is one) against the reference.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from test_reference import hash32, steering  # the plain model's naive hash and steering rule

from physarum.kernels import api, exact, reference
from physarum.kernels.spawn import spawn, species_seed

HEADINGS = 4096
FRAC = 16


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


def assert_same_state(got: api.State, expected: api.State, where: str = "") -> None:
    assert torch.equal(got.position, expected.position), f"positions differ {where}"
    assert torch.equal(got.heading, expected.heading), f"headings differ {where}"
    mismatch = (got.trail.view(torch.int32) != expected.trail.view(torch.int32)).nonzero()
    assert mismatch.numel() == 0, f"trail differs {where} at {mismatch[:5].tolist()}"
    assert int(got.step) == int(expected.step)


# ---------------------------------------------------------------------------------------------
# Worlds to test: every boundary, walls, food, 2 and 3 species, batches of simulations.


def params(seed: int, **changes) -> api.ModelParams:
    base = dict(
        sensor_angle=30.0,
        sensor_distance=3.0,
        turn_angle=45.0,
        step_size=1.7,
        deposit=4.0,
        diffuse=0.8,
        decay=0.1,
        seed=seed,
    )
    base.update(changes)
    return api.ModelParams(**base)


def walls(height: int, width: int, seed: int) -> torch.Tensor:
    """A few wall blocks, an edge strip and single wall cells; most cells free."""
    rng = random.Random(seed)
    wall = torch.zeros((height, width), dtype=torch.uint8)
    wall[:, width // 2] = 1
    wall[height // 3, :] = 1
    wall[height // 2, width // 2] = 0  # a gap
    wall[0:2, 0:3] = 1
    for _ in range(6):
        wall[rng.randrange(height), rng.randrange(width)] = 1
    return wall


def world_case(name: str, boundary: str):
    """(state, tables, world) of a named test world on an odd canvas with agents on the edges."""
    height, width, agents = 11, 13, 300
    species = {"plain": 1, "walls": 1, "species2": 2, "species3": 3}[name]
    batch = 2 if name != "species3" else 1
    groups = batch * species
    wall = None
    if name in ("walls", "species3"):
        wall = torch.stack([walls(height, width, b) for b in range(batch)])
    group_params = [
        params(
            species_seed(10 + b, s),
            sensor_angle=20.0 + 15 * s,
            step_size=1.0 + 0.4 * s + 0.3 * b,
            decay=0.05 + 0.1 * s,
        )
        for b in range(batch)
        for s in range(species)
    ]
    tables = exact.build_tables(group_params)
    parts = []
    for g in range(groups):
        b, s = divmod(g, species)
        pattern = ("random", "disk", "ring")[s]
        parts.append(
            spawn(
                [species_seed(10 + b, s)],
                agents,
                width,
                height,
                pattern,
                0.45,
                wall=None if wall is None else wall[b],
            )
        )
    position = torch.cat([p.position for p in parts])
    # agents exactly on the edges and corners (where there is no wall)
    last_x, last_y = (width << FRAC) - 1, (height << FRAC) - 1
    for g in range(groups):
        for a, (x, y) in enumerate(
            [(last_x, last_y), (last_x, 5 << FRAC), (0, last_y), (7 << FRAC, 0), (last_x, 3 << FRAC)]
        ):
            free = wall is None or not wall[g // species, y >> FRAC, x >> FRAC]
            if free:
                position[g, 0, a], position[g, 1, a] = x, y
    gen = torch.Generator().manual_seed(3)
    trail = (torch.rand((groups, height, width), generator=gen) * 4).to(torch.float32)
    if wall is not None:
        trail = torch.where(wall.repeat_interleave(species, 0) != 0, 0.0, trail)
    state = api.State(
        position, torch.cat([p.heading for p in parts]), trail, torch.tensor(5, dtype=torch.int64)
    )
    mix = None
    if species > 1:
        rows = [[1.0, -0.5, 0.25], [-0.75, 1.0, 0.5], [0.5, 0.5, -1.0]]
        mix = torch.tensor(
            [rows[s][:species] for _ in range(batch) for s in range(species)], dtype=torch.float32
        )
    food = None
    if name in ("walls", "species2"):
        food = torch.zeros((groups, height, width), dtype=torch.float32)
        food[:, 4:6, 2:4] = 0.75
        food[0, 8, 9] = 2.5
    world = api.World(species=species, boundary=boundary, mix=mix, wall=wall, food=food)
    return state, tables, world


CASES = [
    (name, boundary) for name in ("plain", "walls", "species2", "species3") for boundary in api.BOUNDARIES
]


@pytest.mark.parametrize("name,boundary", CASES)
def test_reference_matches_the_naive_world_step(name, boundary):
    state, tables, world = world_case(name, boundary)
    for n in range(6):
        expected = naive_world_step(state, tables, world)
        state = reference.step(state, tables, world)
        assert_same_state(state, expected, f"after step {n + 1}")
    if world.wall is not None:  # agents never stand on walls; walls hold no trail
        wall = world.wall.repeat_interleave(world.species, 0) != 0
        cells = (state.position[:, 1] >> FRAC) * state.width + (state.position[:, 0] >> FRAC)
        assert not wall.view(state.batch, -1).gather(1, cells.to(torch.int64)).any()
        assert float(state.trail[wall].abs().sum()) == 0.0


def test_the_cases_reach_every_edge_rule():
    """The worlds above exercise what they are meant to: crossings of the edge that reflect
    and clamp treat unlike wrap, clamped agents held at the edge, agents stopped by walls."""
    state, tables, _ = world_case("plain", "wrap")
    wrapped = reference.step(state, tables)
    size = torch.tensor([state.width << FRAC, state.height << FRAC])[None, :, None]
    for boundary in ("reflect", "clamp"):
        moved = reference.step(state, tables, api.World(boundary=boundary))
        assert (moved.position >= 0).all() and (moved.position < size).all()
        assert (moved.position != wrapped.position).any(1).sum() >= 3, boundary
    clamped = reference.step(state, tables, api.World(boundary="clamp")).position
    assert ((clamped == 0) | (clamped == size - 1)).any(1).sum() >= 3
    state, tables, world = world_case("walls", "wrap")
    after = reference.step(state, tables, world)
    stopped = (after.position == state.position).all(1) & (after.heading != state.heading)
    assert stopped.sum() >= 3, "walls should stop some agents"


def test_species_of_one_and_the_default_world_are_the_plain_model():
    state, tables, _ = world_case("plain", "wrap")
    plain = reference.step(state, tables)
    assert_same_state(reference.step(state, tables, api.World()), plain)
    # a single species with weight 1 reads its own trail: the mix path gives the same bits
    world = api.World(species=1, boundary="wrap")
    assert_same_state(reference.step(state, tables, world), plain)


def test_world_rejects_bad_shapes():
    with pytest.raises(ValueError, match="boundary"):
        api.World(boundary="torus")
    with pytest.raises(ValueError, match="species"):
        api.World(species=5, mix=torch.zeros(5, 5))
    with pytest.raises(ValueError, match="mix"):
        api.World(species=2)
    with pytest.raises(ValueError, match="whole simulations"):
        api.World(species=2, mix=torch.zeros(3, 2)).simulations(3)


def test_image_spawn_follows_the_weights_exactly():
    weights = torch.zeros((6, 9), dtype=torch.int64)
    weights[1, 2], weights[4, 7] = 1, 3  # only two cells, one three times the other
    state = spawn([4], 4000, 9, 6, "image", density=weights)
    cells = ((state.position[0, 1] >> FRAC) * 9 + (state.position[0, 0] >> FRAC)).tolist()
    assert set(cells) == {1 * 9 + 2, 4 * 9 + 7}
    share = cells.count(4 * 9 + 7) / len(cells)
    assert 0.72 < share < 0.78
    with pytest.raises(ValueError, match="no cell"):
        spawn([4], 10, 9, 6, "image", density=torch.zeros((6, 9), dtype=torch.int64))


def test_brightness_table_is_exact_and_keeps_the_floor():
    table = exact.brightness_table(5.0)
    assert table.dtype == torch.float32 and table.shape == (256,)
    assert float(table[0]) == 0.0 and float(table[255]) == 5.0 and float(table[51]) == 1.0
    assert torch.all(table[1:] > table[:-1])
    tiny = exact.brightness_table(2.0**-95)
    assert float(tiny[1]) == 0.0 and float(tiny[255]) == 2.0**-95  # below the floor: 0


# ---------------------------------------------------------------------------------------------
# Triton against the reference (interpreter mode on the CPU, or CUDA).


def _triton_device() -> str | None:
    from physarum.kernels.triton_backend import interpreter_mode

    if torch.cuda.is_available():
        return "cuda"
    return "cpu" if interpreter_mode() else None


@pytest.mark.parametrize("sort_every", [0, 3])
@pytest.mark.parametrize("name,boundary", CASES)
def test_triton_matches_the_reference_in_every_world(name, boundary, sort_every):
    device = _triton_device()
    if device is None:
        pytest.skip("needs CUDA or TRITON_INTERPRET=1 set before Python starts")
    pytest.importorskip("triton")
    from physarum.kernels.triton_backend import TritonSimulation

    state, tables, world = world_case(name, boundary)
    expected = reference.TorchSimulation(state, tables, world)
    simulation = TritonSimulation(state, tables, sort_every=sort_every, device=device, world=world)
    for chunk in (1, 4, 2):
        expected.advance(chunk)
        simulation.advance(chunk)
        assert_same_state(simulation.state.to("cpu"), expected.state, f"at step {int(expected.state.step)}")
