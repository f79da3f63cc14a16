"""OKLab in integers (render/look/oklab.py): Ottosson's values, exact roots, ramps through their
stops, and the same table on every machine."""

from __future__ import annotations

import hashlib
import random
import time

import numpy as np
import pytest

from physarum.render.look import oklab
from physarum.render.look.oklab import ONE, from_oklab, iroot, oklab_ramp, to_oklab
from physarum.render.look.palette import palette_table
from physarum.render.preset.palettes import QUALITATIVE, SMOOTH, parse_hex

# OKLab of the sRGB primaries, white and black as published (CSS Color 4 / color.js, Ottosson's
# matrices): (L, a, b)
PUBLISHED = {
    (255, 255, 255): (1.0, 0.0, 0.0),
    (0, 0, 0): (0.0, 0.0, 0.0),
    (255, 0, 0): (0.627955, 0.224863, 0.125846),
    (0, 255, 0): (0.866440, -0.233888, 0.179498),
    (0, 0, 255): (0.452014, -0.032457, -0.311528),
}


def test_primaries_white_and_black_are_ottossons():
    for rgb, lab in PUBLISHED.items():
        found = [v / ONE for v in to_oklab(rgb)]
        assert np.allclose(found, lab, atol=1e-4, rtol=0), (rgb, found)
        assert from_oklab(to_oklab(rgb)) == rgb


def test_integer_roots_are_the_floor_of_the_root():
    rng = random.Random(26)
    values = [0, 1, 2, 7, 8, 9, 26, 27, 28, 2**64 - 1, 2**64, ONE**5, ONE**12 - 1, 3**480, 3**480 - 1]
    values += [rng.getrandbits(rng.randrange(1, 1100)) for _ in range(300)]
    for n in (2, 3, 5, 12):
        for value in values:
            root = iroot(value, n)
            assert root**n <= value < (root + 1) ** n, (value, n)


def test_every_colour_comes_back_from_oklab():
    rng = random.Random(1)
    colours = [(v, v, v) for v in range(256)] + [
        tuple(rng.randrange(256) for _ in range(3)) for _ in range(500)
    ]
    assert [from_oklab(to_oklab(c)) for c in colours] == colours


def test_the_transfer_curve_is_the_srgb_standard():
    """decode and encode against the float formula (float only here, to check the integers)."""
    for v in range(256):
        c = v / 255
        expected = c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
        assert abs(oklab.decode(v) / ONE - expected) < 1e-12
        assert oklab.encode(oklab.decode(v)) == v
    assert oklab.encode(-5) == 0 and oklab.encode(2 * ONE) == 255  # out of gamut: clamped


def named_stops(name: str) -> list[tuple[int, int, int]]:
    return [parse_hex(c) for c in SMOOTH[name].split()]


@pytest.mark.parametrize("name", sorted(SMOOTH))
def test_a_ramp_passes_through_its_stops(name):
    stops = named_stops(name)
    table = palette_table(name, "oklab")
    assert table.shape == (256, 3) and table.dtype == np.uint8
    assert tuple(table[0]) == stops[0] and tuple(table[255]) == stops[-1]
    for i in range(256):  # entries that fall exactly on a stop are that stop
        if i * (len(stops) - 1) % 255 == 0:
            assert tuple(table[i]) == stops[i * (len(stops) - 1) // 255]


def test_hex_stops_and_a_black_to_white_ramp_rising_in_lightness():
    table = palette_table(["#000", "#fff"], "oklab")
    assert tuple(table[0]) == (0, 0, 0) and tuple(table[255]) == (255, 255, 255)
    assert np.all(np.diff(table.astype(int), axis=0) >= 0)  # every channel rises
    lightness = [to_oklab(tuple(int(c) for c in entry))[0] for entry in table]
    assert all(b >= a for a, b in zip(lightness, lightness[1:]))
    assert lightness[128] / ONE == pytest.approx(128 / 255, abs=0.01)  # even steps in lightness
    srgb = palette_table(["#000", "#fff"])
    assert table[128, 0] < srgb[128, 0]  # perceptual mid-grey is darker than sRGB's 128


def test_oklab_differs_from_srgb_and_leaves_qualitative_palettes_alone():
    assert not np.array_equal(palette_table("viridis", "oklab"), palette_table("viridis"))
    for name in QUALITATIVE:
        assert np.array_equal(palette_table(name, "oklab"), palette_table(name))
    with pytest.raises(ValueError, match="unknown palette space 'lab'; allowed: srgb, oklab"):
        palette_table("magma", "lab")


def test_the_same_table_twice_and_on_every_machine():
    """Fresh builds (no cache) give the same bytes, and the bytes pinned here: a machine whose
    arithmetic differed would fail (the GPU host runs this test too)."""
    first = np.array(oklab_ramp(named_stops("magma")), dtype=np.uint8)
    assert np.array_equal(first, np.array(oklab_ramp(named_stops("magma")), dtype=np.uint8))
    assert np.array_equal(first, palette_table("magma", "oklab"))
    every = b"".join(palette_table(name, "oklab").tobytes() for name in sorted(SMOOTH))
    assert hashlib.sha256(every).hexdigest() == PINNED


def test_a_table_builds_quickly():
    start = time.perf_counter()
    oklab_ramp(named_stops("magma"))  # ten stops, 256 entries, uncached
    assert time.perf_counter() - start < 0.5  # about 10 ms on one core; generous for a busy host


PINNED = "2764021ff669984a9596f39bf52a5d7e781f9fdad70d3600de76629d935b6f57"  # every smooth palette in oklab
