"""The one place a preset becomes a simulation.

A batch of presets that share batch_key() becomes one simulation of B * S groups (g = b * S + s:
species s of simulation b): each group spawned alone from its preset's seed, the kernels' World
built from the presets' world maps (render/world/maps.py), the model's tables built from each
group's parameters, and the chosen backend's simulation made from them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import torch

from ...kernels import api, get_backend
from ...kernels import spawn as spawning
from ...kernels.exact import build_tables
from ...kernels.exact3d import build_tables3d
from ...kernels.spawn3d import spawn3d
from ..base.errors import RenderError
from ..preset import Preset
from ..world.maps import (
    WorldMaps,
    food_amounts,
    group_food,
    interaction_mix,
    spawn_density,
)
from ..world.shape import batch_key as batch_key  # the runner's and the tests' name
from ..world.shape import has_food, needs_world
from .keyframes import KeyframedSimulation

SPAWN_ON_DEVICE_MAX = 1 << 25  # agents per group spawned on the simulation's device; more, on the host


def spawn_groups(
    presets, device: torch.device | str = "cpu", step: int = 0
) -> tuple[api.State, list[api.ModelParams], api.World | None]:
    """The batch's initial state (one group per species of each simulation, g = b * S + s), on
    `device`, or on the host for groups of more than SPAWN_ON_DEVICE_MAX agents; each group's
    parameters and the World on the host (None when no preset needs one) at `step` (where
    scheduled values stand then)."""
    species = presets[0].species_count
    if presets[0].agents_per_species > SPAWN_ON_DEVICE_MAX:
        device = "cpu"  # the device needs about 40 bytes an agent while spawning; a host has more
    states, params, maps = [], [], []
    for preset in presets:
        world = WorldMaps.of(preset) if preset.has_world else WorldMaps(None, None, None)
        maps.append(world)
        # bool as it is; moved once here for all the preset's species (spawn moves it otherwise)
        wall = None if world.wall is None else torch.from_numpy(world.wall).to(device)
        for s in range(species):
            agents = preset.species_agents(s)
            state = spawning.spawn(
                [spawning.species_seed(preset.seed, s)],
                preset.agents_per_species,
                preset.canvas.width,
                preset.canvas.height,
                agents.spawn,
                agents.radius,
                device=device,
                density=spawn_density(preset, s),
                wall=wall,
            )
            if world.trail is not None:
                state.trail[0] = world.trail
            states.append(state)
            params.append(preset.model_params(s, step))
    state = api.State.concat(states)
    if not any(needs_world(p) for p in presets):
        return state, params, None
    if step and any(has_food(p) for p in presets):
        maps = [dataclasses.replace(m, food=food_amounts(p, step)) for p, m in zip(presets, maps)]
    return state, params, make_world(presets, maps, step)


def make_world(presets, maps: list[WorldMaps], step: int = 0) -> api.World:
    """The kernels' World of a batch at `step`: each simulation's species interaction (the
    identity where a preset gives none; each value the float32 nearest it), walls per simulation
    and food per group (empty maps for presets without them; None where no preset has any)."""
    species = presets[0].species_count
    wall = None
    if any(m.wall is not None for m in maps):
        height, width = presets[0].canvas.height, presets[0].canvas.width
        wall = torch.stack(
            [
                torch.from_numpy(m.wall.astype(np.uint8))
                if m.wall is not None
                else torch.zeros((height, width), dtype=torch.uint8)
                for m in maps
            ]
        )
    mix, food = interaction_mix(presets, step), group_food(presets, [m.food for m in maps])
    return api.World(species=species, boundary=presets[0].boundary, mix=mix, wall=wall, food=food)


def make_batch_simulation(
    presets: Sequence[Preset], backend: str, device: torch.device, start: api.State | None = None
):
    """One simulation of B = len(presets) (B * S groups): each group spawned alone, then stacked.

    Spawning one at a time gives each simulation exactly the state make_simulation gives it, and
    the model is batch-independent, so simulation b evolves as the preset rendered alone would.
    Presets without world, species or image spawns run the kernels' plain path (no World).
    start: the state to begin from instead of the spawned one (a checkpoint's, of these shapes).
    Presets that schedule values run behind a KeyframedSimulation (render/sim/keyframes.py)."""
    backend_class = get_backend(backend, presets[0].dims)
    if presets[0].dims == 3:
        return _volume_simulation(presets, backend_class, device, start)
    if backend_class.dims != presets[0].dims:
        raise RenderError(
            f"{presets[0].name}: the {backend} backend simulates {backend_class.dims}D worlds, the "
            f"preset is {presets[0].dims}D; choose a backend of {presets[0].dims} dimensions"
        )
    step = 0 if start is None else int(start.step)
    state, params, world = spawn_groups(presets, device, step)
    state = state if start is None else start
    tables = build_tables(params, device=device)
    simulation = backend_class(state, tables, world, device=device)  # it moves them to `device`
    if not any(p.simulation_schedules for p in presets):
        return simulation
    return KeyframedSimulation(simulation, presets, step)


def spawn_volumes(presets, device: torch.device | str = "cpu") -> tuple[api.State, list[api.ModelParams]]:
    """A 3D batch's initial state (kernels/spawn3d.py: one simulation per preset, one species)
    and each one's parameters; on the host for more than SPAWN_ON_DEVICE_MAX agents."""
    if presets[0].agents.count > SPAWN_ON_DEVICE_MAX:
        device = "cpu"
    canvas = presets[0].canvas
    grid = (canvas.depth, canvas.height, canvas.width)
    states = [
        spawn3d([p.seed], p.agents.count, grid, p.agents.spawn, p.agents.radius, device=device)
        for p in presets
    ]
    return api.State.concat(states), [p.model_params() for p in presets]


def _volume_simulation(presets, backend_class, device, start: api.State | None):
    """The 3D model's simulation of a batch (reference3d / triton3d): state [B, 3, N] and
    trail [B, Z, Y, X]; the world only sets the boundary."""
    state, params = (
        spawn_volumes(presets, device) if start is None else (start, [p.model_params() for p in presets])
    )
    world = None if presets[0].boundary == "wrap" else api.World(boundary=presets[0].boundary)
    return backend_class(state, build_tables3d(params, device=device), world, device=device)


def make_simulation(preset: Preset, backend: str, device: torch.device):
    """The chosen backend's simulation of one preset, spawned on `device`."""
    return make_batch_simulation([preset], backend, device)


def simulation_maps(preset: Preset, trail: torch.Tensor, b: int) -> torch.Tensor:
    """What colours simulation b of a batch: its trail map [H, W], or with a species section the
    maps of its S species [S, H, W] (groups b * S .. b * S + S - 1)."""
    if preset.species is None:
        return trail[b]
    species = preset.species_count
    return trail[b * species : (b + 1) * species]


def advance(simulation, steps: int, on_step: Callable[[object], None] | None = None) -> None:
    """Advance `steps` steps; with on_step, one step at a time, calling on_step(simulation) after
    each (on CUDA this gives up the Triton backend's graph chunks)."""
    if on_step is None:
        simulation.advance(steps)
        return
    for _ in range(steps):
        simulation.advance(1)
        on_step(simulation)
