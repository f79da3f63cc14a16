"""From presets to a simulation: groups spawned alone, the World built from the maps, what a
batch must share, where agents spawn."""

from __future__ import annotations

import numpy as np
import torch

from physarum.kernels import exact
from physarum.kernels import spawn as spawning
from physarum.kernels.reference3d import TorchSimulation3D
from physarum.render.preset import build_preset
from physarum.render.preset.images import box_resize
from physarum.render.sim.simulation import (
    advance,
    batch_key,
    make_batch_simulation,
    make_simulation,
    simulation_maps,
    spawn_groups,
)
from physarum.render.world.maps import point_cells
from support import WORLD, tiny_data, world_data


def test_plain_presets_spawn_and_batch_as_before(tiny_preset):
    state, params, world = spawn_groups([tiny_preset])
    assert world is None and params == [tiny_preset.model_params()]
    plain = spawning.spawn([3], 400, 48, 32, "random", 0.35)
    assert torch.equal(state.position, plain.position) and torch.equal(state.heading, plain.heading)
    assert batch_key(tiny_preset) == (48, 32, 400, 24, 3, 0)


def test_initial_trail_food_and_image_spawn(images):
    preset = build_preset(world_data(), str(images / "p.yaml"))
    state, params, world = spawn_groups([preset])
    assert state.batch == 2 and state.agents == 200 and world.species == 2 and world.boundary == "reflect"
    gradient = box_resize(np.tile(np.arange(0, 256, 4, dtype=np.uint8), (40, 1)), 48, 32)
    expected = exact.brightness_table(2.0)[torch.from_numpy(gradient).long()]
    expected[:, :16] = 0  # no trail on walls
    assert torch.equal(state.trail[0], expected) and torch.equal(state.trail[1], expected)
    assert world.wall.shape == (1, 32, 48) and world.wall.dtype == torch.uint8 and world.wall[0, :, :16].all()
    assert world.mix.tolist() == [[1.0, -0.5], [-0.5, 1.0]]
    cells = torch.from_numpy(point_cells(0.75, 0.5, 0.1, 48, 32))
    assert world.food.shape == (2, 32, 48) and bool((world.food[0][cells] == 2.0).all())
    assert bool((world.food[0][~cells] == 0).all()) and torch.equal(world.food[0], world.food[1])
    x, y = state.position[1, 0] >> 16, state.position[1, 1] >> 16  # species 1 spawns on the square
    on_square = (x >= 12) & (x < 36) & (y >= 8) & (y < 24)
    assert int(on_square.sum()) > 150 and bool((x >= 16).all())  # those on the wall: moved off
    assert bool(((state.position[0, 0] >> 16) >= 16).all())  # species 0 too


def test_batch_key_separates_world_shapes(images):
    base = batch_key(build_preset(world_data(), str(images / "p.yaml")))
    others = [
        world_data(species=[{}, {}, {}], interaction=None),
        world_data(world={**WORLD, "boundary": "clamp"}),
        world_data(world={**WORLD, "walls": None}),
        world_data(world={**WORLD, "food": None}),
    ]
    keys = {batch_key(build_preset(d, str(images / "p.yaml"))) for d in others}
    assert base not in keys and len(keys) == 4
    plain = batch_key(build_preset(tiny_data(), "p"))
    image_trail = batch_key(
        build_preset(tiny_data(world={"trail_image": {"path": "gradient.png"}}), str(images / "p.yaml"))
    )
    assert plain == image_trail  # only the initial trail differs: one batch


def test_agents_are_spawned_on_the_simulations_device_up_to_a_size(monkeypatch):
    """Groups spawn where they will run (the meta device stands in for a GPU here: no values,
    only where tensors live); groups larger than SPAWN_ON_DEVICE_MAX spawn on the host, which has
    the memory for the spawn's temporaries."""
    from physarum.render.sim import simulation

    preset = build_preset(tiny_data(), "t.yaml")
    state, _, _ = spawn_groups([preset, preset.model_copy(update={"seed": 4})], "meta")
    assert {state.position.device.type, state.heading.device.type, state.trail.device.type} == {"meta"}
    assert tuple(state.position.shape) == (2, 2, preset.agents.count)
    monkeypatch.setattr(simulation, "SPAWN_ON_DEVICE_MAX", preset.agents.count - 1)
    state, _, _ = spawn_groups([preset], "meta")
    assert state.position.device.type == "cpu"


def test_simulation_b_of_a_batch_evolves_as_its_preset_alone(images):
    """Each group is spawned alone and the model is batch-independent: simulation_maps(b) of
    the batch is the maps of preset b simulated by itself, species and world included."""
    for data in (tiny_data(), world_data()):
        presets = [build_preset({**data, "seed": seed}, str(images / "p.yaml")) for seed in (3, 8)]
        batch = make_batch_simulation(presets, "torch", torch.device("cpu"))
        advance(batch, 5)
        for b, preset in enumerate(presets):
            alone = make_simulation(preset, "torch", torch.device("cpu"))
            advance(alone, 5)
            maps = simulation_maps(preset, batch.trail, b)
            assert torch.equal(maps, simulation_maps(preset, alone.trail, 0)), (preset.name, b)
        assert not torch.equal(
            simulation_maps(presets[0], batch.trail, 0), simulation_maps(presets[1], batch.trail, 1)
        )
    assert simulation_maps(presets[0], batch.trail, 1).shape == (2, 32, 48)  # S species maps [S, H, W]


def test_a_3d_preset_becomes_the_volume_model_of_its_backend():
    volume = {"width": 24, "height": 16, "depth": 12}
    presets = [
        build_preset(tiny_data(seed=s, canvas=volume, agents={"count": 300, "spawn": "ball"}), "v.yaml")
        for s in (1, 2)
    ]
    assert batch_key(presets[0]) == batch_key(presets[1]) != batch_key(build_preset(tiny_data(), "f.yaml"))
    simulation = make_batch_simulation(presets, "torch", torch.device("cpu"))
    assert isinstance(simulation, TorchSimulation3D) and simulation.dims == 3
    simulation.advance(2)
    state = simulation.state
    assert state.position.shape == (2, 3, 300) and state.trail.shape == (2, 12, 16, 24)
    assert not torch.equal(state.trail[0], state.trail[1])  # each simulation its own seed
