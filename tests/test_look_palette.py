"""Palettes: named and hex-stop tables."""

from __future__ import annotations

import numpy as np
import pytest

from physarum.render.look.palette import palette_table
from physarum.render.preset.palettes import parse_hex
from support import problems_of, tiny_data


def test_named_and_hex_palettes():
    magma = palette_table("magma")
    assert magma.shape == (256, 3) and magma.dtype == np.uint8
    assert tuple(magma[0]) == parse_hex("#000004") and tuple(magma[255]) == parse_hex("fcfdbf")
    cave = palette_table("cave")
    assert len({tuple(c) for c in cave}) == 8  # qualitative: flat bands
    with pytest.raises(ValueError, match="not a hex colour"):
        parse_hex("#12345")


def test_a_bad_colour_is_quoted_in_short():
    """A megabyte-long colour (or a huge list) is quoted as an 80-character excerpt, not whole."""
    for bad in ("#" + "f" * 100_000, ["#fff"] * 100_000):
        with pytest.raises(ValueError, match="is not a hex colour") as caught:
            parse_hex(bad)
        assert len(str(caught.value)) < 160
    problems = problems_of(tiny_data(palette={"names": [["#000", "z" * 5000]]}))
    assert len(problems) == 1 and len(problems[0]) < 400 and "zzz..." in problems[0]
