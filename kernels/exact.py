"""The exact arithmetic of the contract, computed on the host: hashes, the unit circle, tables.

Everything here gives the same bits on every platform (docs/model.md sections 4, 5 and 7):

- lowbias32 (a 32-bit integer hash) on Python ints and on int64 tensors, the step key and the
  turn bit of every agent;
- the unit circle of HEADINGS steps at UNIT_BITS fixed point, summed in Decimal (independent of
  the platform's libm), and the 16.16 vector tables rounded half to even from it;
- angles as whole heading steps, exactly rounded float32 coefficients, and build_tables;
- brightness_table: 8-bit brightness as exactly rounded float32 trail.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction
from functools import lru_cache

import numpy as np
import torch

from .api import (
    HEADINGS,
    MIN_COEFFICIENT,
    ONE,
    TRAIL_FLOOR,
    U32,
    UNIT_BITS,
    ModelParams,
    Tables,
)

# ---------------------------------------------------------------------------------------------
# The hash: every random number of the model.


def lowbias32_int(x: int) -> int:
    """The 32-bit integer hash (Chris Wellons' lowbias32) on a Python int."""
    x &= U32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & U32
    x ^= x >> 15
    x = (x * 0x846CA68B) & U32
    x ^= x >> 16
    return x


def _mul32(x: torch.Tensor, constant: int) -> torch.Tensor:
    """(x * constant) mod 2^32 for int64 tensors in [0, 2^32), without int64 overflow."""
    low = x * (constant & 0xFFFF)
    high = ((x * (constant >> 16)) & 0xFFFF) << 16
    return (low + high) & U32


def lowbias32(x: torch.Tensor) -> torch.Tensor:
    """lowbias32 on an int64 tensor of values in [0, 2^32); the Triton kernels use uint32."""
    x = x & U32
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def step_key(seed_key: torch.Tensor, step: torch.Tensor) -> torch.Tensor:
    """[B] int64 key of one step of each simulation: lowbias32(seed_key ^ lowbias32(step))."""
    return lowbias32(seed_key ^ lowbias32(step.to(torch.int64) & U32))


def turn_bits(seed_key: torch.Tensor, step: torch.Tensor, agents: int) -> torch.Tensor:
    """[B, N] bool, the random turn direction of every agent in this step (True: turn +)."""
    key = step_key(seed_key, step)[:, None]
    agent = torch.arange(agents, dtype=torch.int64, device=seed_key.device)[None, :]
    return (lowbias32(agent ^ key) >> 31) == 1


# ---------------------------------------------------------------------------------------------
# The exact unit circle and the lookup tables built on it.


def decimal_cos_sin(turns: Fraction) -> tuple[Decimal, Decimal]:
    """cos and sin of an angle given in turns, to ~50 digits, by Taylor series."""
    with localcontext() as context:  # never the caller's precision or rounding
        context.prec, context.rounding = 60, ROUND_HALF_EVEN
        pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494")
        x = Decimal(turns.numerator) * 2 * pi / Decimal(turns.denominator)
        cos, sin, term_c, term_s = Decimal(0), Decimal(0), Decimal(1), x
        for n in range(40):
            cos += term_c
            sin += term_s
            term_c = -term_c * x * x / ((2 * n + 1) * (2 * n + 2))
            term_s = -term_s * x * x / ((2 * n + 2) * (2 * n + 3))
        return +cos, +sin


@lru_cache(maxsize=1)
def unit_circle() -> tuple[tuple[int, int], ...]:
    """(cos, sin) of every heading, rounded to UNIT_BITS fixed point, platform independent.

    Only the first octant is summed; the rest follows from symmetry so that the table is
    exactly symmetric (a heading and its mirror move agents by exactly mirrored vectors).
    """
    octant = HEADINGS // 8
    first = []
    for h in range(octant + 1):
        cos, sin = decimal_cos_sin(Fraction(h, HEADINGS))
        scale = 1 << UNIT_BITS
        first.append(
            (
                int((cos * scale).to_integral_value(rounding=ROUND_HALF_EVEN)),
                int((sin * scale).to_integral_value(rounding=ROUND_HALF_EVEN)),
            )
        )
    table = []
    for h in range(HEADINGS):
        quadrant, r = divmod(h, HEADINGS // 4)
        c, s = first[r] if r <= octant else first[HEADINGS // 4 - r][::-1]
        for _ in range(quadrant):
            c, s = -s, c
        table.append((c, s))
    return tuple(table)


def _round_half_even(value: Fraction) -> int:
    return round(value)  # Fraction.__round__ rounds half to even, exactly


def _divide_half_even(numerator: int, denominator: int) -> int:
    """numerator / denominator (denominator > 0) rounded half to even, in integers."""
    quotient, remainder = divmod(numerator, denominator)  # floor: 0 <= remainder < denominator
    if 2 * remainder > denominator or (2 * remainder == denominator and quotient & 1):
        quotient += 1
    return quotient


@lru_cache(maxsize=256)
def vector_table(distance: float) -> tuple[tuple[int, int], ...]:
    """16.16 (dx, dy) of a vector of `distance` pixels at every heading, exactly rounded:
    unit * distance * ONE / 2^UNIT_BITS with distance = n / d, a float's exact ratio.

    Integer arithmetic rather than Fractions (sweeps build two tables per job), and cached: a
    sweep's jobs mostly share their distances."""
    return tuple(map(tuple, vector_array(distance).tolist()))


@lru_cache(maxsize=256)
def vector_array(distance: float) -> np.ndarray:
    """vector_table as a read-only [HEADINGS, 2] int64 array. A distance that is a whole number
    of 1/ONE pixels (every scheduled one) takes numpy's int64 arithmetic, the same integers as
    the exact path, in about a millisecond: a ramp builds a table at every step."""
    n, d = float(distance).as_integer_ratio()
    numerator, denominator = n * ONE, d << UNIT_BITS
    if numerator % d == 0 and numerator // d < 1 << 32:  # |c * m| < 2^62: exact in int64
        table = _fixed_vector_array(numerator // d)
    else:
        table = np.array(
            [
                (_divide_half_even(c * numerator, denominator), _divide_half_even(s * numerator, denominator))
                for c, s in unit_circle()
            ],
            dtype=np.int64,
        )
    table.flags.writeable = False
    return table


@lru_cache(maxsize=1)
def _unit_circle_array() -> np.ndarray:
    return np.array(unit_circle(), dtype=np.int64)


def _fixed_vector_array(length: int) -> np.ndarray:
    """vector_array of a distance of length / ONE pixels: unit * length / 2^UNIT_BITS rounded
    half to even, in int64 (length < 2^32, |unit| <= 2^UNIT_BITS)."""
    product = _unit_circle_array() * length
    quotient = product >> UNIT_BITS  # floor, as divmod's
    twice_remainder = (product - (quotient << UNIT_BITS)) << 1
    half = 1 << UNIT_BITS
    up = (twice_remainder > half) | ((twice_remainder == half) & (quotient & 1 == 1))
    return quotient + up


def degrees_to_heading(degrees: float) -> int:
    """An angle in degrees as a whole number of heading steps (round half to even)."""
    return _round_half_even(Fraction(degrees) * HEADINGS / 360)


def float32_nearest(value: Fraction) -> float:
    """The float32 nearest to an exact value (ties to even), as a Python float holding it."""
    guess = np.float32(float(value))
    candidates = [np.nextafter(guess, np.float32(-np.inf)), guess, np.nextafter(guess, np.float32(np.inf))]
    best = min(candidates, key=lambda c: (abs(Fraction(float(c)) - value), int(c.view(np.int32)) & 1))
    return float(best)


def coefficients(params: ModelParams) -> tuple[float, float, float, float]:
    """(deposit, keep, spread, retain) rounded to float32; tiny values snap to 0."""
    return _coefficients(params.deposit, params.diffuse, params.decay)


@lru_cache(maxsize=1024)  # a ramp of one parameter builds tables at every step; the rest repeat
def _coefficients(deposit: float, diffuse: float, decay: float) -> tuple[float, float, float, float]:
    def snap(value: Fraction) -> float:
        v = float32_nearest(value)
        return 0.0 if v < MIN_COEFFICIENT else v

    diffuse, decay = Fraction(diffuse), Fraction(decay)
    return (snap(Fraction(deposit)), snap(1 - diffuse), snap(diffuse / 9), snap(1 - decay))


def coefficient_tensors(
    coeff: Sequence[tuple[float, float, float, float]], params: Sequence[ModelParams]
) -> dict[str, torch.Tensor]:
    """The per-simulation float32 coefficients (deposit, keep, spread, retain) of a batch and its
    seed keys, as the Tables fields of both models (2D: coefficients, 3D: coefficients3d)."""
    deposit, keep, spread, retain = (
        torch.tensor([c[i] for c in coeff], dtype=torch.float32) for i in range(4)
    )
    return dict(
        deposit=deposit,
        keep=keep,
        spread=spread,
        retain=retain,
        seed_key=torch.tensor([lowbias32_int(p.seed) for p in params], dtype=torch.int64),
    )


def build_tables(params: Sequence[ModelParams], device: torch.device | str = "cpu") -> Tables:
    """Lookup tables and float32 coefficients for a batch of simulations."""
    sense = np.stack([vector_array(p.sensor_distance) for p in params]).astype(np.int32)
    step = np.stack([vector_array(p.step_size) for p in params]).astype(np.int32)
    tables = Tables(
        sense_offset=torch.from_numpy(sense),
        step_offset=torch.from_numpy(step),
        sensor_turn=torch.tensor([degrees_to_heading(p.sensor_angle) for p in params], dtype=torch.int32),
        turn=torch.tensor([degrees_to_heading(p.turn_angle) for p in params], dtype=torch.int32),
        **coefficient_tensors([coefficients(p) for p in params], params),
    )
    return tables.to(device)


def brightness_table(scale: float) -> torch.Tensor:
    """[256] float32: an 8-bit brightness v as trail, float32(v / 255 * scale) exactly rounded,
    0 below TRAIL_FLOOR (so image trails and food keep the no-subnormal rule)."""
    values = [float32_nearest(Fraction(v, 255) * Fraction(scale)) for v in range(256)]
    return torch.tensor([0.0 if v < TRAIL_FLOOR else v for v in values], dtype=torch.float32)
