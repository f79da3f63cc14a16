"""GPU checks of the exactness contract: Triton on CUDA and the reference on CUDA against the
reference on the CPU, byte for byte. Skipped (with the reason) where no CUDA GPU is present;
results on an H200 are recorded in benchmarks/ (benchmarks/README.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from physarum.kernels import get_backend, reference
from physarum.kernels.api import ModelParams, State
from physarum.kernels.exact import build_tables
from physarum.kernels.spawn import spawn
from support import WORLD_CASES, assert_same_state, world_case

pytestmark = pytest.mark.gpu  # skipped by conftest.py where no CUDA GPU is present

PARAMS = [
    ModelParams(22.5, 9, 45, 1, 5, 1.0, 0.1, 7),
    ModelParams(60, 14.5, 30, 1.7, 2.5, 0.3, 0.02, 8),
    ModelParams(90, 3, 90, 0.6, 10, 0.0, 0.3, 9),
]


def simulate(
    backend: str, device: str, steps: int, width=301, height=203, agents=50_001, chunks=(1,), **options
):
    """The simulation after `steps` steps, advanced in pieces of the given lengths."""
    state = spawn([p.seed for p in PARAMS], agents, width, height, "random", device=device)
    simulation = get_backend(backend)(state, build_tables(PARAMS, device=device), **options)
    done = 0
    while done < steps:
        for chunk in chunks:
            simulation.advance(min(chunk, steps - done))
            done += min(chunk, steps - done)
    return simulation


def run(backend: str, device: str, steps: int, **kwargs):
    return simulate(backend, device, steps, **kwargs).state.to("cpu")


@pytest.mark.parametrize("steps", [1, 300])
def test_reference_on_cuda_matches_cpu(steps):
    assert_same_state(run("torch", "cuda", steps), run("torch", "cpu", steps))


@pytest.mark.parametrize("steps", [1, 300])
def test_triton_on_cuda_matches_reference_on_cpu(steps):
    assert_same_state(run("triton", "cuda", steps), run("torch", "cpu", steps))


def test_graph_replays_match_eager_steps():
    eager = run("triton", "cuda", 257, chunks=(1,))
    graphs = run("triton", "cuda", 257, chunks=(64, 7, 5, 3))
    assert_same_state(eager, graphs)


def test_triton_large_canvas_matches_reference_on_cuda():
    kwargs = dict(width=2048, height=1536, agents=1_000_003)
    assert_same_state(run("triton", "cuda", 200, **kwargs), run("torch", "cuda", 200, **kwargs))


def test_sorted_and_unsorted_triton_match_reference_on_a_million_agents():
    from physarum.kernels.triton_backend import SORT_EVERY

    kwargs = dict(width=1024, height=1024, agents=1_000_003, chunks=(64, 7, 5, 3))
    expected = run("torch", "cuda", 300, **kwargs)
    for sort_every in (0, 7, SORT_EVERY):
        simulation = simulate("triton", "cuda", 300, sort_every=sort_every, **kwargs)
        assert_same_state(simulation.state.to("cpu"), expected)
        if sort_every:  # the lanes really were reordered, and still hold every agent once
            state = simulation.state.to("cpu")
            lanes = [tensor.to("cpu") for tensor in simulation.agents]
            assert torch.equal(_in_one_order(*lanes), _in_one_order(state.position, state.heading))
            assert (_places(lanes[0]) != _places(state.position)).float().mean() > 0.9


def _places(position: torch.Tensor) -> torch.Tensor:
    """[B, N] int64: each agent's 16.16 x and y (each below 2^30) packed as (x << 32) | y."""
    return position[:, 0].to(torch.int64) << 32 | position[:, 1].to(torch.int64)


