"""The exact HDR look of a 3D preset (preset section `look`, docs/3d.md "The look in 3D").

The 2D look (render/look/hdr.py) maps a trail map to palette indices; a volume's look acts in
two places, with hdr.py's tables and integer operations:
1. voxels, before the transfer function: L = HdrLook.linear (exposure, the black point as
   `low`), the tone table (curve and palette.gamma), then the 8-bit level
   (display * 255 + DISPLAY // 2) // DISPLAY that the opacity table and the palette read;
2. the rendered RGB frame [H, W, 3], each channel c alone: display = 257 c (0 .. DISPLAY);
   bloom adds hdr.bloom of the intensity (c * ONE + 127) // 255 (threshold in the same units,
   1 = white) as (glow * DISPLAY) // ONE; the vignette multiplies by (ONE - A q // ONE) / ONE;
   the grain adds the canvas's noise rolled by the frame (hdr.grain_noise, grain_shift: the
   same field on the three channels, a luminance grain); dithering then gives the channel
   (display * 255 + offset) // DISPLAY (Bayer offsets, or DISPLAY // 2 without dither).
With no bloom, vignette or grain the frame comes back unchanged (every offset < DISPLAY).
Integer tensor ops only, so CPU and CUDA give the same bytes; the ray marcher is untouched.
"""

from __future__ import annotations

import torch

from .hdr import DISPLAY, ONE, HdrLook, bloom


class VolumeLook:
    """A 3D preset's look: voxel levels (levels) and the rendered frame's effects (image), from
    the preset Colourist's HdrLook (its values, tables and per-canvas constants)."""

    def __init__(self, hdr: HdrLook):
        self.hdr = hdr
        self._tables: dict = {}

    def levels(self, trail: torch.Tensor, low: torch.Tensor, high: torch.Tensor, frame: int) -> torch.Tensor:
        """[D, H, W] uint8 voxel levels of the trail volume for frame number `frame`: the tone
        table at L = HdrLook.linear(trail, low, high, exposure), rounded to 0 .. 255."""
        device = trail.device
        if device not in self._tables:
            self._tables[device] = self.hdr.table.to(device)
        level = self.hdr.linear(trail, low, high, self.hdr.values(frame).exposure)
        display = self._tables[device][level]
        return ((display * 255 + DISPLAY // 2) // DISPLAY).to(torch.uint8)

    def image(self, rgb: torch.Tensor, frame: int) -> torch.Tensor:
        """[H, W, 3] uint8: the rendered frame `rgb` with bloom, vignette, grain and dithering."""
        height, width = rgb.shape[:2]
        hdr = self.hdr
        c = hdr.constants(rgb.device, height, width)  # the look's per-canvas constants (hdr.py)
        v = hdr.values(frame)
        channels = rgb.permute(2, 0, 1).to(torch.int32)  # [3, H, W]
        display = channels * 257
        if v.strength:
            glow = bloom((channels * ONE + 127) // 255, v.threshold, c["levels"], v.strength)
            display = (display + (glow.to(torch.int64) * DISPLAY // ONE).to(torch.int32)).clamp_(max=DISPLAY)
        if v.vignette:
            display = hdr.vignette(display, c, v)
        if v.grain:
            display = hdr.grain(display, c, v, frame)
        out = (display * 255 + c["dither"]) // DISPLAY
        return out.to(torch.uint8).permute(1, 2, 0).contiguous()
