"""The shape of a preset's world, read from the preset alone (no maps built, no torch): whether
it feeds the trail, whether the kernels need a World at all, and what presets must share to run
as one batched simulation. `physarum sweep --dry-run` groups its jobs by batch_key without
loading torch; render/world/maps.py and render/sim/simulation.py build what these describe.
"""

from __future__ import annotations


def has_food(preset) -> bool:
    """Whether a preset's world feeds the trail: food points or a food image."""
    food = preset.world.food if preset.world else None
    return food is not None and (bool(food.points) or food.image is not None)


def needs_world(preset) -> bool:
    """Whether the kernels need a World (otherwise they take their plain torus path)."""
    world = preset.world
    return (
        preset.species_count > 1
        or preset.boundary != "wrap"
        or has_food(preset)
        or (world is not None and world.walls is not None)
    )


def batch_key(preset) -> tuple:
    """What presets must share to run as one batched simulation: canvas, agent count, run length,
    and the shape of their world: species count, boundary, whether there are walls and food.

    Everything else may differ per simulation: model, seed, spawn pattern and radius (each
    simulation is spawned on its own), palette and outputs (each has its own colouring and files),
    interaction, images (each simulation has its own maps).
    """
    world = preset.world
    shape = (
        preset.species_count,
        preset.boundary,
        bool(world and world.walls),
        has_food(preset),
        needs_world(preset),
    )
    plain = (1, "wrap", False, False, False)
    if preset.canvas.depth is not None:  # a volume's batch shares its depth too
        shape += (("depth", preset.canvas.depth),)
    return (
        preset.canvas.width,
        preset.canvas.height,
        preset.agents.count,
        preset.run.steps,
        preset.run.steps_per_frame,
        preset.run.warmup,
    ) + (() if shape == plain else shape)
