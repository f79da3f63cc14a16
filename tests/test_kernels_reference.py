"""The PyTorch reference step against the naive model (tests/naive.py), bit for bit: plain
canvases of every size class, every steering branch, and worlds (docs/model.md section 12:
boundaries, walls, food and species). Every comparison is exact: integer state by value, the
trail by bit pattern.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch

from naive import FRAC, HEADINGS, hash32, naive_step, steering
from physarum.kernels import api, exact, reference
from physarum.kernels.spawn import spawn
from support import WORLD_CASES, assert_same_state, params, world_case

ONE_CELL = 1 << FRAC


def run_both(
    state: api.State, tables: api.Tables, steps: int, world: api.World = api.EMPTY_WORLD
) -> tuple[api.State, dict]:
    """Advance the reference and the naive step side by side, comparing after every step."""
    expected, branches = state, {}
    for n in range(steps):
        expected = naive_step(expected, tables, world, branches)
        state = reference.step(state, tables, world)
        assert_same_state(state, expected, f"after step {n + 1}")
    return state, branches


def make_state(
    rng: random.Random,
    batch: int,
    agents: int,
    width: int,
    height: int,
    trail_density: float = 0.6,
    step: int = 0,
) -> api.State:
    """Agents at random and on every edge (x = 0, the last 16.16 position, ...), trail >= 0.01."""
    edges_x = [0, (width << FRAC) - 1, 1, (width << FRAC) - ONE_CELL, ONE_CELL - 1]
    edges_y = [0, (height << FRAC) - 1, 1, (height << FRAC) - ONE_CELL, ONE_CELL - 1]
    special_headings = [0, 1, HEADINGS // 4, HEADINGS // 2, 3 * HEADINGS // 4, HEADINGS - 1]
    position = torch.zeros((batch, 2, agents), dtype=torch.int32)
    heading = torch.zeros((batch, agents), dtype=torch.int16)
    trail = torch.zeros((batch, height, width), dtype=torch.float32)
    for b in range(batch):
        for a in range(agents):
            x = rng.randrange(width << FRAC)
            y = rng.randrange(height << FRAC)
            if a < len(edges_x) * len(edges_y):
                x, y = edges_x[a % len(edges_x)], edges_y[a // len(edges_x)]
            position[b, 0, a], position[b, 1, a] = x, y
            heading[b, a] = special_headings[a % 6] if a < 12 else rng.randrange(HEADINGS)
        for j in range(height):
            for i in range(width):
                if rng.random() < trail_density:
                    trail[b, j, i] = rng.uniform(0.01, 8.0)
    return api.State(position, heading, trail, torch.tensor(step, dtype=torch.int64))


@pytest.mark.parametrize("width,height", [(7, 5), (13, 11), (5, 7)])
def test_step_matches_naive_batch_of_two(width, height):
    rng = random.Random(width * 100 + height)
    short = min(width, height)
    batch = [
        params(
            sensor_angle=22.5,
            sensor_distance=(short - 1) / 2,
            turn_angle=45.0,
            step_size=1.0,
            deposit=5.0,
            diffuse=1.0,
            decay=0.1,
            seed=7,
        ),
        params(
            sensor_angle=45.0,
            sensor_distance=1.5,
            turn_angle=22.5 * 3,
            step_size=0.7,
            deposit=0.37,
            diffuse=0.3,
            decay=0.05,
            seed=123456789,
        ),
    ]
    tables = exact.build_tables(batch)
    state = make_state(rng, batch=2, agents=40, width=width, height=height)
    _, branches = run_both(state, tables, steps=5)
    assert sum(branches.values()) == 2 * 40 * 5
    assert branches.get("random", 0) > 0 and branches.get("keep", 0) > 0
    assert branches.get("left", 0) + branches.get("right", 0) > 0


def test_step_matches_naive_over_many_steps_and_odd_parameters():
    # diffuse 0 (keep 1, spread 0), decay 0 (retain 1), a step size and sensor
    # distance that are not whole pixels, a negative sensor angle, a late step count.
    batch = [
        params(
            sensor_angle=-30.0,
            sensor_distance=4.9,
            turn_angle=10.0,
            step_size=2.3,
            deposit=1.0,
            diffuse=0.0,
            decay=0.0,
            seed=0,
        ),
        params(
            sensor_angle=90.0,
            sensor_distance=3.25,
            turn_angle=180.0,
            step_size=4.99,
            deposit=100.0,
            diffuse=0.9,
            decay=0.5,
            seed=2**32 - 1,
        ),
    ]
    tables = exact.build_tables(batch)
    assert tables.keep[0].item() == 1.0 and tables.spread[0].item() == 0.0
    assert tables.retain[0].item() == 1.0
    state = make_state(random.Random(3), batch=2, agents=60, width=13, height=11, step=2**32 - 2)
    final, branches = run_both(state, tables, steps=6)
    assert set(branches) >= {"keep", "random", "left", "right"}
    assert not torch.equal(final.trail, state.trail)


def test_zero_trail_ties_keep_heading():
    tables = exact.build_tables([params(seed=3), params(seed=4, sensor_angle=45.0)])
    state = make_state(random.Random(5), batch=2, agents=30, width=7, height=5, trail_density=0.0)
    assert float(state.trail.abs().sum()) == 0.0
    branches: dict = {}
    expected = naive_step(state, tables, branches=branches)
    after = reference.step(state, tables)
    assert_same_state(after, expected)
    assert branches == {"tie": 60}
    assert torch.equal(after.heading, state.heading)


def test_crowded_cell_accumulates_deposits():
    width, height, agents = 13, 11, 50
    tables = exact.build_tables(
        [params(step_size=3.0, sensor_distance=2.0, deposit=0.25, diffuse=0.5, decay=0.2, seed=11)]
    )
    centre_x, centre_y = (6 << FRAC) + 100, (5 << FRAC) + 200
    position = torch.tensor([[[centre_x] * agents, [centre_y] * agents]], dtype=torch.int32)
    heading = torch.zeros((1, agents), dtype=torch.int16)  # all moving +x, zero trail: no turns
    state = api.State(position, heading, torch.zeros((1, height, width)), torch.tensor(0))
    after, _ = run_both(state, tables, steps=1)
    # all 50 agents land in cell (9, 5); only diffusion moves trail elsewhere
    assert after.position[0, 0].unique().tolist() == [centre_x + 3 * ONE_CELL]
    deposited = np.float32(0.25) * np.float32(agents)
    expected = np.float32(0.8) * (np.float32(0.5) * deposited + np.float32(0.5 / 9) * deposited)
    assert after.trail[0, 5, 9].item() == expected
    assert after.trail[0, 4, 8].item() == np.float32(0.8) * (np.float32(0.5 / 9) * deposited)
    assert float(after.trail.sum()) == pytest.approx(0.8 * 0.25 * agents, rel=1e-6)
    run_both(after, tables, steps=4)


def test_each_steering_branch_turns_as_the_rule_says():
    # one cell holds many agents heading +x; sensors 3 cells ahead at -90, 0, +90 degrees
    width, height, agents = 13, 11, 64
    turn = 45.0
    tables = exact.build_tables(
        [params(sensor_angle=90.0, sensor_distance=3.0, turn_angle=turn, step_size=1.0, seed=21)]
    )
    turn_steps = exact.degrees_to_heading(turn)
    x, y = (6 << FRAC) + ONE_CELL // 2, (5 << FRAC) + ONE_CELL // 2
    forward_cell, left_cell, right_cell = (5, 9), (2, 6), (8, 6)  # (row, column)

    def run(forward: float, left: float, right: float) -> list[int]:
        trail = torch.zeros((1, height, width))
        trail[0][forward_cell], trail[0][left_cell], trail[0][right_cell] = forward, left, right
        state = api.State(
            torch.tensor([[[x] * agents, [y] * agents]], dtype=torch.int32),
            torch.zeros((1, agents), dtype=torch.int16),
            trail,
            torch.tensor(0),
        )
        after, _ = run_both(state, tables, steps=1)
        return after.heading[0].tolist()

    assert run(3.0, 1.0, 2.0) == [0] * agents  # forward strongest: keep
    assert run(3.0, 3.0, 2.0) == [HEADINGS - turn_steps] * agents  # F == L > R: left
    assert run(1.0, 2.0, 1.0) == [HEADINGS - turn_steps] * agents  # left strongest
    assert run(1.0, 1.0, 2.0) == [turn_steps] * agents  # right strongest
    assert run(2.0, 2.0, 2.0) == [0] * agents  # three-way tie: keep
    assert run(1.0, 2.0, 2.0) == run(1.0, 2.0, 5.0)  # forward weakest: the hash decides alone
    randomly = run(1.0, 2.0, 2.0)
    assert set(randomly) == {turn_steps, HEADINGS - turn_steps}
    key = hash32(hash32(21) ^ hash32(0))  # seed key 21, step 0
    assert randomly == [turn_steps if hash32(a ^ key) >> 31 else HEADINGS - turn_steps for a in range(agents)]


def test_trail_below_floor_is_flushed():
    tables = exact.build_tables([params(deposit=1.0, diffuse=0.0, decay=0.5, seed=1)])
    trail = torch.zeros((1, 5, 7))
    trail[0, 1, 1] = 2.0**-100  # retained half: below the floor
    trail[0, 2, 2] = 2.0**-99  # retained half: exactly the floor, kept
    trail[0, 3, 3] = 2.0**-120
    state = api.State(
        torch.zeros((1, 2, 0), dtype=torch.int32),
        torch.zeros((1, 0), dtype=torch.int16),
        trail,
        torch.tensor(0),
    )
    after, _ = run_both(state, tables, steps=1)
    assert after.trail[0, 1, 1].item() == 0.0 and after.trail[0, 3, 3].item() == 0.0
    assert after.trail[0, 2, 2].item() == 2.0**-100


@pytest.mark.parametrize("width,height", [(16, 8), (16, 5), (5, 16), (8, 8)])
def test_step_matches_naive_on_power_of_two_sides(width, height):
    # Power-of-two sides take the reference's mask paths (wrap, cell rows), the others its
    # sign-bit wraps. Sensors and steps of almost half the short side cross the edges in one
    # move; a negative sensor angle and a turn of more than 360 degrees wrap the headings.
    short = min(width, height)
    batch = [
        params(
            sensor_angle=30.0,
            sensor_distance=short / 2 - 0.01,
            turn_angle=45.0,
            step_size=short / 2 - 0.3,
            seed=5,
        ),
        params(
            sensor_angle=-67.5,
            sensor_distance=1.3,
            turn_angle=400.0,
            step_size=0.9,
            deposit=2.5,
            diffuse=0.6,
            decay=0.2,
            seed=2**31,
        ),
    ]
    tables = exact.build_tables(batch)
    state = make_state(
        random.Random(width * 31 + height), batch=2, agents=50, width=width, height=height, step=2**31 - 3
    )
    _, branches = run_both(state, tables, steps=5)
    assert branches.get("random", 0) > 0 and branches.get("left", 0) + branches.get("right", 0) > 0


@pytest.mark.parametrize("on_host", [True, False])
def test_turn_bits_of_the_step_match_the_contract(monkeypatch, on_host):
    # The reference hashes 32-bit words in int32 (its products wrap mod 2^32) and, on the CPU,
    # the step keys as Python ints; exact.turn_bits (int64, no overflow) is the contract.
    if not on_host:  # the tensor path that CUDA and torch.compile take
        monkeypatch.setattr(torch.compiler, "is_compiling", lambda: True)
    seeds = [0, 1, 7, 2**31 - 1, 2**31, 2**32 - 1, 0xDEADBEEF]
    tables = exact.build_tables([params(seed=s) for s in seeds])
    agents = 70_000  # past 2^16, where agent ^ (agent >> 16) differs from agent
    plan = reference._plan(spawn(seeds, agents, 8, 8), tables)
    for step in (0, 1, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40 + 3):
        expected = exact.turn_bits(tables.seed_key, torch.tensor(step), agents)
        assert torch.equal(plan.turn_plus(plan.hash_before_last(torch.tensor(step))), expected)


def test_simulation_equals_steps_and_follows_a_replaced_state():
    tables = exact.build_tables([params(seed=1), params(seed=2, sensor_angle=45.0)])

    def same(a: api.State, b: api.State) -> bool:
        return (
            torch.equal(a.position, b.position)
            and torch.equal(a.heading, b.heading)
            and torch.equal(a.trail.view(torch.int32), b.trail.view(torch.int32))
            and torch.equal(a.step, b.step)
        )

    def stepped(state: api.State, steps: int) -> api.State:
        for _ in range(steps):
            state = reference.step(state, tables)
        return state

    state = make_state(random.Random(8), batch=2, agents=40, width=16, height=8)
    simulation = reference.TorchSimulation(state.clone(), tables)
    simulation.advance(2)
    simulation.advance(1)
    assert same(simulation.state, stepped(state, 3))
    other = make_state(random.Random(9), batch=2, agents=25, width=13, height=11, step=7)
    simulation.state = other.clone()  # another shape: the simulation must not reuse its plan
    simulation.advance(2)
    assert same(simulation.state, stepped(other, 2))


# ---------------------------------------------------------------------------------------------
# Worlds: every boundary, walls, food, 2 and 3 species, batches of simulations.


@pytest.mark.parametrize("name,boundary", WORLD_CASES)
def test_reference_matches_the_naive_world_step(name, boundary):
    state, tables, world = world_case(name, boundary)
    state, _ = run_both(state, tables, 6, world)
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


def test_steer_sign_is_the_steering_rule_on_every_order_of_the_readings():
    cases = [
        (f, lft, r, plus) for f in range(3) for lft in range(3) for r in range(3) for plus in (False, True)
    ]
    readings = torch.tensor([[[c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases]]]) * 0.5
    turn_plus = torch.tensor([[c[3] for c in cases]])
    sign = reference.steer_sign(readings.to(torch.float32), turn_plus)
    assert sign.dtype == torch.int8 and sign.shape == (1, len(cases))
    expected = [
        steering(np.float32(f), np.float32(lft), np.float32(r), plus, 1)[0] for f, lft, r, plus in cases
    ]
    assert sign[0].tolist() == expected
    assert set(expected) == {-1, 0, 1}
