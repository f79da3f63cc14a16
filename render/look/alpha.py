"""The alpha plane of a frame (output.alpha): the trail's light, in integers.

alpha = the frame's 8-bit palette index, as the colourist makes it for the GIF and the RGB frame:
with a look section (render/look/hdr.py) the display value after exposure, bloom, vignette, the
tone curve and grain, dithered to 0 .. 255; without one, the levels-and-gamma index
(render/look/colour.py). Index 0 (the background: trail at or below the low level) is
transparent, 255 opaque, and every step between is the light the opaque frame shows with the
palette's colour at that index. It is the index itself, so it is exact and the same on every
backend and device, and the bloom's glow (added to the light before the tone curve) fades out
into the alpha as it does into the picture. A density or mix layer's index is its light too; a
heading layer's is a hue and a species preset has no one index: render/formats/alpha.py refuses
those. How the alpha joins the colour (straight, premultiplied): render/formats/alpha.py.
"""

from __future__ import annotations

import torch


def alpha_plane(index: torch.Tensor) -> torch.Tensor:
    """[H, W] uint8 alpha of an index frame [H, W] uint8 (the module's docstring says why it is the
    index): on the index frame's device, no copy."""
    return index
