"""The 3D Triton backend (kernels/triton3d.py) against the 3D reference, byte for byte: tiny
volumes in Triton's CPU interpreter, a bigger one on a GPU (with the reference on CUDA too).

    TRITON_INTERPRET=1 python -m pytest tests/test_kernels_triton3d.py
"""

from __future__ import annotations

import pytest
import torch

from physarum.kernels import exact3d, reference3d
from physarum.kernels.api import ModelParams, World
from physarum.kernels.spawn3d import spawn3d

PARAMS = [
    ModelParams(30.0, 5.0, 22.5, 1.0, 5.0, 1.0, 0.1, 3),
    ModelParams(45.0, 3.5, 30.0, 0.7, 2.0, 0.5, 0.05, 9),
]


def _same(a, b) -> bool:
    return (
        torch.equal(a.position.cpu(), b.position.cpu())
        and torch.equal(a.heading.cpu(), b.heading.cpu())
        and torch.equal(a.trail.cpu().view(torch.int32), b.trail.cpu().view(torch.int32))
        and int(a.step) == int(b.step)
    )


def _compare(state, tables, world, steps, device="cpu", **options) -> None:
    from physarum.kernels.triton3d import TritonSimulation3D

    reference = reference3d.TorchSimulation3D(state.clone(), tables, world, device=device)
    triton = TritonSimulation3D(state.clone(), tables, world, device=device, **options)
    for step in range(steps):
        reference.advance(1)
        triton.advance(1)
        assert _same(reference.state, triton.state), f"differs after step {step + 1}"
    assert float(reference.trail.sum()) > 0


@pytest.mark.interpreter(cpu=True)
@pytest.mark.parametrize(
    "boundary, spawn",
    [  # the fast tier (pytest -m "not slow") runs one of the three
        pytest.param("wrap", "random", marks=pytest.mark.slow),
        pytest.param("reflect", "ball", marks=pytest.mark.slow),
        ("clamp", "sphere"),
    ],
)
def test_triton_matches_the_reference_in_the_interpreter(boundary, spawn, monkeypatch):
    """Diffuse programs march 5 slices (16 = 5 + 5 + 5 + 1: chunk edges and a short last one)."""
    from physarum.kernels import triton3d_kernels

    monkeypatch.setattr(triton3d_kernels, "DIFFUSE_BLOCK_Z", 5)
    state = spawn3d([3, 9], 1000, (16, 12, 20), spawn, radius=0.45)
    world = None if boundary == "wrap" else World(boundary=boundary)
    _compare(state, exact3d.build_tables3d(PARAMS), world, steps=3, sort_every=2)


@pytest.mark.gpu
@pytest.mark.parametrize("boundary", ["wrap", "reflect"])
def test_triton_matches_the_reference_on_a_gpu(boundary):
    """64^3-ish, 200k agents, 40 steps through CUDA graphs and sorts; the reference on CUDA and
    on the CPU agree too."""
    from physarum.kernels.triton3d import TritonSimulation3D

    state = spawn3d([11, 12], 200_000, (48, 64, 80), "ball", radius=0.4)
    tables = exact3d.build_tables3d(PARAMS)
    world = World(boundary=boundary)
    cpu = reference3d.TorchSimulation3D(state.clone(), tables, world)
    cuda = reference3d.TorchSimulation3D(state.clone(), tables, world, device="cuda")
    triton = TritonSimulation3D(state.clone(), tables, world, device="cuda", sort_every=16)
    for simulation in (cpu, cuda, triton):
        simulation.advance(40)
    assert _same(cpu.state, cuda.state) and _same(cpu.state, triton.state)


@pytest.mark.interpreter(cpu=True)
def test_the_sort_orders_agents_by_brick_keys_in_the_interpreter():
    """sort_agents3d (key and permutation kernels) gives torch's stable argsort of brick_keys, the
    agents' state moved together, on sides that are no multiple of a brick (padded edge bricks)."""
    from physarum.kernels.triton3d import brick_keys
    from physarum.kernels.triton_sort import sort_agents3d

    grid = (13, 10, 19)
    state = spawn3d([4, 5], 700, grid, "random")
    position, heading = state.position.clone(), state.heading.clone()
    agent_id = torch.arange(700, dtype=torch.int32).repeat(2, 1)
    sort_agents3d(position, heading, agent_id, grid)
    for b in range(2):
        order = torch.argsort(brick_keys(state.position[b], grid), stable=True)
        assert torch.equal(agent_id[b], order.to(torch.int32))
        assert torch.equal(position[b], state.position[b][:, order])
        assert torch.equal(heading[b], state.heading[b][order])
    keys = brick_keys(position[0], grid)
    assert bool((keys[1:] >= keys[:-1]).all()) and int(keys.unique().numel()) > 100
