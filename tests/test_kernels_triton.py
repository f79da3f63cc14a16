"""The Triton backend against the PyTorch reference, byte for byte, in Triton's CPU interpreter.

Run with TRITON_INTERPRET=1 set before Python starts:
    TRITON_INTERPRET=1 python -m pytest tests/test_kernels_triton.py
Canvases are small and odd so that every mask, tile edge and wrap-around is exercised.
"""

from __future__ import annotations

import contextlib

import pytest
import torch

from physarum.kernels import api, exact, reference
from physarum.kernels.spawn import SPAWNS, spawn
from support import WORLD_CASES, assert_same_state, world_case

pytestmark = pytest.mark.interpreter(cpu=True)  # skipped by conftest.py where it cannot run

VEINS = api.ModelParams(
    sensor_angle=22.5,
    sensor_distance=9,
    turn_angle=45,
    step_size=1,
    deposit=5,
    diffuse=1.0,
    decay=0.1,
    seed=7,
)
# Per-simulation variety: angles, distances, sub-pixel and long steps, no diffusion, no decay,
# fast decay, zero sensor angle (all ties).
VARIED = [
    VEINS,
    api.ModelParams(40.0, 5.5, 30.0, 2.75, 1.5, 0.3, 0.05, 8),
    api.ModelParams(11.25, 3.0, 90.0, 0.4, 0.25, 0.0, 0.0, 2**32 - 1),
    api.ModelParams(0.0, 7.0, 180.0, 3.3, 2.0, 0.75, 0.99, 123456789),
]


@pytest.fixture(autouse=True)
def few_diffuse_programs(monkeypatch):
    """The interpreter runs a launch's programs one after another, so most tests use diffuse
    tiles of 16 x 64 cells (a few programs a step) instead of the tuned rows of 1 x 512 (one a
    row); it is the same kernel with other block sizes. test_canvas_wider_than_a_diffuse_tile
    runs the tuned tiles."""
    from physarum.kernels import triton_kernels

    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_H", 16)
    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_W", 64)


def _simulation(state: api.State, tables: api.Tables, **options):
    from physarum.kernels.triton_backend import TritonSimulation

    return TritonSimulation(state.clone(), tables, **options)


def _run_and_compare(state: api.State, tables: api.Tables, steps: int, every_step: bool = False, **options):
    """Advance the reference and the Triton backend from `state`; compare; return the states."""
    expected = reference.TorchSimulation(state.clone(), tables)
    actual = _simulation(state, tables, **options)
    if every_step:
        for index in range(steps):
            expected.advance(1)
            actual.advance(1)
            assert_same_state(actual.state, expected.state, f"after step {index + 1}")
    else:
        expected.advance(steps)
        actual.advance(steps)
        assert_same_state(actual.state, expected.state, f"after {steps} steps")
    return expected.state, actual.state


def _random_trail(batch: int, height: int, width: int, seed: int) -> torch.Tensor:
    """A non-zero trail with exact ties (quantized values) and empty cells."""
    generator = torch.Generator().manual_seed(seed)
    trail = torch.randint(0, 8, (batch, height, width), generator=generator).to(torch.float32)
    return trail * 0.75


def test_single_steps_match_on_odd_canvas():
    state = spawn([VEINS.seed], 1000, 37, 23, "random")
    _run_and_compare(state, exact.build_tables([VEINS]), steps=3, every_step=True)


@pytest.mark.slow
def test_thirty_steps_match_batch_with_varied_parameters():
    seeds = [p.seed for p in VARIED]
    state = spawn(seeds, 700, 61, 45, "random")
    _run_and_compare(state, exact.build_tables(VARIED), steps=30)


def test_trail_values_below_the_floor_flush_to_zero():
    state = spawn([21], 30, 37, 23, "random")
    generator = torch.Generator().manual_seed(21)
    scale = 1.0 + 3.0 * torch.rand((1, 23, 37), generator=generator)
    state.trail = (scale * api.TRAIL_FLOOR * 2.0).to(torch.float32)
    params = api.ModelParams(22.5, 5.0, 45.0, 1.0, 1.0, 0.5, 0.5, 21)
    expected, _ = _run_and_compare(state, exact.build_tables([params]), steps=2, every_step=True)
    flushed = expected.trail == 0
    assert flushed.any() and not flushed.all(), "the test should flush some cells, not all"


