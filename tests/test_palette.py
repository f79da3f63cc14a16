"""Palettes: named and hex-stop tables."""

from __future__ import annotations

import numpy as np
import pytest

from physarum.render.palette import palette_table, parse_hex


def test_named_and_hex_palettes():
    magma = palette_table("magma")
    assert magma.shape == (256, 3) and magma.dtype == np.uint8
    assert tuple(magma[0]) == parse_hex("#000004") and tuple(magma[255]) == parse_hex("fcfdbf")
    cave = palette_table("cave")
    assert len({tuple(c) for c in cave}) == 8  # qualitative: flat bands
    with pytest.raises(ValueError, match="not a hex colour"):
        parse_hex("#12345")
