"""Mutations (render/explore/mutate.py): reproducible from the seed, within their ranges, rounded."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

from physarum.render.explore.mutate import (
    MUTATIONS,
    SIGNIFICANT,
    changed,
    draw,
    mutable_values,
    mutate,
    mutated_value,
    rounded,
)

ORIGIN = {
    "sensor_angle": 45.0,
    "sensor_distance": 9.0,
    "turn_angle": 45.0,
    "step_size": 1.0,
    "deposit": 3.0,
    "diffuse": 0.2,
    "decay": 0.12,
}
RANGE = {m.key: m for m in MUTATIONS}


def within(key: str, value: float) -> bool:
    m = RANGE[key]
    scale = Decimal(repr(ORIGIN[key])) if m.relative else Decimal(1)
    high = m.high * scale if m.cap is None else min(m.high * scale, m.cap)
    return m.low * scale <= Decimal(repr(value)) <= high


def test_the_same_seed_gives_the_same_mutations_and_another_seed_others():
    first = [mutate(ORIGIN, ORIGIN, 7, 0, i, child=False) for i in range(20)]
    assert first == [mutate(ORIGIN, ORIGIN, 7, 0, i, child=False) for i in range(20)]
    assert first != [mutate(ORIGIN, ORIGIN, 8, 0, i, child=False) for i in range(20)]
    assert draw(7, 0, 1, 2) == draw(7, 0, 1, 2) != draw(7, 1, 1, 2)


def test_every_mutation_changes_something_within_its_range_to_four_digits():
    for index in range(200):
        values = mutate(ORIGIN, ORIGIN, 3, 0, index, child=False)
        moved = changed(values, ORIGIN)
        assert moved, index
        for key, value in moved.items():
            assert within(key, value), (key, value)
            digits = Decimal(repr(value)).normalize().as_tuple().digits
            assert len(digits) <= SIGNIFICANT, value


def test_children_move_half_as_far_in_the_exponent():
    wide = mutated_value(RANGE["deposit"], 3.0, 3.0, Fraction(1, 2))
    narrow = mutated_value(RANGE["deposit"], 3.0, 3.0, Fraction(1, 2) * Fraction(1, 2))
    assert wide == 4.243  # 3 * 2 ** (1/2)
    assert narrow == 3.568  # 3 * 2 ** (1/4)
    assert mutated_value(RANGE["decay"], 0.5, 0.5, Fraction(99, 100)) == 0.6  # clamped to its range


def test_rounding_and_what_may_be_mutated():
    assert rounded(Decimal("123.456")) == Decimal("123.5")
    assert rounded(Decimal("0.000123456")) == Decimal("0.0001235")
    scheduled = {**ORIGIN, "decay": {"keys": {0: 0.1, 100: 0.2}}, "units": "pixels"}
    assert set(mutable_values(scheduled)) == set(ORIGIN) - {"decay"}
    values = [mutate(ORIGIN, mutable_values(scheduled), 1, 0, i, child=False) for i in range(50)]
    assert all(v["decay"] == ORIGIN["decay"] for v in values)
