"""The canvas units that the light commands need without the schema (pydantic): the reference
side of `units: short_side` and the agent count an `agents.density` gives."""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

REFERENCE_SIDE = 512  # the short side at which short_side units give `diffuse` as written


def density_count(density: float, sides: Sequence[int], units: str) -> Fraction:
    """The exact agent count of `density` on a canvas of `sides` (width, height[, depth]):
    density * W * H (* D: agents per voxel); with units: short_side, density per pixel of a
    REFERENCE_SIDE short side, density * W * H * (REFERENCE_SIDE / short)^2. The pattern's scale
    follows the number of agents per unit of *canvas* area (measured: docs/presets.md,
    "Resolution independence"), so a preset in canvas units keeps that fixed."""
    cells = Fraction(math.prod(sides))
    if units == "short_side":
        cells *= Fraction(REFERENCE_SIDE, min(sides)) ** 2
    return Fraction(density) * cells
