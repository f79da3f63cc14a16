"""Named palettes and hex colour stops, expanded to exact 256-entry RGB tables.

Smooth palettes interpolate their stops linearly, in sRGB (palette.space: srgb, the default) or
in OKLab (palette.space: oklab; the exact integer arithmetic of render/look/oklab.py); qualitative
palettes repeat each colour over an equal band of indices, which gives flat, poster-like regions
(the 'cave' look), in either space. The names and their stops are the preset's vocabulary, in
render/preset/palettes.py.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from ..preset.palettes import PALETTES, QUALITATIVE, SMOOTH, parse_hex
from .oklab import oklab_ramp


def _smooth(stops: list[tuple[int, int, int]], space: str = "srgb") -> np.ndarray:
    if space == "oklab":
        return np.array(oklab_ramp(stops), dtype=np.uint8)
    positions = np.linspace(0.0, 1.0, len(stops))
    index = np.arange(256, dtype=np.float64) / 255.0
    channels = [np.interp(index, positions, [s[c] for s in stops]) for c in range(3)]
    return np.floor(np.stack(channels, axis=1) + 0.5).astype(np.uint8)


def _bands(stops: list[tuple[int, int, int]]) -> np.ndarray:
    band = np.arange(256) * len(stops) // 256
    return np.array(stops, dtype=np.uint8)[band]


@lru_cache(maxsize=64)
def _table(entry: str | tuple[str, ...], space: str) -> np.ndarray:
    if isinstance(entry, str):
        kind = PALETTES[entry]
        stops = [parse_hex(c) for c in (SMOOTH if kind == "smooth" else QUALITATIVE)[entry].split()]
        table = _smooth(stops, space) if kind == "smooth" else _bands(stops)
    else:
        table = _smooth([parse_hex(c) for c in entry], space)
    return table


def palette_table(entry: str | list[str], space: str = "srgb") -> np.ndarray:
    """[256, 3] uint8 RGB table of a palette name or a list of hex colour stops (a copy), its
    smooth ramps interpolated in `space` (srgb or oklab)."""
    if space not in ("srgb", "oklab"):
        raise ValueError(f"unknown palette space {space!r}; allowed: srgb, oklab")
    return _table(entry if isinstance(entry, str) else tuple(entry), space).copy()
