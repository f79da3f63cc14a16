"""The contract's plain numbers and the model's parameters, without torch.

kernels/api.py re-exports every name here; this module exists so that what only reads a preset
(the preset stage, `physarum presets`, `validate`) imports no torch. Numbers that must agree bit
for bit across backends (see docs/model.md):

- Headings are integers on a circle of ``HEADINGS`` steps (12 bits).
- Positions are int32 fixed point with ``FRAC_BITS`` fractional bits (16.16).
- The canvas side is at most ``MAX_CANVAS`` cells, distances at most ``MAX_DISTANCE`` pixels.
"""

from __future__ import annotations

from dataclasses import dataclass

HEADING_BITS = 12
HEADINGS = 1 << HEADING_BITS
HEADING_MASK = HEADINGS - 1
FRAC_BITS = 16
ONE = 1 << FRAC_BITS
UNIT_BITS = 30  # fixed point of the exact unit circle
MAX_CANVAS = 16384  # keeps (canvas + offsets) << FRAC_BITS inside int32
MAX_DISTANCE = 255.0  # sensor distance and step size, pixels
MAX_SIDE_3D = 1024  # a 3D canvas side (canvas.depth set): a volume has fewer than 2^31 cells
U32 = 0xFFFFFFFF

# Trail values below this are flushed to zero, so no backend ever meets a subnormal float
# (GPUs may flush them, CPUs do not). Coefficients are 0 or >= MIN_COEFFICIENT, which keeps
# every intermediate product of normal trail values normal.
TRAIL_FLOOR = 2.0**-100
MIN_COEFFICIENT = 2.0**-20

BOUNDARIES = ("wrap", "reflect", "clamp")
MAX_SPECIES = 4


@dataclass(frozen=True)
class ModelParams:
    """One simulation's parameters in the model's own units (degrees, pixels)."""

    sensor_angle: float
    sensor_distance: float
    turn_angle: float
    step_size: float
    deposit: float
    diffuse: float
    decay: float
    seed: int
