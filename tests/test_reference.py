"""The PyTorch reference step against a slow, obviously-correct step, bit for bit.

The naive step below loops over agents and cells in plain Python: Python ints for positions and
headings, numpy float32 scalars for the trail, the order of operations of docs/model.md, and its
own copy of the lowbias32 hash. It reads only the contract's inputs (the Tables of
exact.build_tables). Every comparison is exact: integer state by value, the trail by bit pattern.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import numpy as np
import pytest
import torch

from physarum.kernels import api, exact, reference
from physarum.kernels.spawn import SPAWNS, spawn

HEADINGS = 4096
FRAC = 16
ONE_CELL = 1 << FRAC


# ---------------------------------------------------------------------------------------------
# The naive model.


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


def assert_same(state: api.State, sims: list[Sim], step: int) -> None:
    assert int(state.step) == step
    assert state.position.dtype == torch.int32 and state.heading.dtype == torch.int16
    assert state.trail.dtype == torch.float32
    for b, sim in enumerate(sims):
        assert state.position[b, 0].tolist() == sim.x, f"x differs in simulation {b}"
        assert state.position[b, 1].tolist() == sim.y, f"y differs in simulation {b}"
        assert state.heading[b].tolist() == sim.heading, f"heading differs in simulation {b}"
        expected = np.array(sim.trail, dtype=np.float32).view(np.int32)
        got = state.trail[b].numpy().view(np.int32)
        mismatch = np.argwhere(expected != got)
        assert mismatch.size == 0, f"trail differs in simulation {b} at {mismatch[:5].tolist()}"


def run_both(state: api.State, tables: api.Tables, steps: int) -> tuple[api.State, dict]:
    """Advance the reference and the naive step side by side, comparing after every step."""
    sims = sims_of(state)
    consts = [constants_of(tables, b) for b in range(state.batch)]
    branches: dict = {}
    start = int(state.step)
    for n in range(steps):
        sims = [naive_step(s, c, start + n, branches) for s, c in zip(sims, consts)]
        state = reference.step(state, tables)
        assert_same(state, sims, start + n + 1)
    return state, branches


def params(**changes) -> api.ModelParams:
    base = dict(
        sensor_angle=22.5,
        sensor_distance=2.0,
        turn_angle=45.0,
        step_size=1.0,
        deposit=5.0,
        diffuse=1.0,
        decay=0.1,
        seed=7,
    )
    base.update(changes)
    return api.ModelParams(**base)


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


# ---------------------------------------------------------------------------------------------
# The hash.


def test_hash_matches_contract_on_python_ints_and_tensors():
    values = [0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xDEADBEEF, 12345]
    values += random.Random(1).sample(range(2**32), 200)
    expected = [hash32(v) for v in values]
    assert [exact.lowbias32_int(v) for v in values] == expected
    assert exact.lowbias32(torch.tensor(values, dtype=torch.int64)).tolist() == expected
    assert hash32(1) != hash32(2) and hash32(0) == 0


def test_turn_bits_keyed_by_seed_step_and_agent():
    seeds = [7, 8]
    seed_key = torch.tensor([hash32(s) for s in seeds], dtype=torch.int64)
    for step in (0, 1, 2**32 + 5, 999):
        bits = exact.turn_bits(seed_key, torch.tensor(step), 64)
        for b in range(2):
            key = hash32(hash32(seeds[b]) ^ hash32(step & 0xFFFFFFFF))
            assert bits[b].tolist() == [hash32(a ^ key) >> 31 == 1 for a in range(64)]
        assert bits[0].tolist() != bits[1].tolist()
        assert 10 < int(bits.sum()) < 118


# ---------------------------------------------------------------------------------------------
# The reference step against the naive step.


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
    sims = sims_of(state)
    branches: dict = {}
    sims = [naive_step(s, constants_of(tables, b), 0, branches) for b, s in enumerate(sims)]
    after = reference.step(state, tables)
    assert_same(after, sims, 1)
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
        assert torch.equal(plan.turn_bit(plan.hash_before_last(torch.tensor(step))), -expected.to(torch.int8))


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
# Tables.


def test_unit_circle_is_exactly_symmetric_and_exact():
    table = exact.unit_circle()
    assert len(table) == HEADINGS
    assert table[0] == (2**30, 0) and table[HEADINGS // 4] == (0, 2**30)
    assert table[HEADINGS // 2] == (-(2**30), 0) and table[3 * HEADINGS // 4] == (0, -(2**30))
    for h, (c, s) in enumerate(table):
        assert table[-h % HEADINGS] == (c, -s)  # mirror in the x axis
        assert table[(HEADINGS // 2 - h) % HEADINGS] == (-c, s)  # mirror in the y axis
        assert table[(HEADINGS // 4 - h) % HEADINGS] == (s, c)  # mirror in the diagonal
        assert table[(h + HEADINGS // 4) % HEADINGS] == (-s, c)  # quarter turn
        assert abs(math.hypot(c, s) - 2**30) <= 1.0
    mpmath = pytest.importorskip("mpmath")  # installed with torch (through sympy)
    with mpmath.workdps(40):  # the first octant, independently; symmetry gives the rest
        for h in range(0, HEADINGS // 8 + 1):
            angle = 2 * mpmath.pi * h / HEADINGS
            assert table[h] == (
                int(mpmath.nint(mpmath.cos(angle) * 2**30)),
                int(mpmath.nint(mpmath.sin(angle) * 2**30)),
            ), h


def test_vector_table_rounds_the_circle_half_to_even():
    nine = exact.vector_table(9)
    assert nine[0] == (9 << 16, 0)
    assert nine[HEADINGS // 4] == (0, 9 << 16)
    assert nine[HEADINGS // 2] == (-(9 << 16), 0)
    for distance in (1, 3, 9):
        table = exact.vector_table(distance)
        for (c, s), (dx, dy) in zip(exact.unit_circle(), table):
            for unit, got in ((c, dx), (s, dy)):
                quotient, remainder = divmod(unit * distance, 2**14)
                if 2 * remainder > 2**14 or (2 * remainder == 2**14 and quotient % 2):
                    quotient += 1
                assert got == quotient
    half = exact.vector_table(2.0**-15)  # 2^30 * 2^-15 * 2^16 / 2^30 = 2: no rounding
    assert half[0] == (2, 0)
    tie = exact.vector_table(2.0**-17)  # exactly 0.5 in 16.16: rounds to even 0
    assert tie[0] == (0, 0) and exact.vector_table(3 * 2.0**-17)[0] == (2, 0)


def test_vector_table_equals_the_exact_rational_rounding_for_any_distance():
    """The integer form against its definition: round-half-even of unit * distance * ONE /
    2^UNIT_BITS computed in Fractions, for distances that are not whole pixels."""
    from fractions import Fraction

    for distance in (0.512, 1.536, 20.48, 1 / 3, 2.0**-17 * 5, 254.99999):
        scale = Fraction(distance) * (1 << 16) / 2**30
        expected = tuple((round(c * scale), round(s * scale)) for c, s in exact.unit_circle())
        assert exact.vector_table(distance) == expected, distance


def test_degrees_to_heading():
    assert exact.degrees_to_heading(22.5) == 256
    assert exact.degrees_to_heading(45) == 512
    assert exact.degrees_to_heading(360) == HEADINGS
    step = 360 / HEADINGS
    assert exact.degrees_to_heading(step / 2) == 0  # 0.5 -> 0 (even)
    assert exact.degrees_to_heading(3 * step / 2) == 2  # 1.5 -> 2 (even)
    assert exact.degrees_to_heading(-22.5) == -256


def test_tables_coefficients_are_float32_and_snap_tiny_values():
    tiny = 2.0**-21
    tables = exact.build_tables(
        [
            params(deposit=tiny, diffuse=1.0, decay=1.0 - tiny, seed=1),
            params(deposit=0.1, diffuse=9 * tiny, decay=0.25, seed=2),
            params(deposit=2.0**-20, diffuse=9 * 2.0**-20, decay=0.0, seed=3),
        ]
    )
    assert tables.deposit.tolist() == [0.0, float(np.float32(0.1)), 2.0**-20]
    assert tables.keep.tolist() == [0.0, float(np.float32(1 - 9 * tiny)), float(np.float32(1 - 9 * 2.0**-20))]
    assert tables.spread.tolist() == [float(np.float32(1 / 9)), 0.0, 2.0**-20]
    assert tables.retain.tolist() == [0.0, 0.75, 1.0]
    for name in ("deposit", "keep", "spread", "retain"):
        values = getattr(tables, name)
        assert values.dtype == torch.float32
        assert all(v == 0.0 or v >= api.MIN_COEFFICIENT for v in values.tolist())
    assert tables.seed_key.tolist() == [hash32(1), hash32(2), hash32(3)]
    assert tables.sense_offset.shape == (3, HEADINGS, 2)
    assert tables.sense_offset.dtype == torch.int32


# ---------------------------------------------------------------------------------------------
# Spawning.


def density(height: int, width: int) -> torch.Tensor:
    """Weights for `image` spawns: uneven, with empty cells."""
    return (torch.arange(height * width).reshape(height, width) * 7919) % 11


@pytest.mark.parametrize("how", SPAWNS)
def test_spawn_inside_canvas_and_reproducible(how):
    width, height, agents = 13, 11, 500
    extra = dict(density=density(height, width)) if how == "image" else {}
    state = spawn([1, 2], agents, width, height, how, **extra)
    assert state.position.shape == (2, 2, agents) and state.position.dtype == torch.int32
    assert state.heading.shape == (2, agents) and state.heading.dtype == torch.int16
    assert state.trail.shape == (2, height, width) and float(state.trail.abs().sum()) == 0.0
    assert int(state.step) == 0
    x, y = state.position[:, 0], state.position[:, 1]
    assert int(x.min()) >= 0 and int(x.max()) < width << FRAC
    assert int(y.min()) >= 0 and int(y.max()) < height << FRAC
    assert int(state.heading.min()) >= 0 and int(state.heading.max()) < HEADINGS
    again = spawn([1, 2], agents, width, height, how, **extra)
    assert torch.equal(again.position, state.position) and torch.equal(again.heading, state.heading)
    # a different seed changes the headings (and, except for 'center', the positions)
    assert not torch.equal(state.heading[0], state.heading[1])
    if how != "center":
        assert not torch.equal(state.position[0], state.position[1])
    assert torch.equal(spawn([2], agents, width, height, how, **extra).heading[0], state.heading[1])


def test_random_spawn_covers_the_canvas():
    state = spawn([9], 2000, 7, 5, "random")
    cells = set(zip((state.position[0, 0] >> FRAC).tolist(), (state.position[0, 1] >> FRAC).tolist()))
    assert len(cells) == 35
    assert len(set(state.heading[0].tolist())) > 1400  # about 1580 expected


def _offsets_from_centre(state, width, height):
    x = state.position[0, 0].double() / ONE_CELL - width / 2
    y = state.position[0, 1].double() / ONE_CELL - height / 2
    return x, y


def _spawn_distances(kind, seed, agents, width, height, radius):
    """A spawned state, each agent's distance from the centre, and the spawn radius in pixels."""
    state = spawn([seed], agents, width, height, kind, radius=radius)
    x, y = _offsets_from_centre(state, width, height)
    return state, x, y, torch.hypot(x, y), radius * min(width, height)


