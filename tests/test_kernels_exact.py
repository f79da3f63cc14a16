"""The exact arithmetic (kernels/exact.py): the hash and turn bits against the naive model's own
hash, the unit circle against mpmath, the vector tables against their exact rational definition,
angles, float32 coefficients and the brightness table."""

from __future__ import annotations

import math
import random
from fractions import Fraction

import numpy as np
import pytest
import torch

from naive import HEADINGS, hash32
from physarum.kernels import api, exact
from support import params


def test_hash_matches_contract_on_python_ints_and_tensors():
    values = [0, 1, 2, 3, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xDEADBEEF, 12345]
    values += random.Random(1).sample(range(2**32), 200)
    expected = [hash32(v) for v in values]
    assert [exact.lowbias32_int(v) for v in values] == expected
    assert exact.lowbias32(torch.tensor(values, dtype=torch.int64)).tolist() == expected
    assert hash32(1) != hash32(2) and hash32(0) == 0


def test_turn_bits_keyed_by_seed_step_and_agent():
    seeds = [7, 8]
    seed_key = torch.tensor([hash32(s) for s in seeds], dtype=torch.int64)
    for step in (0, 1, 2**32 + 5, 999):
        bits = exact.turn_bits(seed_key, torch.tensor(step), 64)
        for b in range(2):
            key = hash32(hash32(seeds[b]) ^ hash32(step & 0xFFFFFFFF))
            assert bits[b].tolist() == [hash32(a ^ key) >> 31 == 1 for a in range(64)]
        assert bits[0].tolist() != bits[1].tolist()
        assert 10 < int(bits.sum()) < 118


