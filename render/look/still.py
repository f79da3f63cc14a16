"""A print still's picture (output.still): the last frame's colour in 16 bits a channel and its
linear light, in integers from the look's own pieces (render/look/hdr.py), before any dither.

With a look section the 16-bit display value D (0 .. 65535: exposure, bloom, vignette, the tone
curve and grain, as the 8-bit frames have them before Bayer dithering) places the colour between
two palette entries: v = D * 255, i = v // 65535, f = v % 65535, and each channel is
((P[i] * (65535 - f) + P[i + 1] * f) * 257 + 32767) // 65535, so a print has the smooth ramp
the 8-bit index dithers; the light is (L + glow, vignetted) / 4096 as float32, 1.0 the white
level, before the tone curve (the EXR's). Without a look, the frame's 8-bit colour times 257 (the
flat colouring has 256 levels) and no light. Exact and the same on every device."""

from __future__ import annotations

import torch

from .hdr import ONE, bloom


def still_frame(colourist, trail: torch.Tensor, frame: int) -> tuple[torch.Tensor, torch.Tensor | None]:
    """(colour [H, W, 3] int32 of 0 .. 65535, light [H, W] float32 or None) of a trail map [H, W]
    for frame number `frame` (a trail colourist: render/formats/still.py refuses the others)."""
    hdr = colourist.hdr
    if hdr is None:
        rgb = colourist.rgb(colourist.index_frame(trail), frame).to(torch.int32)
        return rgb * 257, None
    low, high = colourist.bounds(trail)
    c = hdr.constants(trail.device, *trail.shape[-2:])
    v = hdr.values(frame)
    level = hdr.linear(trail, low, high, v.exposure)
    if v.strength:
        level = (level + bloom(level, v.threshold, c["levels"], v.strength)).clamp_(max=65535)
    if v.vignette:
        level = hdr.vignette(level, c, v)
    display = c["table"][level]
    if v.grain:
        display = hdr.grain(display, c, v, frame)
    table = torch.from_numpy(colourist.table(frame)).to(trail.device).to(torch.int64)
    scaled = display.to(torch.int64) * 255
    i, f = scaled // 65535, scaled % 65535
    below, above = table[i], table[torch.clamp(i + 1, max=255)]
    colour = ((below * (65535 - f)[..., None] + above * f[..., None]) * 257 + 32767) // 65535
    return colour.to(torch.int32), level.to(torch.float32) / ONE