@pytest.mark.parametrize(  # the fast tier (pytest -m "not slow") runs the image spawn
    "pattern", [pytest.param(p, marks=[pytest.mark.slow] * (p != "image")) for p in SPAWNS]
)
def test_spawn_patterns_match(pattern):
    params = [VEINS, VARIED[1]]
    extra = dict(density=(torch.arange(23 * 37).reshape(23, 37) * 7919) % 11) if pattern == "image" else {}
    state = spawn([p.seed for p in params], 600, 37, 23, pattern, **extra)
    _run_and_compare(state, exact.build_tables(params), steps=12)


@pytest.mark.parametrize("sort_every", [0, 1])
@pytest.mark.parametrize("agents", [1, 1000, 2500])
def test_agent_counts_not_a_multiple_of_the_block(agents, sort_every):
    # sort_every=0: lanes hold agents in spawn order (no agent_id); 1: sorted before every step.
    state = spawn([5], agents, 37, 23, "disk")
    _run_and_compare(state, exact.build_tables([VEINS]), steps=8, sort_every=sort_every)


@pytest.mark.parametrize("tile", ["tuned", pytest.param((4, 32), marks=pytest.mark.slow)])
def test_canvas_wider_than_a_diffuse_tile(monkeypatch, tile):
    # With 4 x 32 tiles, 131 columns span five column tiles, the last of 3 columns, and 11 rows
    # three row tiles, the last of 3 rows; the tuned tiles are rows of 512 columns.
    from physarum.kernels import triton_kernels

    if tile == "tuned":
        monkeypatch.undo()  # the module's own tile sizes, not the fixture's
        tile = (triton_kernels.DIFFUSE_BLOCK_H, triton_kernels.DIFFUSE_BLOCK_W)
    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_H", tile[0])
    monkeypatch.setattr(triton_kernels, "DIFFUSE_BLOCK_W", tile[1])
    state = spawn([3], 900, 131, 11, "random")
    params = api.ModelParams(30.0, 4.0, 45.0, 1.5, 3.0, 0.6, 0.1, 3)
    _run_and_compare(state, exact.build_tables([params]), steps=10)


