"""Palettes: named and hex-stop tables."""

from __future__ import annotations

import numpy as np
import pytest

from physarum.render.look.colour import Colourist
from physarum.render.look.palette import palette_table
from physarum.render.preset import build_preset
from physarum.render.preset.palettes import SMOOTH, parse_hex
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


def test_srgb_is_the_default_and_keeps_its_tables():
    """palette.space unset or srgb: the tables are the linear sRGB ramps they always were."""
    for name in ("magma", "gray", "neon"):
        stops = np.array([parse_hex(c) for c in SMOOTH[name].split()], dtype=np.float64)
        at = np.arange(256) / 255.0
        ramp = [np.interp(at, np.linspace(0, 1, len(stops)), stops[:, c]) for c in range(3)]
        expected = np.floor(np.stack(ramp, axis=1) + 0.5).astype(np.uint8)
        assert np.array_equal(palette_table(name), expected)
        assert np.array_equal(palette_table(name, "srgb"), expected)


def test_palette_space_in_the_preset():
    """space: srgb is not dumped (outputs embed what they did); oklab is, and the colourist's
    tables follow it; anything else is refused naming what is allowed."""
    plain = build_preset(tiny_data(), "p.yaml")
    assert plain.palette.space == "srgb" and "space" not in plain.portable_dump()["palette"]
    srgb = build_preset(tiny_data(palette={"names": ["magma"], "space": "srgb"}), "p.yaml")
    assert (
        srgb.portable_dump()
        == build_preset(tiny_data(palette={"names": ["magma"]}), "p.yaml").portable_dump()
    )
    oklab = build_preset(
        tiny_data(palette={"names": ["magma", ["#000", "#f80"]], "space": "oklab"}), "p.yaml"
    )
    assert oklab.portable_dump()["palette"]["space"] == "oklab"
    tables = Colourist(oklab.palette).tables
    assert np.array_equal(tables[0], palette_table("magma", "oklab"))
    assert np.array_equal(tables[1], palette_table(["#000", "#f80"], "oklab"))
    problems = problems_of(tiny_data(palette={"space": "lab"}))
    assert len(problems) == 1 and "palette.space" in problems[0] and "'srgb' or 'oklab'" in problems[0]
