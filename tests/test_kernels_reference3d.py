"""The 3D model's exact tables (kernels/exact3d.py), spawns (kernels/spawn3d.py) and reference
step (kernels/reference3d.py): invariants, hand-checked steps and the steering rule."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch

from physarum.kernels import exact3d, get_backend, reference3d, spawn3d
from physarum.kernels.api import ONE, UNIT_BITS, ModelParams, Simulation, State, World

PARAMS = ModelParams(30.0, 5.0, 22.5, 1.0, 5.0, 1.0, 0.1, 3)
GRID = (12, 10, 16)  # depth, height, width


def _tables(*params: ModelParams):
    return exact3d.build_tables3d(params or [PARAMS])


def test_every_direction_is_a_unit_vector_in_its_own_cell():
    u, e1, e2 = (t.astype(np.float64) / 2**UNIT_BITS for t in exact3d.frames())
    assert np.array_equal(exact3d.direction_of(exact3d.frames()[0]), np.arange(exact3d.DIRECTIONS))
    for v in (u, e1, e2):
        assert np.abs(np.linalg.norm(v, axis=1) - 1).max() < 1e-8
    assert np.abs((u * e1).sum(1)).max() < 1e-8 and np.abs((u * e2).sum(1)).max() < 1e-8
    assert exact3d.DIRECTIONS < 2**15  # a direction fits the int16 heading


def test_mirrors_are_involutions_and_negate_one_component():
    mirror, u = exact3d.mirrors(), exact3d.frames()[0]
    for column in range(4):
        assert np.array_equal(mirror[mirror[:, column], column], np.arange(exact3d.DIRECTIONS))
    flipped = u[mirror[:, 1]]
    assert np.array_equal(flipped[:, 1], -u[:, 1]) and np.array_equal(flipped[:, [0, 2]], u[:, [0, 2]])
    assert np.array_equal(u[mirror[:, 3]], -u)


def test_sensor_offsets_are_the_exactly_rounded_unit_vectors_and_turns_near_the_angle():
    table = exact3d.sense_table(30.0, 5.5)
    u = exact3d.frames()[0]
    for d in (0, 777, exact3d.DIRECTIONS - 1):
        exact = [round(Fraction(int(c) * 5 * ONE + int(c) * ONE // 2, 1 << UNIT_BITS)) for c in u[d]]
        assert table[d, 0, :3].tolist() == exact and table[d, 0, 3] == 0
    cone = table[:, 1:, :3].astype(np.float64)
    forward = table[:, :1, :3].astype(np.float64)
    cosine = (cone * forward).sum(-1) / (np.linalg.norm(cone, axis=-1) * np.linalg.norm(forward, axis=-1))
    assert np.abs(np.degrees(np.arccos(cosine)) - 30).max() < 0.01
    turned = exact3d.turn_table(22.5).astype(np.int64)
    assert np.array_equal(turned[:, 0], np.arange(exact3d.DIRECTIONS))
    angles = np.degrees(np.arccos(np.clip((u[:, None] * u[turned[:, 1:]]).sum(-1) / 2.0**60, -1, 1)))
    assert abs(angles.mean() - 22.5) < 0.1 and angles.max() < 25


def test_tables_are_the_same_when_built_again():
    a, b = _tables(), _tables()
    assert all(torch.equal(getattr(a, k), getattr(b, k)) for k in a.__dict__)
    assert a.spread.item() == np.float32(1 / 27)


@pytest.mark.parametrize(
    "forward, cone, bits, expected",
    [
        (1.0, [0.0, 0.0, 0.0, 0.0], 0, 0),  # forward strongest: keep
        (0.0, [0.0, 0.0, 0.0, 0.0], 0, 0),  # all equal (empty map): keep
        (1.0, [2.0, 1.0, 0.0, 0.0], 0xFFFF, 1),  # the strongest side
        (1.0, [1.0, 1.0, 1.0, 3.0], 0, 4),
        (0.0, [1.0, 2.0, 3.0, 4.0], 0, 1),  # every side beats forward: random, lowest bits -> first
        (0.0, [1.0, 2.0, 3.0, 4.0], 0xFFFF, 4),  # ... highest bits -> last
        (0.0, [1.0, 2.0, 3.0, 4.0], 0x8000, 3),  # (0x8000 * 4) >> 16 = 2: the third
        (1.0, [2.0, 0.0, 2.0, 0.0], 0x7FFF, 1),  # a tie of two strongest: the hash picks
        (1.0, [2.0, 0.0, 2.0, 0.0], 0x8000, 3),
    ],
)
def test_steering_rule(forward, cone, bits, expected):
    readings = torch.tensor([[[forward, *cone]]], dtype=torch.float32)
    assert reference3d.choose_sensor(readings, torch.tensor([[bits]])).item() == expected


def _one_agent(position, direction) -> State:
    return State(
        position=torch.tensor(
            [[[position[0] * ONE], [position[1] * ONE], [position[2] * ONE]]], dtype=torch.int32
        ),
        heading=torch.tensor([[direction]], dtype=torch.int16),
        trail=torch.zeros((1, *GRID), dtype=torch.float32),
        step=torch.zeros((), dtype=torch.int64),
    )


def test_one_agent_on_an_empty_volume_by_hand():
    tables = _tables(ModelParams(30.0, 3.0, 45.0, 2.0, 5.0, 1.0, 0.0, 1))
    direction = 1234
    state = reference3d.step3d(_one_agent((5, 4, 6), direction), tables)
    step = exact3d.step_table(2.0)[direction, :3]
    assert state.heading.item() == direction  # every reading 0: keep going
    assert state.position[0, :, 0].tolist() == [int(v) + o * ONE for v, o in zip(step, (5, 4, 6))]
    x, y, z = (state.position[0, :, 0] >> 16).tolist()
    # diffuse = 1, decay = 0: the deposit of 5 spreads as 5 * (1/27) to each of the 27 cells
    expected = np.float32(np.float32(1 / 27) * np.float32(5.0))
    nonzero = state.trail[0].nonzero().tolist()
    assert len(nonzero) == 27 and {tuple(c) for c in nonzero} == {
        (z + dz, y + dy, x + dx) for dz in (-1, 0, 1) for dy in (-1, 0, 1) for dx in (-1, 0, 1)
    }
    assert torch.all(state.trail[0][state.trail[0] != 0] == torch.tensor(expected))


def test_an_agent_turns_toward_the_sensor_that_reads_trail():
    tables = _tables(ModelParams(30.0, 3.0, 45.0, 1.0, 5.0, 1.0, 0.0, 1))
    direction, sensor = 5000, 3
    state = _one_agent((8, 5, 6), direction)
    offset = exact3d.sense_table(30.0, 3.0)[direction, sensor, :3]
    x, y, z = ((np.array([8, 5, 6]) * ONE + offset) >> 16).tolist()
    state.trail[0, z, y, x] = 1.0
    after = reference3d.step3d(state, tables)
    assert after.heading.item() == exact3d.turn_table(45.0)[direction, sensor]


@pytest.mark.parametrize("boundary", ["wrap", "reflect", "clamp"])
def test_boundaries_keep_agents_in_the_volume_and_mass_is_deposited(boundary):
    tables = _tables(ModelParams(40.0, 4.0, 30.0, 2.5, 1.0, 1.0, 0.0, 9))
    state = spawn3d.spawn3d([4], 600, GRID, "random")
    world = World(boundary=boundary)
    sizes = torch.tensor([GRID[2], GRID[1], GRID[0]])[None, :, None] << 16
    for _ in range(6):
        before = float(state.trail.double().sum())
        state = reference3d.step3d(state, tables, world)
        assert bool(((state.position >= 0) & (state.position < sizes)).all())
        assert state.heading.min() >= 0 and state.heading.max() < exact3d.DIRECTIONS
        if boundary == "wrap":  # diffusion on a torus moves trail, never loses it (float rounding aside)
            assert float(state.trail.double().sum()) == pytest.approx(before + 600, rel=1e-5)
    sim = reference3d.Reference3D(tables, GRID, boundary)
    assert int(sim.deposit_counts(state.position).sum()) == 600


def test_reflect_mirrors_the_direction_on_the_axis_crossed():
    tables = _tables(ModelParams(30.0, 3.0, 45.0, 2.0, 5.0, 1.0, 0.0, 1))
    u = exact3d.frames()[0]
    direction = int(np.argmax(u[:, 0]))  # straight along +x
    state = _one_agent((GRID[2] - 1, 4, 4), direction)
    after = reference3d.step3d(state, tables, World(boundary="reflect"))
    assert after.heading.item() == exact3d.mirrors()[direction, 0]
    size, moved = GRID[2] << 16, (GRID[2] - 1) * ONE + int(exact3d.step_table(2.0)[direction, 0])
    assert moved >= size and after.position[0, 0, 0].item() == (size - 1) - (moved - size)


def test_spawns_place_agents_as_documented():
    grid, n = (16, 20, 24), 2000
    centre = torch.tensor([12.0, 10.0, 8.0])[:, None]
    random = spawn3d.spawn3d([1, 2], n, grid, "random")
    assert random.position.shape == (2, 3, n) and random.trail.shape == (2, *grid)
    assert not torch.equal(random.position[0], random.position[1])
    assert torch.equal(spawn3d.spawn3d([1, 2], n, grid, "random").position, random.position)
    center = spawn3d.spawn3d([1], n, grid, "center").position[0].double() / ONE
    assert torch.all(center == centre)
    ball = spawn3d.spawn3d([1], n, grid, "ball", radius=0.25).position[0].double() / ONE
    r = (ball - centre).norm(dim=0)
    assert r.max() <= 0.25 * 16 + 1e-3 and (r < 0.25 * 16 / 2).float().mean() == pytest.approx(
        1 / 8, abs=0.03
    )
    sphere = spawn3d.spawn3d([1], n, grid, "sphere", radius=0.25)
    r = (sphere.position[0].double() / ONE - centre).norm(dim=0)
    assert torch.allclose(r, torch.full_like(r, 4.0), atol=1e-3)
    u = torch.from_numpy(exact3d.frames()[0]).double()[sphere.heading[0].long()]
    inward = ((centre - sphere.position[0].double() / ONE) * u.T).sum(0) / 4 / 2**30
    assert inward.min() > 0.99  # facing the centre
    with pytest.raises(ValueError, match="3D spawn"):
        spawn3d.spawn3d([1], 10, grid, "disk")


def test_cube_root_is_exact():
    n = torch.cat([torch.arange(0, 5000), torch.randint(0, 2**48, (5000,)), torch.tensor([2**48 - 1])])
    roots = spawn3d.cube_root_floor(n)
    for value, root in zip(n.tolist(), roots.tolist()):
        assert root**3 <= value < (root + 1) ** 3


def test_backends_are_chosen_by_dimensions():
    assert get_backend("torch", 3) is reference3d.TorchSimulation3D
    assert get_backend("torch", 3).dims == 3 and get_backend("torch").dims == 2
    simulation = reference3d.TorchSimulation3D(spawn3d.spawn3d([5], 100, GRID), _tables())
    assert isinstance(simulation, Simulation)  # the protocol every backend keeps
    simulation.advance(2)
    assert int(simulation.state.step) == 2 and simulation.trail.shape == (1, *GRID)
    with pytest.raises(ValueError, match="no species"):
        reference3d.TorchSimulation3D(
            spawn3d.spawn3d([5], 10, GRID), _tables(), World(species=2, mix=torch.eye(2))
        )