def _in_one_order(position: torch.Tensor, heading: torch.Tensor) -> torch.Tensor:
    """[B, N, 2] int64: each simulation's agents as (place, heading) rows sorted by place, then
    heading: equal for any two orders of the same agents."""
    rows = torch.stack((_places(position), heading.to(torch.int64)), dim=2)
    for column in (1, 0):  # stable sorts, the last by the first key
        order = rows[..., column].argsort(dim=1, stable=True)
        rows = rows.gather(1, order[..., None].expand_as(rows))
    return rows


def world_run(backend: str, device: str, boundary: str, steps: int = 300):
    """2 simulations of 2 species on 301 x 203 with walls and food, chunks of 64, 7, 5, 3."""
    from physarum.kernels.api import World
    from physarum.kernels.spawn import species_seed

    width, height, agents, species = 301, 203, 20_001, 2
    wall = torch.zeros((2, height, width), dtype=torch.uint8)
    wall[0, 50:60, 20:280] = 1
    wall[1, :, 150] = 1
    wall[1, 100:110, 150] = 0
    food = torch.zeros((4, height, width), dtype=torch.float32)
    food[:, 150:160, 30:40] = 0.5
    seeds = [species_seed(b + 1, s) for b in range(2) for s in range(species)]
    params = [replace(PARAMS[g % 3], seed=seeds[g]) for g in range(4)]
    parts = [
        spawn([seeds[g]], agents, width, height, ("random", "disk")[g % 2], 0.3, wall=wall[g // species])
        for g in range(4)
    ]
    state = State.concat(parts).to(device)
    mix = torch.tensor([[1.0, -0.5], [-0.25, 1.0]] * 2)
    world = World(species=species, boundary=boundary, mix=mix, wall=wall, food=food)
    simulation = get_backend(backend)(state, build_tables(params, device=device), world=world)
    done = 0
    while done < steps:
        for chunk in (64, 7, 5, 3):
            simulation.advance(min(chunk, steps - done))
            done += min(chunk, steps - done)
    return simulation.state.to("cpu")


@pytest.mark.parametrize("boundary", ["wrap", "reflect", "clamp"])
def test_worlds_on_cuda_match_the_reference_on_cpu(boundary):
    expected = world_run("torch", "cpu", boundary)
    assert_same_state(world_run("triton", "cuda", boundary), expected)
    assert_same_state(world_run("torch", "cuda", boundary), expected)


@pytest.mark.parametrize("how", ["random", "disk", "ring", "center", "image"])
def test_spawning_on_the_gpu_gives_the_cpus_state(how):
    """Spawns run on the device they are asked for (sweeps spawn millions of agents there): the
    integer hashes and the correctly rounded float64 placement give the same bits as on the CPU,
    walls and image weights included."""
    width, height = 301, 203
    y, x = torch.meshgrid(torch.arange(height), torch.arange(width), indexing="ij")
    density = ((x * 7919 + y * 104729) % 11) if how == "image" else None
    wall = ((x // 20 + y // 20) % 3 == 0).to(torch.uint8)
    for walls in (None, wall):
        states = [
            spawn(
                [3, 4, 5], 40_001, width, height, how, radius=0.3, device=device, density=density, wall=walls
            )
            for device in ("cpu", "cuda")
        ]
        for name in ("position", "heading", "trail", "step"):
            assert torch.equal(getattr(states[0], name), getattr(states[1], name).cpu()), (how, name)


@pytest.mark.parametrize("sort_every", [0, 3])
@pytest.mark.parametrize("name,boundary", WORLD_CASES)
def test_triton_on_cuda_matches_the_reference_in_every_test_world(name, boundary, sort_every):
    """The interpreter's world test (tests/test_kernels_triton.py) on the GPU."""
    from physarum.kernels.triton_backend import TritonSimulation

    state, tables, world = world_case(name, boundary)
    expected = reference.TorchSimulation(state, tables, world)
    simulation = TritonSimulation(state, tables, sort_every=sort_every, device="cuda", world=world)
    for chunk in (1, 4, 2):
        expected.advance(chunk)
        simulation.advance(chunk)
        assert_same_state(simulation.state.to("cpu"), expected.state, f"at step {int(expected.state.step)}")