def test_disk_spawn_within_radius():
    _, _, _, distance, r_max = _spawn_distances("disk", 4, 3000, 64, 48, 0.3)
    assert float(distance.max()) <= r_max + 2.0**-15
    assert float(distance.max()) > 0.95 * r_max
    assert float(distance.min()) < 0.1 * r_max
    # uniform over the area: about a quarter of the agents within half the radius
    assert 0.2 < float((distance < r_max / 2).double().mean()) < 0.3


def test_ring_spawn_on_radius_facing_centre():
    state, x, y, distance, r_max = _spawn_distances("ring", 5, 1000, 64, 48, 0.35)
    assert float((distance - r_max).abs().max()) < 2.0**-15
    circle = torch.tensor(exact.unit_circle(), dtype=torch.float64) / 2**30
    facing = circle[state.heading[0].long()]
    cosine = -(facing[:, 0] * x + facing[:, 1] * y) / distance  # heading . (centre - position)
    assert float(cosine.min()) > 1 - 1e-6


def test_center_spawn_all_at_centre():
    state = spawn([6], 100, 13, 11, "center")
    assert state.position[0, 0].unique().tolist() == [13 * ONE_CELL // 2]
    assert state.position[0, 1].unique().tolist() == [11 * ONE_CELL // 2]


def test_unknown_spawn_rejected():
    with pytest.raises(ValueError, match="random, disk, ring, center"):
        spawn([1], 10, 7, 5, "spiral")
