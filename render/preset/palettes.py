"""The palettes a preset may name: the named palettes' colour stops, and hex colours.

SMOOTH palettes interpolate their stops linearly; QUALITATIVE palettes repeat each colour over an
equal band of indices (the 'cave' look). PALETTES maps every name to its kind; parse_hex reads a
'#rrggbb' or '#rgb' stop. The preset stage checks names and stops against these;
render/look/palette.py expands them into 256-entry RGB tables.
"""

from __future__ import annotations

import re

from ..base.inputs import excerpt

SMOOTH = {
    "magma": "000004 180f3d 440f76 721f81 9e2f7f cd4071 f1605d fd9668 feca8d fcfdbf",
    "inferno": "000004 1b0c41 4a0c6b 781c6d a52c60 cf4446 ed6925 fb9b06 f7d13d fcffa4",
    "viridis": "440154 482878 3e4989 31688e 26828e 1f9e89 35b779 6ece58 b5de2b fde725",
    "ice": "000000 0a1a3a 1d4e89 3a86c8 7fc3e8 d8f1fb ffffff",
    "fire": "000000 3b0000 8a1a00 d94800 ff9a1a ffe066 ffffff",
    "forest": "020a05 0b2e1a 1c5a2e 4f8a3a a7c45a eef2b0",
    "ocean": "00020a 031b3b 06456e 0b7a8f 48b8a8 c7f0d8",
    "neon": "000000 2a0a4a 7a00c8 ff00aa ffd000",
    "copper": "000000 3d1f0f 8c4a24 d98b52 ffd2a8",
    "bone": "000000 2b2b3b 5d6a7a a9b9c0 ffffff",
    "gray": "000000 ffffff",
}
QUALITATIVE = {
    "cave": "0b0a08 2d2418 4e3b25 6f5a3a 8c7a55 a89c7a c9c2a6 efe9d8",
    "tab10": "1f1f1f 1f77b4 ff7f0e 2ca02c d62728 9467bd 8c564b e377c2 bcbd22 17becf",
    "pastel": "202030 fbb4ae b3cde3 ccebc5 decbe4 fed9a6 ffffcc e5d8bd",
}
PALETTES = {**{k: "smooth" for k in SMOOTH}, **{k: "qualitative" for k in QUALITATIVE}}
HEX = re.compile(r"^#?([0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")


def parse_hex(colour: str) -> tuple[int, int, int]:
    """'#rrggbb' or '#rgb' (the '#' optional) as an (r, g, b) triple of 0..255; ValueError quoting
    a bad value in short (inputs.excerpt)."""
    match = HEX.match(colour.strip()) if isinstance(colour, str) and len(colour) <= 64 else None
    if not match:
        raise ValueError(f"{excerpt(colour)} is not a hex colour like '#ff8800' or '#f80'")
    digits = match.group(1)
    if len(digits) == 3:
        digits = "".join(d * 2 for d in digits)
    return tuple(int(digits[i : i + 2], 16) for i in (0, 2, 4))