def _edge_state(width: int, height: int) -> api.State:
    """Agents exactly on the canvas edges and corners, facing every axis and diagonal."""
    xs = [
        0,
        1,
        api.ONE - 1,
        (width << api.FRAC_BITS) - 1,
        (width - 1) << api.FRAC_BITS,
        (width // 2) << api.FRAC_BITS,
    ]
    ys = [
        0,
        1,
        (height << api.FRAC_BITS) - 1,
        (height - 1) << api.FRAC_BITS,
        ((height - 1) << api.FRAC_BITS) + api.ONE - 1,
    ]
    headings = [0, 1, 511, 512, 1024, 1536, 2048, 2560, 3072, 3584, api.HEADINGS - 1]
    rows = [(x, y, h) for x in xs for y in ys for h in headings]
    position = torch.tensor([[x for x, _, _ in rows], [y for _, y, _ in rows]], dtype=torch.int32)
    heading = torch.tensor([h for _, _, h in rows], dtype=torch.int16)
    return api.State(
        position=position[None],
        heading=heading[None],
        trail=_random_trail(1, height, width, seed=1),
        step=torch.tensor(0),
    )


def test_agents_on_the_edges():
    state = _edge_state(37, 23)
    assert state.agents == 6 * 5 * 11
    # Long steps and sensors (under half the short side) cross the edges in one move.
    params = api.ModelParams(45.0, 11.0, 45.0, 9.5, 4.0, 0.5, 0.2, 99)
    _run_and_compare(state, exact.build_tables([params]), steps=4, every_step=True)


@pytest.mark.slow
def test_nonzero_initial_trail_exercises_random_turns():
    params = [VEINS, VARIED[2]]
    state = spawn([p.seed for p in params], 1000, 37, 23, "random")
    state.trail = _random_trail(2, 23, 37, seed=4)
    tables = exact.build_tables(params)
    # Make sure the test can catch a wrong hash: some agents must take the random turn.
    x, y = state.position[:, 0], state.position[:, 1]
    heading = state.heading.to(torch.int32)
    turn = tables.sensor_turn[:, None]
    forward = reference.sense(state.trail, x, y, heading, tables)
    left = reference.sense(state.trail, x, y, (heading - turn) & api.HEADING_MASK, tables)
    right = reference.sense(state.trail, x, y, (heading + turn) & api.HEADING_MASK, tables)
    assert ((forward < left) & (forward < right)).sum() > 50
    _run_and_compare(state, tables, steps=15)


def test_step_counter_near_two_to_the_32():
    # The hash uses step mod 2^32; the counter itself keeps counting in int64.
    state = spawn([11], 800, 37, 23, "random")
    state.trail = _random_trail(1, 23, 37, seed=2)
    state.step = torch.tensor(2**32 - 2, dtype=torch.int64)
    expected, actual = _run_and_compare(state, exact.build_tables([VEINS]), steps=4, every_step=True)
    assert int(actual.step) == 2**32 + 2


def test_step_counter_advances_on_the_device():
    from physarum.kernels import triton_kernels

    state = spawn([1], 50, 37, 23, "random")
    simulation = _simulation(state, exact.build_tables([VEINS]))
    simulation.advance(3)
    assert int(simulation.state.step) == 3
    # The diffuse kernel alone increments the counter the agent kernel reads.
    trail, counts = torch.zeros(1, 23, 37), torch.zeros(1, 23, 37, dtype=torch.int32)
    step = torch.tensor(3, dtype=torch.int64)
    tables = exact.build_tables([VEINS])
    triton_kernels.diffuse_and_decay(trail, counts, counts.clone(), trail.clone(), step, tables)
    assert int(step) == 4


def test_chunked_advance_equals_single_steps_and_snapshots_are_copies():
    tables = exact.build_tables([VARIED[1]])
    state = spawn([VARIED[1].seed], 400, 37, 23, "ring")
    stepped, chunked = (_simulation(state, tables, sort_every=3), _simulation(state, tables, sort_every=3))
    for _ in range(6):
        stepped.advance(1)
    stepped.eager_step()
    chunked.advance(0)
    chunked.advance(7)
    snapshot = chunked.state
    assert_same_state(snapshot, stepped.state)
    assert all(map(torch.equal, stepped.agents, chunked.agents))  # eager_step keeps the schedule
    assert torch.equal(chunked.trail, snapshot.trail)
    chunked.advance(2)
    assert_same_state(snapshot, stepped.state)  # the snapshot did not change with the simulation


def test_profiled_steps_wrap_each_launch_in_its_phase_and_keep_the_schedule():
    tables = exact.build_tables([VARIED[1]])
    state = spawn([VARIED[1].seed], 400, 37, 23, "random")
    profiled, plain = _simulation(state, tables, sort_every=2), _simulation(state, tables, sort_every=2)
    assert isinstance(profiled, api.Simulation)
    entered = []

    @contextlib.contextmanager
    def phase(name):
        assert name in profiled.phases
        entered.append(name)
        yield

    for _ in range(3):
        profiled.profiled_step(phase)
    plain.advance(3)
    step = ["sense/steer/move/deposit", "diffuse"]
    assert entered == ["sort"] + step + step + ["sort"] + step  # sorted at steps 0 and 2
    assert_same_state(profiled.state, plain.state)
    assert all(map(torch.equal, profiled.agents, plain.agents))


class _RecordingGraph:
    """Stands in for torch.cuda.CUDAGraph: launches made while capturing are recorded, not
    run, and replay runs them again with the same arguments, as a CUDA graph does."""

    capturing = None

    def __init__(self):
        self.launches = []

    def replay(self):
        for launch, args in self.launches:
            launch(*args)


@contextlib.contextmanager
def _capture(graph):
    _RecordingGraph.capturing = graph
    try:
        yield
    finally:
        _RecordingGraph.capturing = None


def _recorded(launch):
    def run_or_record(*args):
        if _RecordingGraph.capturing is None:
            launch(*args)
        else:
            _RecordingGraph.capturing.launches.append((launch, args))

    return run_or_record


@pytest.mark.slow
@pytest.mark.parametrize("sort_every", [0, 5])
def test_graph_chunks_keep_buffer_parity_and_sort_schedule(monkeypatch, sort_every):
    # The graph bookkeeping (chunk lengths, start parities, remainders, chunks cut at sorts)
    # with CUDA graphs emulated on the CPU; the real capture is exercised by the GPU tests.
    from physarum.kernels import triton_backend, triton_kernels, triton_sort

    for name in ("move_agents", "diffuse_and_decay"):
        monkeypatch.setattr(triton_backend, name, _recorded(getattr(triton_kernels, name)))
    sorted_at = []

    def sort_agents(*args):
        assert _RecordingGraph.capturing is None, "sorts run between graphs, never inside"
        sorted_at.append(int(actual.state.step))
        triton_sort.sort_agents(*args)

    captured = []  # (steps, start parity) of each capture: the state starts at step 0

    @contextlib.contextmanager
    def capture(graph):
        step = int(actual.state.step)
        with _capture(graph):
            yield
        first = graph.launches[0][1]  # move_agents(position, heading, agent_id, trail, ...)
        assert first[3] is actual.trail, "a graph starts from the buffers of the current parity"
        captured.append((len(graph.launches) // 2, step & 1))

    monkeypatch.setattr(triton_backend, "sort_agents", sort_agents)
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _RecordingGraph)
    monkeypatch.setattr(torch.cuda, "graph", capture)
    monkeypatch.setattr(triton_backend, "GRAPH_CHUNK", 8)
    tables = exact.build_tables([VARIED[1]])
    state = spawn([VARIED[1].seed], 300, 37, 23, "random")
    expected = reference.TorchSimulation(state.clone(), tables)
    actual = _simulation(state, tables, sort_every=sort_every, graphs=True)
    for steps in (1, 5, 3, 19, 5, 1, 8):
        expected.advance(steps)
        actual.advance(steps)
        assert_same_state(actual.state, expected.state, f"after advance({steps})")
    assert len(captured) == len(set(captured)), f"a chunk captured twice, not replayed: {captured}"
    if sort_every:
        assert sorted_at == list(range(0, 42, sort_every))
        assert {(5, 1), (4, 1), (5, 0), (2, 0), (3, 0)} <= set(captured)
        assert max(chunk for chunk, _ in captured) <= sort_every
    else:
        assert sorted_at == []
        assert {(5, 1), (3, 0), (8, 1), (8, 0), (5, 0)} <= set(captured)


def test_graphs_are_off_in_the_interpreter_by_default_and_when_asked(monkeypatch):
    # Without graphs=True no graph is captured here (the default is CUDA only), nor with False.
    monkeypatch.setattr(torch.cuda, "CUDAGraph", _RecordingGraph)
    monkeypatch.setattr(torch.cuda, "graph", lambda graph: pytest.fail("a graph was captured"))
    tables = exact.build_tables([VEINS])
    state = spawn([VEINS.seed], 50, 37, 23, "random")
    for options in ({}, {"graphs": False}):
        _simulation(state, tables, sort_every=0, **options).advance(5)


# ---------------------------------------------------------------------------------------------
# Spatial sorting: agents change lanes, the results do not change.


@pytest.mark.slow
def test_sorted_runs_match_reference_and_resume_from_snapshots():
    # Three simulations, an odd canvas, agents spanning two blocks, a trail with ties so that
    # many agents take the random turn (whose hash must follow the agent, not its lane).
    params = VARIED[:3]
    agents, width, height = 1500, 53, 29
    state = spawn([p.seed for p in params], agents, width, height, "random")
    state.trail = _random_trail(3, height, width, seed=9)
    tables = exact.build_tables(params)
    expected = reference.TorchSimulation(state.clone(), tables)
    actual = _simulation(state, tables, sort_every=3)
    for steps in (1, 4, 2, 5):
        expected.advance(steps)
        actual.advance(steps)
        assert_same_state(actual.state, expected.state, f"at step {int(expected.state.step)}")
    lanes, spawned = _agent_rows(*actual.agents), _agent_rows(actual.state.position, actual.state.heading)
    assert torch.equal(lanes.sort(dim=1).values, spawned.sort(dim=1).values), "not a permutation"
    assert (lanes != spawned).float().mean() > 0.9, "the sort did not reorder"

    resumed = _simulation(actual.state, tables, sort_every=3)
    assert torch.equal(_agent_rows(*resumed.agents), spawned)  # a State holds agents in spawn order
    expected.advance(3)
    resumed.advance(3)
    assert_same_state(resumed.state, expected.state, "after resuming")


def _agent_rows(position: torch.Tensor, heading: torch.Tensor) -> torch.Tensor:
    """[B, N] int64: each agent's position and heading packed into one number (16.16 x and y
    within the canvas, heading 0 .. 2^16), so that lanes compare as whole agents."""
    x, y = position[:, 0].to(torch.int64), position[:, 1].to(torch.int64)
    return (x << 40) | (y << 16) | heading.to(torch.int64) & 0xFFFF


def test_rejects_negative_sort_every():
    from physarum.kernels.triton_backend import TritonSimulation

    state = spawn([1], 10, 37, 23, "random")
    with pytest.raises(ValueError, match="sort_every"):
        TritonSimulation(state, exact.build_tables([VEINS]), sort_every=-1)


def test_rejects_bad_tables():
    from physarum.kernels.triton_backend import TritonSimulation

    state = spawn([1], 10, 37, 23, "random")
    tables = exact.build_tables([VEINS, VEINS])
    with pytest.raises(ValueError, match="tables.sense_offset"):
        TritonSimulation(state, tables)


@pytest.mark.slow
def test_segmented_sort_and_single_count_map_match_reference(monkeypatch):
    # Large runs sort in segments and keep one count map cleared by a memset, to save memory;
    # both must leave results unchanged. Segments of 700 lanes over 1500 agents: three, the
    # last one short (tests/test_kernels_triton_sort.py checks the order within each).
    from physarum.kernels import triton_backend, triton_kernels, triton_sort

    monkeypatch.setattr(triton_sort, "SORT_SEGMENT", 700)
    monkeypatch.setattr(triton_backend, "COUNTS_DOUBLE_BUFFER_BYTES", 0)
    params = VARIED[:2]
    state = spawn([p.seed for p in params], 1500, 41, 27, "random")
    state.trail = _random_trail(2, 27, 41, seed=4)
    tables = exact.build_tables(params)
    maps = []  # (this step's, the next step's) count map of every diffuse launch

    def diffuse_and_decay(trail, counts, next_counts, *args):
        maps.append((counts.data_ptr(), next_counts.data_ptr()))
        triton_kernels.diffuse_and_decay(trail, counts, next_counts, *args)

    monkeypatch.setattr(triton_backend, "diffuse_and_decay", diffuse_and_decay)
    simulation = _simulation(state, tables, sort_every=2)
    expected = reference.TorchSimulation(state.clone(), tables)
    for steps in (1, 3, 4):
        expected.advance(steps)
        simulation.advance(steps)
        assert_same_state(simulation.state, expected.state, f"at step {int(expected.state.step)}")
    assert len(maps) == 8 and all(now == after for now, after in maps), "not one count map"


# ---------------------------------------------------------------------------------------------
# Worlds: the test worlds of tests/support.py, sorted and unsorted.


@pytest.mark.parametrize("sort_every", [0, pytest.param(3, marks=pytest.mark.slow)])  # fast tier: unsorted
@pytest.mark.parametrize("name,boundary", WORLD_CASES)
def test_triton_matches_the_reference_in_every_world(name, boundary, sort_every):
    from physarum.kernels.triton_backend import TritonSimulation

    state, tables, world = world_case(name, boundary)
    expected = reference.TorchSimulation(state, tables, world)
    simulation = TritonSimulation(state, tables, sort_every=sort_every, device="cpu", world=world)
    for chunk in (1, 4, 2):
        expected.advance(chunk)
        simulation.advance(chunk)
        assert_same_state(simulation.state.to("cpu"), expected.state, f"at step {int(expected.state.step)}")