def test_unit_circle_is_exactly_symmetric_and_exact():
    table = exact.unit_circle()
    assert len(table) == HEADINGS
    assert table[0] == (2**30, 0) and table[HEADINGS // 4] == (0, 2**30)
    assert table[HEADINGS // 2] == (-(2**30), 0) and table[3 * HEADINGS // 4] == (0, -(2**30))
    for h, (c, s) in enumerate(table):
        assert table[-h % HEADINGS] == (c, -s)  # mirror in the x axis
        assert table[(HEADINGS // 2 - h) % HEADINGS] == (-c, s)  # mirror in the y axis
        assert table[(HEADINGS // 4 - h) % HEADINGS] == (s, c)  # mirror in the diagonal
        assert table[(h + HEADINGS // 4) % HEADINGS] == (-s, c)  # quarter turn
        assert abs(math.hypot(c, s) - 2**30) <= 1.0
    mpmath = pytest.importorskip("mpmath")  # installed with torch (through sympy)
    with mpmath.workdps(40):  # the first octant, independently; symmetry gives the rest
        for h in range(0, HEADINGS // 8 + 1):
            angle = 2 * mpmath.pi * h / HEADINGS
            assert table[h] == (
                int(mpmath.nint(mpmath.cos(angle) * 2**30)),
                int(mpmath.nint(mpmath.sin(angle) * 2**30)),
            ), h


def test_vector_table_rounds_the_circle_half_to_even():
    nine = exact.vector_table(9)
    assert nine[0] == (9 << 16, 0)
    assert nine[HEADINGS // 4] == (0, 9 << 16)
    assert nine[HEADINGS // 2] == (-(9 << 16), 0)
    for distance in (1, 3, 9):
        table = exact.vector_table(distance)
        for (c, s), (dx, dy) in zip(exact.unit_circle(), table):
            for unit, got in ((c, dx), (s, dy)):
                quotient, remainder = divmod(unit * distance, 2**14)
                if 2 * remainder > 2**14 or (2 * remainder == 2**14 and quotient % 2):
                    quotient += 1
                assert got == quotient
    half = exact.vector_table(2.0**-15)  # 2^30 * 2^-15 * 2^16 / 2^30 = 2: no rounding
    assert half[0] == (2, 0)
    tie = exact.vector_table(2.0**-17)  # exactly 0.5 in 16.16: rounds to even 0
    assert tie[0] == (0, 0) and exact.vector_table(3 * 2.0**-17)[0] == (2, 0)


def test_vector_table_equals_the_exact_rational_rounding_for_any_distance():
    """The integer form against its definition: round-half-even of unit * distance * ONE /
    2^UNIT_BITS computed in Fractions, for distances that are not whole pixels."""

    for distance in (0.512, 1.536, 20.48, 1 / 3, 2.0**-17 * 5, 254.99999):
        scale = Fraction(distance) * (1 << 16) / 2**30
        expected = tuple((round(c * scale), round(s * scale)) for c, s in exact.unit_circle())
        assert exact.vector_table(distance) == expected, distance


def test_degrees_to_heading():
    assert exact.degrees_to_heading(22.5) == 256
    assert exact.degrees_to_heading(45) == 512
    assert exact.degrees_to_heading(360) == HEADINGS
    step = 360 / HEADINGS
    assert exact.degrees_to_heading(step / 2) == 0  # 0.5 -> 0 (even)
    assert exact.degrees_to_heading(3 * step / 2) == 2  # 1.5 -> 2 (even)
    assert exact.degrees_to_heading(-22.5) == -256


def test_tables_coefficients_are_float32_and_snap_tiny_values():
    tiny = 2.0**-21
    tables = exact.build_tables(
        [
            params(deposit=tiny, diffuse=1.0, decay=1.0 - tiny, seed=1),
            params(deposit=0.1, diffuse=9 * tiny, decay=0.25, seed=2),
            params(deposit=2.0**-20, diffuse=9 * 2.0**-20, decay=0.0, seed=3),
        ]
    )
    assert tables.deposit.tolist() == [0.0, float(np.float32(0.1)), 2.0**-20]
    assert tables.keep.tolist() == [0.0, float(np.float32(1 - 9 * tiny)), float(np.float32(1 - 9 * 2.0**-20))]
    assert tables.spread.tolist() == [float(np.float32(1 / 9)), 0.0, 2.0**-20]
    assert tables.retain.tolist() == [0.0, 0.75, 1.0]
    for name in ("deposit", "keep", "spread", "retain"):
        values = getattr(tables, name)
        assert values.dtype == torch.float32
        assert all(v == 0.0 or v >= api.MIN_COEFFICIENT for v in values.tolist())
    assert tables.seed_key.tolist() == [hash32(1), hash32(2), hash32(3)]
    assert tables.sense_offset.shape == (3, HEADINGS, 2)
    assert tables.sense_offset.dtype == torch.int32


def test_brightness_table_is_exact_and_keeps_the_floor():
    table = exact.brightness_table(5.0)
    assert table.dtype == torch.float32 and table.shape == (256,)
    assert float(table[0]) == 0.0 and float(table[255]) == 5.0 and float(table[51]) == 1.0
    assert torch.all(table[1:] > table[:-1])
    tiny = exact.brightness_table(2.0**-95)
    assert float(tiny[1]) == 0.0 and float(tiny[255]) == 2.0**-95  # below the floor: 0


def test_a_whole_number_of_fixed_point_steps_takes_numpy_to_the_same_integers():
    """vector_table's int64 path (distances of m / ONE pixels, every scheduled one) against the
    exact integer path, on random m, ties and the largest distance."""
    from physarum.kernels.api import MAX_DISTANCE, ONE, UNIT_BITS

    rng = random.Random(5)
    lengths = [rng.randrange(1, int(MAX_DISTANCE) * ONE) for _ in range(40)] + [
        1,
        ONE // 2,
        int(MAX_DISTANCE) * ONE,
    ]
    for length in lengths:
        numerator, denominator = length, 1 << UNIT_BITS
        slow = tuple(
            (
                exact._divide_half_even(c * numerator, denominator),
                exact._divide_half_even(s * numerator, denominator),
            )
            for c, s in exact.unit_circle()
        )
        assert exact.vector_table(length / ONE) == slow, length
        assert exact._fixed_vector_array(length).tolist() == [list(pair) for pair in slow]
