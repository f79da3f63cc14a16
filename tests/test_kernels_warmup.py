"""kernels/warmup.py: a simulation's first-step launches recorded without running a kernel (its
state unchanged, the kernels put back), and compiled into Triton's cache on a GPU."""

from __future__ import annotations

import pytest
import torch

from physarum.kernels import triton_kernels, triton_sort, warmup
from support import build_preset, tiny_data


def _simulation(device: str):
    from physarum.render.sim.simulation import make_batch_simulation

    preset = build_preset(tiny_data(), "tiny.yaml")
    return make_batch_simulation([preset], "triton", torch.device(device))


@pytest.mark.interpreter(cpu=True)
def test_a_first_step_is_recorded_not_run_and_the_kernels_are_put_back():
    kernels = (triton_kernels._agent_kernel, triton_kernels._diffuse_kernel, triton_sort._sort_key_kernel)
    simulation = _simulation("cpu")
    before = simulation.state
    calls = warmup.launches(simulation)
    names = [call.name for call in calls]
    assert names == ["_sort_key_kernel", "_permute_agents_kernel", "_agent_kernel", "_diffuse_kernel"]
    after = simulation.state
    assert torch.equal(after.position, before.position) and torch.equal(after.trail, before.trail)
    assert int(after.step) == int(before.step)
    assert (
        triton_kernels._agent_kernel,
        triton_kernels._diffuse_kernel,
        triton_sort._sort_key_kernel,
    ) == kernels
    # the launches compile as the render's: the sorted lanes' agent kernel (warp-merged deposits
    # only on CUDA), the simulation's own buffers
    agent = calls[2]
    assert agent.args[0] is simulation._position and agent.args[2] is simulation._agent_id


def test_another_backend_has_no_launches_to_record():
    from physarum.render.sim.simulation import make_batch_simulation

    preset = build_preset(tiny_data(), "tiny.yaml")
    assert warmup.launches(make_batch_simulation([preset], "torch", torch.device("cpu"))) == []


@pytest.mark.gpu
def test_the_recorded_launches_compile_and_the_render_finds_them(tmp_path, monkeypatch):
    simulation = _simulation("cuda")
    done = warmup.compile_all(warmup.launches(simulation))
    assert len(done["kernels"]) == 4
    simulation.advance(3)  # the same specialisations: found in the kernels' own caches
    torch.cuda.synchronize()
