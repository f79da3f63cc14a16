"""Mutations of a preset's model within documented ranges, reproducible from a seed.

Every random choice is kernels/exact.py's integer hash (lowbias32) of (seed, round, candidate,
slot), never Python's random, and every value is computed in Decimal arithmetic (correctly
rounded, the same on every machine) and rounded to SIGNIFICANT digits, so that a candidate's
preset is the same text everywhere.

A mutation changes each key of MUTATIONS with probability one half (at least one key): a key of
kind "log" is multiplied by spread ** e, a key of kind "linear" moved by e * spread, e uniform in
[-1, 1) (in [-1/2, 1/2) for the children of later rounds: CHILD_SCALE), then clamped to the key's
range. Ranges are absolute (angles, decay) or relative to the explored preset's own value
(distances: a quarter to four times; deposit an eighth to eight times; diffuse, whose pixel-unit
value scales with the canvas, a sixteenth to sixteen times and at most 1). The spreads (round
0's largest factor) are 3 for the angles, sensor distance and decay, 2 for step size and
deposit, 4 for diffuse. Only the top-level model is mutated (a species' own model values stay);
a scheduled value (keyframes) is left as it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Context, Decimal
from fractions import Fraction

from ...kernels.exact import lowbias32_int

SIGNIFICANT = 4  # digits of a mutated value
CHILD_SCALE = Fraction(1, 2)  # the exponent's range of a child, against round 0's
SALT = 0x6578706C  # "expl": explore's draws apart from any other use of the seed
_CONTEXT = Context(prec=34, rounding=ROUND_HALF_EVEN)


@dataclass(frozen=True)
class Mutation:
    """One mutable key: kind "log" (times spread ** e) or "linear" (plus e * spread); its range
    [low, high], absolute or (relative) times the explored preset's value."""

    key: str
    kind: str
    spread: Decimal
    low: Decimal
    high: Decimal
    relative: bool = False
    cap: Decimal | None = None  # an absolute bound above a relative range (the schema's)


MUTATIONS = (
    Mutation("sensor_angle", "log", Decimal(3), Decimal(2), Decimal(150)),
    Mutation("turn_angle", "log", Decimal(3), Decimal(2), Decimal(150)),
    Mutation("sensor_distance", "log", Decimal(3), Decimal("0.25"), Decimal(4), relative=True),
    Mutation("step_size", "log", Decimal(2), Decimal("0.25"), Decimal(4), relative=True),
    Mutation("deposit", "log", Decimal(2), Decimal("0.125"), Decimal(8), relative=True),
    Mutation("decay", "log", Decimal(3), Decimal("0.001"), Decimal("0.6")),
    Mutation("diffuse", "log", Decimal(4), Decimal("0.0625"), Decimal(16), relative=True, cap=Decimal(1)),
)
KEYS = tuple(m.key for m in MUTATIONS)


def draw(seed: int, round_: int, index: int, slot: int) -> int:
    """The 32-bit hash of (seed, round, candidate index, slot): lowbias32 chained over each."""
    value = lowbias32_int(seed ^ SALT)
    for part in (round_, index, slot):
        value = lowbias32_int(value ^ part)
    return value


def mutable_values(model: dict) -> dict[str, float]:
    """The model's values MUTATIONS may change: plain numbers (no schedules), by key."""
    return {
        m.key: float(model[m.key])
        for m in MUTATIONS
        if isinstance(model.get(m.key), (int, float)) and not isinstance(model.get(m.key), bool)
    }


def rounded(value: Decimal) -> Decimal:
    """`value` to SIGNIFICANT significant digits (half to even)."""
    if value == 0:
        return Decimal(0)
    exponent = value.adjusted() - SIGNIFICANT + 1
    return value.quantize(Decimal(1).scaleb(exponent), rounding=ROUND_HALF_EVEN)


def mutated_value(mutation: Mutation, value: float, origin: float, unit: Fraction) -> float:
    """One key's value moved by exponent `unit` in [-1, 1), clamped to its range (relative ranges
    times `origin`, the explored preset's value), rounded to SIGNIFICANT digits."""
    start = Decimal(repr(value))
    e = Decimal(unit.numerator) / Decimal(unit.denominator)
    if mutation.kind == "log":
        moved = _CONTEXT.multiply(start, _CONTEXT.power(mutation.spread, e))
    else:
        moved = start + e * mutation.spread
    scale = Decimal(repr(origin)) if mutation.relative else Decimal(1)
    low, high = mutation.low * scale, mutation.high * scale
    high = high if mutation.cap is None else min(high, mutation.cap)
    moved = rounded(min(max(moved, low), high))  # rounding may cross a bound: clamped again
    return float(min(max(moved, low), high))


def mutate(
    values: dict[str, float], origin: dict[str, float], seed: int, round_: int, index: int, child: bool
) -> dict[str, float]:
    """The mutated values of candidate `index` of round `round_` from `values` (the parent's; the
    explored preset's own are `origin`): each key changed with probability one half, at least one
    (module docstring). Only keys present in `origin` are changed."""
    mutations = [m for m in MUTATIONS if m.key in origin]
    if not mutations:
        return dict(values)
    chosen = [m for slot, m in enumerate(mutations) if draw(seed, round_, index, 2 * slot) & 1]
    if not chosen:
        chosen = [mutations[draw(seed, round_, index, 2 * len(mutations)) % len(mutations)]]
    scale = CHILD_SCALE if child else Fraction(1)
    result = dict(values)
    for m in chosen:
        slot = 2 * mutations.index(m) + 1
        unit = (Fraction(draw(seed, round_, index, slot), 1 << 31) - 1) * scale  # [-1, 1) * scale
        result[m.key] = mutated_value(m, values[m.key], origin[m.key], unit)
    return result


def changed(values: dict[str, float], origin: dict[str, float]) -> dict[str, float]:
    """The values that differ from the explored preset's (a candidate's label)."""
    return {key: value for key, value in values.items() if origin.get(key) != value}
