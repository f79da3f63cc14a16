"""Worlds: the maps of a preset's world, on its canvas.

render/sim/simulation.py builds the kernels' World from these maps; interaction_mix and group_food
make its interaction and food tensors (which a keyframed simulation also hands its backend). The
images are read, checked and resized onto the canvas by render/preset/images.py (preset_pixels);
the maps built from them:

- walls: brightness >= threshold (or < threshold with invert) is wall (images.wall_pixels);
- trail image: brightness v seeds the trail with exact.brightness_table(scale)[v];
- food image: brightness v adds exact.brightness_table(amount)[v] every step; food points add
  float32(amount) in the cells whose centres lie within the radius (at least the cell holding
  the point); where sources overlap the largest amount wins;
- agents image (spawn: image): brightness is the weight of a cell in the agents' placement.

Trail on walls is 0, and the kernels ignore food there. Nothing here uses more than integers,
correctly rounded float64 operations in a fixed order, and exactly rounded float32 values.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

from ...kernels import exact
from ..preset.images import preset_pixels, spawn_image, wall_pixels
from ..preset.schedule import value_at
from .shape import has_food

# ---------------------------------------------------------------------------------------------
# Maps of one preset


def wall_cells(preset) -> np.ndarray | None:
    """[H, W] bool, True on walls; None without walls."""
    walls = preset.world.walls if preset.world else None
    if walls is None:
        return None
    return wall_pixels(preset_pixels(preset, walls.path), walls)


def initial_trail(preset, wall: np.ndarray | None) -> torch.Tensor | None:
    """[H, W] float32 trail every species starts with; None: the empty trail."""
    spec = preset.world.trail_image if preset.world else None
    if spec is None:
        return None
    pixels = preset_pixels(preset, spec.path)
    trail = exact.brightness_table(spec.scale)[torch.from_numpy(pixels).to(torch.int64)]
    return _off_walls(trail, wall)


def _off_walls(values: torch.Tensor, wall: np.ndarray | None) -> torch.Tensor:
    if wall is not None:
        values = torch.where(torch.from_numpy(wall), torch.zeros((), dtype=values.dtype), values)
    return values


def food_amounts(preset, step: int = 0) -> torch.Tensor | None:
    """[H, W] float32 trail added to every species' map in the step from `step` (scheduled
    amounts take their value there); None without food. On walls the kernels ignore it
    (api.World.free_food)."""
    if not has_food(preset):
        return None
    food = preset.world.food
    width, height = preset.canvas.width, preset.canvas.height
    amounts = torch.zeros((height, width), dtype=torch.float32)
    if food.image is not None:
        pixels = preset_pixels(preset, food.image.path)
        amount = float(value_at(food.image.amount, step, preset.end_step))
        amounts = exact.brightness_table(amount)[torch.from_numpy(pixels).to(torch.int64)]
    for point in food.points:
        cells = torch.from_numpy(point_cells(point.x, point.y, point.radius, width, height))
        amount = value_at(point.amount, step, preset.end_step)
        value = torch.tensor(exact.float32_nearest(amount), dtype=torch.float32)
        amounts = torch.where(cells, torch.maximum(amounts, value), amounts)
    return amounts


def interaction_mix(presets, step: int = 0) -> torch.Tensor | None:
    """[G, S] float32, the batch's interaction at `step`: each simulation's matrix (the identity
    where a preset gives none), each value the float32 nearest it; None for one species."""
    species = presets[0].species_count
    if species == 1:
        return None
    rows = []
    for preset in presets:
        matrix = preset.interaction_at(step) or [
            [Fraction(i == j) for j in range(species)] for i in range(species)
        ]
        rows.extend([[exact.float32_nearest(v) for v in row] for row in matrix])
    return torch.tensor(rows, dtype=torch.float32)


def group_food(presets, foods: list[torch.Tensor | None]) -> torch.Tensor | None:
    """[G, H, W] float32, each preset's food map (world.food_amounts; empty where it has none)
    for each of its species; None where no preset has food."""
    if all(food is None for food in foods):
        return None
    species, height, width = presets[0].species_count, presets[0].canvas.height, presets[0].canvas.width
    empty = torch.zeros((height, width), dtype=torch.float32)
    return torch.stack([food if food is not None else empty for food in foods for _ in range(species)])


def point_cells(x: float, y: float, radius: float, width: int, height: int) -> np.ndarray:
    """[H, W] bool: the cells whose centres lie within radius * short side of (x * W, y * H),
    and the cell holding that point; float64 operations, each correctly rounded, in this order."""
    cx, cy = x * width, y * height
    r = radius * min(width, height)
    column = (np.arange(width, dtype=np.float64) + 0.5) - cx
    row = (np.arange(height, dtype=np.float64) + 0.5) - cy
    inside = (row * row)[:, None] + (column * column)[None, :] <= r * r
    inside[min(int(cy), height - 1), min(int(cx), width - 1)] = True
    return inside


def spawn_density(preset, s: int) -> torch.Tensor | None:
    """[H, W] int64 weights of species s's `image` spawn; None for the other spawns."""
    image = spawn_image(preset, s)
    if image is None:
        return None
    return torch.from_numpy(preset_pixels(preset, image)).to(torch.int64)


# ---------------------------------------------------------------------------------------------
# A preset's maps together


@dataclass
class WorldMaps:
    """One preset's maps on the host: walls [H, W] bool, initial trail and food [H, W] float32."""

    wall: np.ndarray | None
    trail: torch.Tensor | None
    food: torch.Tensor | None

    @staticmethod
    def of(preset) -> WorldMaps:
        wall = wall_cells(preset)
        return WorldMaps(wall, initial_trail(preset, wall), food_amounts(preset))
