"""kernels/warmup.py: a simulation's first-step launches recorded without running a kernel (its
state unchanged, the kernels put back), specialised as every launch of a render, and compiled
into Triton's cache on a GPU; a render compiles them ahead where PHYSARUM_COMPILE_AHEAD=1."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
import torch

from physarum.kernels import triton_kernels, triton_sort, warmup
from support import build_preset, tiny_3d, tiny_data, world_data


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


@contextlib.contextmanager
def _launched() -> Iterator[set]:
    """Inside, every kernel of warmup.KERNEL_MODULES launched through its launcher runs as ever,
    and the key of the specialisation it compiles (warmup._key) is collected."""
    keys: set = set()
    saved = [
        (module, name, value)
        for module in warmup.KERNEL_MODULES
        for name, value in vars(module).items()
        if hasattr(value, "warmup") and hasattr(value, "__getitem__")
    ]

    class Traced:
        def __init__(self, kernel):
            self.kernel = kernel

        def __call__(self, *args, **kwargs):  # a device function called from a kernel
            return self.kernel(*args, **kwargs)

        def __getitem__(self, grid):
            def launch(*args, **kwargs):
                keys.add(warmup._key(warmup.Launch(self.kernel, grid, args, kwargs)))
                return self.kernel[grid](*args, **kwargs)

            return launch

    try:
        for module, name, value in saved:
            setattr(module, name, Traced(value))
        yield keys
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


@pytest.mark.slow
@pytest.mark.interpreter(cpu=True)
@pytest.mark.parametrize("kind", ["tiny", "world", "3d"])
def test_what_warmup_compiles_is_every_specialisation_a_render_launches(kind, images):
    """A render compiled ahead (runner.compile_ahead) compiles nothing at its first step only if
    the launches warmup records specialise as every launch of the render does (both parities'
    buffers, the sorts, the steps after them): the same keys, through Triton's interpreter."""
    from physarum.render.sim.simulation import make_batch_simulation

    data = {
        "tiny": tiny_data(run={"steps": 18, "steps_per_frame": 3}),
        "world": world_data(),
        "3d": tiny_3d(run={"steps": 12, "steps_per_frame": 3}),
    }[kind]
    preset = build_preset(data, str(images / "p.yaml"))
    simulation = make_batch_simulation([preset], "triton", torch.device("cpu"))
    ahead = {warmup._key(call) for call in warmup.launches(simulation)}
    with _launched() as rendered:
        simulation.advance(preset.run.steps)
    assert len(ahead) == 4 and rendered == ahead  # the sort's two kernels, the step's two


def test_a_render_compiles_ahead_only_where_the_switch_asks_on_a_triton_gpu():
    from physarum.render.run import runner

    on = {runner.COMPILE_AHEAD: "1"}
    cases = [
        (on, "torch", "cuda"),
        (on, "triton", "cpu"),
        ({}, "triton", "cuda"),
        ({runner.COMPILE_AHEAD: "0"}, "triton", "cuda"),
    ]
    for environ, backend, device in cases:
        assert runner.compile_ahead(object(), backend, torch.device(device), environ) is None


@pytest.mark.gpu
def test_a_render_compiled_ahead_says_so_and_finds_its_kernels_compiled(tmp_path, monkeypatch):
    from physarum.render.run import runner

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "cache"))  # cold: every kernel compiled
    monkeypatch.setenv(runner.COMPILE_AHEAD, "1")
    preset = build_preset(tiny_data(), "tiny.yaml")
    result = runner.render(preset, backend="triton", device="cuda", out_dir=tmp_path / "out", quiet=True)
    assert 0 < result.timings["compile_ahead_s"] <= result.timings["spawn_s"]
