"""Transparency (output.alpha): how the writers that keep an alpha channel join a frame's RGB and
its alpha plane, the two modes, and what a render with alpha refuses before it starts.

The alpha plane is the trail's light: the frame's 8-bit palette index after the whole look
(levels, gamma, exposure, bloom, vignette, tone curve, grain, dithering: render/look/alpha.py),
so index 0, the background, is transparent and the brightest trail opaque. The colour is the
palette's colour at that index, the opaque frame's RGB, in one of two modes:

- straight: R, G, B are the opaque frame's bytes unchanged, A the index (PNG, APNG, WebP and
  VP9 define their alpha as straight: what a browser or an image viewer expects);
- premultiplied: each channel C becomes (C * A + 127) // 255 (the nearest integer to C * A / 255,
  halves up), for a compositor told the file is premultiplied (a VJ host, an editor's ProRes
  4444 "premultiplied" interpretation).

Both are exact integers, the same bytes on every machine. Composited over black, a straight or a
premultiplied file shows C * A / 255: the faint trail (low index, low alpha) fades out where the
opaque render shows its dark colours, the trail's light keeps the palette's colours.

Not a format (no FORMAT): the format modules import it."""

from __future__ import annotations

from ..base import lazy
from ..base.errors import RenderError

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")

ALPHA_MODES = ("straight", "premultiplied")  # output.alpha's values, in this order in the schema
ALPHA_FORMATS = ("mov", "webm", "apng", "webp", "png")  # the formats that keep an alpha channel


def reads(alpha: str | None, opaque: str = "rgb") -> str:
    """What a writer reads of a frame: `opaque` ("rgb" or "last_rgb"), with output.alpha set its
    RGBA counterpart ("rgba", "last_rgba")."""
    return opaque if alpha is None else opaque.replace("rgb", "rgba")


def join(rgb: np.ndarray, alpha: np.ndarray, mode: str) -> np.ndarray:
    """[H, W, 4] uint8 RGBA of an RGB frame [H, W, 3] and its alpha plane [H, W] in `mode`
    (ALPHA_MODES: the module's docstring says how each is made)."""
    if mode == "premultiplied":
        scaled = rgb.astype(np.uint16) * alpha[..., None] + 127  # at most 255 * 255 + 127 < 2^16
        rgb = (scaled // 255).astype(np.uint8)
    elif mode != "straight":
        raise ValueError(f"unknown alpha mode {mode!r}")
    return np.concatenate((rgb, alpha[..., None]), axis=2)


def check_alpha(preset) -> list[str]:
    """Refuse (RenderError) output.alpha where a frame has no one light to be its alpha, or where
    a render could not carry the alpha plane; note the formats written without it."""
    alpha = preset.output.alpha
    if alpha is None:
        return []
    why = None
    if preset.dims == 3:
        why = "a 3D preset's frames are ray-marched colours, with no index to be their alpha"
    elif preset.species is not None:
        why = "a species preset's colour is the sum of several species' levels, not one light"
    elif preset.palette.layer == "heading":
        why = "palette.layer heading shows a hue, not a light"
    elif preset.checkpoint is not None:
        why = "the frame journal that --resume re-feeds keeps no alpha plane; remove checkpoint"
    if why is not None:
        raise RenderError(f"{preset.name}: output.alpha ({alpha}) cannot be written: {why}")
    if not any(fmt in ALPHA_FORMATS for fmt in preset.output.formats):
        raise RenderError(
            f"{preset.name}: output.alpha is {alpha} but no format of output.formats keeps an alpha "
            f"channel; add one of {', '.join(ALPHA_FORMATS)}"
        )
    opaque = [fmt for fmt in preset.output.formats if fmt not in ALPHA_FORMATS]
    if opaque:
        return [f"output.alpha: {' and '.join(opaque)} keep no alpha channel, written opaque"]
    return []
