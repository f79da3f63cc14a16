"""The contract (kernels/api.py): its types, the Simulation protocol that every registered backend
keeps (kernels/__init__.py), and a third backend plugged in by registering it."""

from __future__ import annotations

import contextlib
import importlib.util
import inspect

import pytest
import torch

from physarum import kernels
from physarum.kernels import api, exact
from physarum.kernels.prototype import PrototypeSimulation
from physarum.kernels.spawn import spawn
from physarum.render.base.errors import RenderError
from physarum.render.run import machine
from physarum.render.sim import simulation
from support import assert_same_state, params


def test_world_rejects_bad_shapes():
    with pytest.raises(ValueError, match="boundary"):
        api.World(boundary="torus")
    with pytest.raises(ValueError, match="species"):
        api.World(species=5, mix=torch.zeros(5, 5))
    with pytest.raises(ValueError, match="mix"):
        api.World(species=2)
    with pytest.raises(ValueError, match="whole simulations"):
        api.World(species=2, mix=torch.zeros(3, 2)).simulations(3)


def test_state_concat_stacks_the_simulations_in_order():
    parts = [spawn([seed], 50, 13, 11, "random") for seed in (1, 2, 3)]
    parts[1].trail += 0.5
    batch = api.State.concat(parts)
    assert batch.batch == 3 and batch.agents == 50 and (batch.height, batch.width) == (11, 13)
    for b, part in enumerate(parts):
        assert torch.equal(batch.position[b], part.position[0])
        assert torch.equal(batch.heading[b], part.heading[0])
        assert torch.equal(batch.trail[b], part.trail[0])
    assert int(batch.step) == 0 and batch.step.shape == ()
    assert torch.equal(api.State.concat(parts[:1]).position, parts[0].position)
    later = parts[2].clone()
    later.step = later.step + 1
    with pytest.raises(ValueError, match="different steps"):
        api.State.concat([parts[0], later])
    with pytest.raises(ValueError, match="no states"):
        api.State.concat([])


# ---------------------------------------------------------------------------------------------
# The Simulation protocol and the registry.


def _backend_classes():
    names = ["torch"] + (["triton"] if importlib.util.find_spec("triton") else [])
    return [kernels.get_backend(name) for name in names]


@pytest.mark.parametrize("backend", _backend_classes(), ids=lambda cls: cls.name)
def test_registered_backends_keep_the_simulation_protocol(backend):
    assert issubclass(backend, object) and backend is kernels.get_backend(backend.name)
    parameters = list(inspect.signature(backend).parameters.values())
    assert [p.name for p in parameters[:4]] == ["state", "tables", "world", "device"]
    assert [p.default for p in parameters[2:4]] == [None, None]
    assert all(p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters[:4])
    assert all(p.kind is p.KEYWORD_ONLY and p.default is not p.empty for p in parameters[4:])
    per_agent, per_cell = backend.device_bytes(1000)
    assert per_agent > 0 and per_cell > 0
    assert isinstance(backend.phases, tuple) and backend.phases
    assert backend.dims == 2


@pytest.mark.parametrize(
    "backend",
    ["torch", pytest.param("triton", marks=pytest.mark.interpreter(cpu=True))],  # Triton on CPU tensors
)
def test_a_backends_state_has_the_shapes_its_dimensions_say(backend):
    """State: position [B, dims, N], heading [B, N], trail [B, *grid]; agents as the lanes hold them."""
    backend = kernels.get_backend(backend)
    start = spawn([1, 2], 40, 13, 11, "random")
    run = backend(start, exact.build_tables([params(seed=1), params(seed=2)]), device="cpu")
    run.advance(2)
    state = run.state
    assert state.dims == backend.dims and state.grid == (11, 13)
    assert state.position.shape == (2, backend.dims, 40) and state.heading.shape == (2, 40)
    assert tuple(run.trail.shape) == (2, *state.grid)
    position, heading = run.agents
    assert position.shape == state.position.shape and heading.shape == state.heading.shape


def test_a_backend_of_other_dimensions_is_refused_before_anything_is_spawned(monkeypatch, tiny_preset):
    monkeypatch.setattr(kernels, "BACKENDS", dict(kernels.BACKENDS))
    monkeypatch.setattr(simulation, "spawn_groups", lambda *a: pytest.fail("spawned"))
    kernels.register_backend("voxels", type("Voxels", (Echo,), {"name": "voxels", "dims": 3}))
    with pytest.raises(RenderError, match="voxels backend simulates 3D worlds, the preset is 2D"):
        simulation.make_batch_simulation([tiny_preset], "voxels", torch.device("cpu"))


def test_the_reference_is_a_simulation_and_times_its_phases():
    tables = exact.build_tables([params(seed=1), params(seed=2)])
    state = spawn([1, 2], 300, 23, 17, "random")
    simulation = kernels.get_backend("torch")(state.clone(), tables, None, device="cpu")
    assert isinstance(simulation, api.Simulation)
    entered = []

    @contextlib.contextmanager
    def phase(name):
        entered.append(name)
        yield

    simulation.profiled_step(phase)
    assert entered == list(simulation.phases)
    assert not isinstance(PrototypeSimulation(state, [params(seed=1), params(seed=2)]), api.Simulation)
    simulation.eager_step()
    expected = kernels.get_backend("torch")(state.clone(), tables)
    expected.advance(2)
    assert_same_state(simulation.state, expected.state)


class Echo:
    """A third backend for the registry test: the reference under another name, no options."""

    name = "echo"
    phases = ("step",)
    dims = 2

    def __init__(self, state, tables, world=None, device=None):
        self._inner = kernels.get_backend("torch")(state, tables, world, device)

    @property
    def state(self):
        return self._inner.state

    @property
    def trail(self):
        return self._inner.trail

    @property
    def agents(self):
        return self._inner.agents

    def advance(self, steps):
        self._inner.advance(steps)

    def eager_step(self):
        self._inner.eager_step()

    def profiled_step(self, phase):
        with phase("step"):
            self._inner.eager_step()

    def retune(self, tables, mix=None, food=None):
        self._inner.retune(tables, mix, food)

    @staticmethod
    def unusable_on(device):
        return None

    @staticmethod
    def device_bytes(agents):
        return 1000, 7


def test_a_registered_third_backend_is_built_and_sized_by_the_render_side(monkeypatch, tiny_preset):
    monkeypatch.setattr(kernels, "BACKENDS", dict(kernels.BACKENDS))
    kernels.register_backend("echo", Echo)
    assert kernels.get_backend("echo") is Echo
    echo = simulation.make_batch_simulation([tiny_preset], "echo", torch.device("cpu"))
    assert isinstance(echo, Echo) and isinstance(echo, api.Simulation)
    plain = simulation.make_batch_simulation([tiny_preset], "torch", torch.device("cpu"))
    echo.advance(3)
    plain.advance(3)
    assert_same_state(echo.state, plain.state)
    cells = tiny_preset.canvas.width * tiny_preset.canvas.height
    frame = cells * 8
    assert machine.estimated_bytes(tiny_preset, "echo") == tiny_preset.agents.count * 1000 + cells * 7 + frame
    with pytest.raises(ValueError, match="choose one of: torch, triton, echo"):
        kernels.get_backend("nothing")
