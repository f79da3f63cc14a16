"""Attacks on `physarum still` (render/commands/still.py): every refusal is one message."""

from __future__ import annotations

import pytest

from physarum.render.base.errors import RenderError
from physarum.render.commands import still as stills
from physarum.render.formats.still import still_bytes
from physarum.render.preset import build_preset
from support import tiny_data


def test_a_print_too_large_even_at_1_dpi_names_what_fits():
    """On a host with a few GiB free, a 9999 x 9999 in print at 1 dpi does not fit: the advice's
    search for a dpi found none and max() raised (a traceback)."""
    preset = build_preset(tiny_data(look={"curve": "aces"}), "t.yaml")
    available = still_bytes(2000, 1333) + 10  # room for a 2000 x 1333 still
    call = stills.StillCall(out="unused", print_size="9999x9999in", dpi=300)
    with pytest.raises(RenderError, match=r"not even 1 dpi at 9999x9999in fits here .*--size (\d+)"):
        stills.check(preset, call, available)
