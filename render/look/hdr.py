"""The exact HDR look (preset section `look`, docs/model.md "The look"): trail -> 8-bit palette index.

Per frame, on the trail's device, with no host synchronisation:
  L = floor((trail - low) * (float32(4096 * exposure) / (high - low)))   clamped to 0 .. LMAX
(three float32 operations, each rounded the same way on every IEEE device, then floor), the
linear intensity in 1/4096 steps up to 16; then in integers only: bloom (a pyramid of 2x2 means,
binomial blurs and linear upsampling of max(L - threshold, 0)), vignette (a radial integer
factor), the tone curve (a 65536-entry table built on the host with + - * / only, so the same
on every platform), film grain (lowbias32 of seed and pixel, rolled by a hash of the frame) and ordered dithering
(Bayer 8x8) down to the palette's 256 entries.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import lru_cache
from typing import NamedTuple

import numpy as np
import torch

from ...kernels.exact import float32_nearest, lowbias32, lowbias32_int
from ...kernels.limits import U32
from ..preset.look_section import Look
from ..preset.schedule import is_scheduled, value_at

ONE = 4096  # the linear intensity 1.0 (the white level)
LMAX = 65535  # 16.0 - 1/4096: the brightest intensity
DISPLAY = 65535  # the display value of the palette's last entry
BLOOM_BITS = 4  # extra fraction bits the bloom's pyramid carries (its faint tails stay smooth)
OCTAVES = 5  # pyramid levels the bloom sums (the top ones, so it scales with the canvas)
BAYER_SIDE = 8

# ---------------------------------------------------------------------------------------------
# Host tables: + - * / on float64 only (IEEE exact per operation on every platform), no libm

LN2 = 0.6931471805599453  # float64 nearest ln 2 (a constant, not computed)


def ln(x: np.ndarray) -> np.ndarray:
    """Natural log of positive float64 x: frexp (exact) and 2 atanh(s), s = (m - 1) / (m + 1),
    summed to a fixed 24 terms (|s| <= 1/3: error below 1e-24 relative)."""
    m, e = np.frexp(x)  # x = m * 2^e, m in [0.5, 1)
    m, e = m * 2.0, e - 1  # m in [1, 2)
    s = (m - 1.0) / (m + 1.0)
    s2 = s * s
    total = np.zeros_like(s)
    for k in range(23, -1, -1):  # Horner, innermost term first
        total = total * s2 + 1.0 / (2 * k + 1)
    return 2.0 * s * total + e * LN2


def exp(x: np.ndarray) -> np.ndarray:
    """e^x of float64 x in [-745, 700]: 2^n * e^r with n = round(x / ln 2) and r = x - n ln 2
    (|r| <= 0.35), e^r by 22 Taylor terms (Horner), then ldexp (exact)."""
    n = np.floor(x / LN2 + 0.5)
    r = x - n * LN2
    total = np.ones_like(r)
    for k in range(22, 0, -1):
        total = total * r / k + 1.0
    return np.ldexp(total, n.astype(np.int64))


def curve_values(curve: str, x: np.ndarray) -> np.ndarray:
    """The tone curve at linear intensities x >= 0 (float64), in [0, 1]."""
    if curve == "linear":
        y = x
    elif curve == "log":
        y = ln(1.0 + 64.0 * x) / ln(np.array(1.0 + 64.0 * 16.0))
    elif curve == "reinhard":  # extended Reinhard, white point 16
        y = x * (1.0 + x / 256.0) / (1.0 + x)
    elif curve == "aces":  # Narkowicz's fit of the ACES filmic curve
        y = x * (2.51 * x + 0.03) / (x * (2.43 * x + 0.59) + 0.14)
    else:  # agx-like: log2 encoding of -10 .. +6.5 EV of 0.18 (the fixed point's range), Wrensch's fit
        ev = ln(np.maximum(x, 2.0**-20) / 0.18) / LN2
        v = (np.clip(ev, -10.0, 6.5) + 10.0) / 16.5
        y = (((((15.5 * v - 40.14) * v + 31.96) * v - 6.868) * v + 0.4298) * v + 0.1191) * v - 0.00232
        y = np.where(x > 0, y, 0.0)
    return np.clip(y, 0.0, 1.0)


@lru_cache(maxsize=32)
def tone_table(curve: str, gamma: float) -> np.ndarray:
    """[LMAX + 1] int32 display values 0 .. DISPLAY: round(DISPLAY * curve(L / 4096) ** gamma)
    (palette.gamma as in the flat colouring: below 1 brightens), computed with + - * / and the
    series above, so the table is the same on every platform."""
    x = np.arange(LMAX + 1, dtype=np.float64) / ONE
    y = curve_values(curve, x)
    if gamma != 1.0:
        y = np.where(y > 0, exp(gamma * ln(np.maximum(y, 1e-300))), 0.0)
    return np.floor(np.clip(y, 0.0, 1.0) * DISPLAY + 0.5).astype(np.int32)


def bayer(side: int = BAYER_SIDE) -> np.ndarray:
    """[side, side] int64 Bayer matrix, values 0 .. side^2 - 1 (side a power of 2)."""
    matrix = np.zeros((1, 1), dtype=np.int64)
    while len(matrix) < side:
        matrix = np.block([[4 * matrix, 4 * matrix + 2], [4 * matrix + 3, 4 * matrix + 1]])
    return matrix


def dither_offsets(dither: bool) -> np.ndarray:
    """[8, 8] int32 offsets added to DISPLAY-scaled values before // DISPLAY: ordered dithering
    ((2b + 1) * DISPLAY // 128 for Bayer value b), or rounding to nearest (DISPLAY // 2)."""
    if not dither:
        return np.full((BAYER_SIDE, BAYER_SIDE), DISPLAY // 2, dtype=np.int32)
    cells = BAYER_SIDE * BAYER_SIDE
    return ((2 * bayer() + 1) * DISPLAY // (2 * cells)).astype(np.int32)


def bloom_levels(width: int, height: int, radius: float) -> int:
    """n, the pyramid level whose pixels span about radius * short side: the largest n >= 1 with
    2^(n - 1/2) <= R, exactly (2^(2n - 1) <= R^2), kept where the level is at least 2 pixels."""
    reach = Fraction(radius) * min(width, height)
    n = 1
    while Fraction(2 ** (2 * n + 1)) <= reach * reach and min(width, height) >> (n + 1) >= 2:
        n += 1
    return n


# ---------------------------------------------------------------------------------------------
# Device integer operations on [..., H, W] int32 tensors


def _pass(x: torch.Tensor, d: int) -> torch.Tensor:
    """One binomial pass along dim d: (x[i - 1] + 2 x[i] + x[i + 1] + 2) >> 2, edges repeated."""
    n = x.shape[d]
    y = 2 * x + 2
    y.narrow(d, 1, n - 1).add_(x.narrow(d, 0, n - 1))
    y.narrow(d, 0, 1).add_(x.narrow(d, 0, 1))
    y.narrow(d, 0, n - 1).add_(x.narrow(d, 1, n - 1))
    y.narrow(d, n - 1, 1).add_(x.narrow(d, n - 1, 1))
    return y >> 2


def blur(x: torch.Tensor) -> torch.Tensor:
    """Binomial [1 2 1] / 4 twice along each of the last two dims, rounded half up each pass."""
    for d in (x.dim() - 1, x.dim() - 1, x.dim() - 2, x.dim() - 2):
        if x.shape[d] > 1:
            x = _pass(x, d)
    return x


def down(x: torch.Tensor) -> torch.Tensor:
    """2x2 means (rounded half up) of the last two dims, an odd last row or column dropped."""
    h, w = x.shape[-2] // 2 * 2, x.shape[-1] // 2 * 2
    x = x[..., :h, :w]
    total = x[..., 0::2, 0::2] + x[..., 1::2, 0::2] + x[..., 0::2, 1::2] + x[..., 1::2, 1::2]
    return (total + 2) >> 2


def _up_dim(x: torch.Tensor, size: int, d: int) -> torch.Tensor:
    """Linear doubling along dim d ((3 x[i] + x[i -+ 1] + 2) >> 2 at 2i and 2i + 1, edges
    repeated), then the last element repeated up to `size`; written into one output tensor."""
    n = x.shape[d]
    shape = list(x.shape)
    shape[d] = size
    out = x.new_empty(shape)
    pairs = out.narrow(d, 0, 2 * n).unflatten(d, (n, 2))
    even, odd = pairs.select(d + 1, 0), pairs.select(d + 1, 1)
    even.narrow(d, 0, 1).copy_(x.narrow(d, 0, 1))  # (4 x[0] + 2) >> 2 = x[0]
    odd.narrow(d, n - 1, 1).copy_(x.narrow(d, n - 1, 1))
    if n > 1:
        three = 3 * x + 2
        even.narrow(d, 1, n - 1).copy_((three.narrow(d, 1, n - 1) + x.narrow(d, 0, n - 1)) >> 2)
        odd.narrow(d, 0, n - 1).copy_((three.narrow(d, 0, n - 1) + x.narrow(d, 1, n - 1)) >> 2)
    if size > 2 * n:
        out.narrow(d, 2 * n, size - 2 * n).copy_(
            x.narrow(d, n - 1, 1).expand_as(out.narrow(d, 2 * n, size - 2 * n))
        )
    return out


def up(x: torch.Tensor, shape: tuple[int, int]) -> torch.Tensor:
    """x [..., h, w] linearly upsampled to shape (H, W), H in (2h, 2h + 1), W in (2w, 2w + 1)."""
    return _up_dim(_up_dim(x, shape[1], x.dim() - 1), shape[0], x.dim() - 2)


def bloom(level: torch.Tensor, threshold: int, n: int, strength: int) -> torch.Tensor:
    """The glow [..., H, W] int32 of `level`: max(L - threshold, 0) halved n times by down; the top
    min(OCTAVES, n) levels blurred and summed on the way back up (each level's blur of itself plus
    the one above, upsampled); then upsampled to the canvas and scaled by strength / 256 / octaves.
    The pyramid carries BLOOM_BITS more bits (values < 2^21, sums of 5 octaves < 2^24: int32)."""
    pyramid = [torch.clamp(level - threshold, min=0) << BLOOM_BITS]
    for _ in range(n):
        pyramid.append(down(pyramid[-1]))
    octaves = min(OCTAVES, n)
    glow = blur(pyramid[n])
    for k in range(n - 1, n - octaves, -1):
        glow = blur(up(glow, pyramid[k].shape[-2:]) + pyramid[k])
    for k in range(n - octaves, -1, -1):
        glow = up(glow, pyramid[k].shape[-2:])
    scaled = glow.to(torch.int64) * strength // (256 * octaves << BLOOM_BITS)
    return scaled.to(torch.int32)


# ---------------------------------------------------------------------------------------------
# The look of one preset


def vignette_falloff(height: int, width: int, device) -> torch.Tensor:
    """[H, W] int32 q = f * f // ONE, f = r2 * ONE // r2max (0 .. ONE), with r2 the squared distance
    from the centre in half pixels (dx = 2x + 1 - W) and r2max a corner's; a vignette of amount
    A (in 1/4096) multiplies by (ONE - A * q // ONE) / ONE."""
    dx = torch.arange(width, device=device, dtype=torch.int64) * 2 + 1 - width
    dy = torch.arange(height, device=device, dtype=torch.int64) * 2 + 1 - height
    r2 = dy[:, None] ** 2 + dx[None, :] ** 2
    f = r2 * ONE // max(1, (width - 1) ** 2 + (height - 1) ** 2)
    return (f * f // ONE).to(torch.int32)


def grain_noise(height: int, width: int, seed_key: int, device) -> torch.Tensor:
    """[H, W] int32 triangular noise n in -4095 .. 4095 of the canvas: two 12-bit fields of
    h = lowbias32(lowbias32(pixel ^ seed_key)), pixel = y * W + x. A frame shows it rolled
    (grain_shift) and scaled, (n * amount) >> 12, so it is hashed once per canvas."""
    cells = torch.arange(height * width, device=device, dtype=torch.int64).reshape(height, width)
    h = lowbias32(lowbias32(cells ^ seed_key))
    return ((h & 0xFFF) + ((h >> 12) & 0xFFF) - 4095).to(torch.int32)


def grain_shift(frame: int, seed_key: int, height: int, width: int) -> tuple[int, int]:
    """(dy, dx) the grain of frame number `frame` is rolled by: h = lowbias32(frame + seed_key),
    dy = h mod H, dx = (h >> 16) mod W."""
    h = lowbias32_int((frame + seed_key) & U32)
    return h % height, (h >> 16) % width


class Values(NamedTuple):
    """A frame's look values as the integers (and one float32) the device uses."""

    exposure: float  # float32(ONE * exposure)
    threshold: int  # round(ONE * bloom_threshold)
    strength: int  # round(256 * bloom)
    vignette: int  # round(ONE * vignette)
    grain: int  # round(DISPLAY * grain)


class HdrLook:
    """A preset's look section as integers, and its index frames (index). frame_step: the step
    frame number f is taken after (sim/course.py), where scheduled values are valued; end: the
    run's last step (schedules' percentages)."""

    def __init__(
        self, look: Look, gamma: float, seed: int, frame_step: Callable[[int], int] = int, end: int = 0
    ):
        self.look, self.frame_step, self.end = look, frame_step, end
        self.table = torch.from_numpy(tone_table(look.curve, float(gamma)))
        self.seed_key = lowbias32_int(seed ^ 0x9E3779B9)  # not the model's key (lowbias32(seed))
        self.scheduled = any(
            is_scheduled(v)
            for v in (look.exposure, look.bloom, look.bloom_threshold, look.vignette, look.grain)
        )
        self._fixed = None if self.scheduled else self._values_at(0)
        self._device: dict = {}

    def _values_at(self, step: int) -> Values:
        """The look's values at `step`, each exact until rounded here once."""
        look, end = self.look, self.end
        return Values(
            exposure=float32_nearest(ONE * value_at(look.exposure, step, end)),
            threshold=min(LMAX, round(ONE * value_at(look.bloom_threshold, step, end))),
            strength=round(256 * value_at(look.bloom, step, end)),
            vignette=round(ONE * value_at(look.vignette, step, end)),
            grain=round(DISPLAY * value_at(look.grain, step, end)),
        )

    def values(self, frame: int) -> Values:
        """The values of frame number `frame` (those at its step, where any is scheduled)."""
        return self._fixed if self._fixed is not None else self._values_at(self.frame_step(frame))

    def constants(self, device: torch.device, height: int, width: int) -> dict:
        """The look's constants for a canvas on `device`, made there once."""
        key = (device, height, width)
        if key not in self._device:
            tiles = (-(-height // BAYER_SIDE), -(-width // BAYER_SIDE))
            dither = np.tile(dither_offsets(self.look.dither), tiles)[:height, :width]
            constants = {
                "table": self.table.to(device),
                "dither": torch.from_numpy(np.ascontiguousarray(dither)).to(device),
                "levels": bloom_levels(width, height, self.look.bloom_radius),
            }
            if self.look.vignette != 0:
                constants["falloff"] = vignette_falloff(height, width, device)
            if self.look.grain != 0:
                constants["noise"] = grain_noise(height, width, self.seed_key, device)
            self._device[key] = constants
        return self._device[key]

    def scaled(self, constants: dict, name: str, scale: Callable) -> torch.Tensor:
        """scale(constants[name]): made every frame where the look is scheduled, else once."""
        if self.scheduled:
            return scale(constants[name])
        if name + "-scaled" not in constants:
            constants[name + "-scaled"] = scale(constants[name])
        return constants[name + "-scaled"]

    def linear(
        self, trail: torch.Tensor, low: torch.Tensor, high: torch.Tensor, exposure: float | None = None
    ) -> torch.Tensor:
        """[..., H, W] int32 L = floor((trail - low) * min(E / (high - low), 2^100)), 0 .. LMAX, with
        E = float32(ONE * exposure) (frame 0's unless given); the bound, exact, keeps a level
        range of a few ulps from making 0 * inf = NaN."""
        exposure = self.values(0).exposure if exposure is None else exposure
        full = torch.full((), exposure, dtype=torch.float32, device=trail.device)  # a fill: no copy
        scale = torch.clamp(full / (high - low), max=2.0**100)
        return torch.floor((trail - low) * scale).clamp_(0, LMAX).to(torch.int32)

    def vignette(self, values: torch.Tensor, constants: dict, v: Values) -> torch.Tensor:
        """values * (ONE - A q // ONE) >> 12: the vignette of strength A = v.vignette over the
        canvas's radial fall-off q (constants from self.constants)."""
        return (values * self.scaled(constants, "falloff", lambda q: ONE - v.vignette * q // ONE)) >> 12

    def grain(self, display: torch.Tensor, constants: dict, v: Values, frame: int) -> torch.Tensor:
        """display plus the canvas's grain of strength v.grain, rolled by frame `frame`
        (grain_shift), clamped to 0 .. DISPLAY."""
        shift = grain_shift(frame, self.seed_key, *display.shape[-2:])
        noise = self.scaled(constants, "noise", lambda n: (n * v.grain) >> 12)
        return (display + torch.roll(noise, shift, (0, 1))).clamp_(0, DISPLAY)

    def index(self, trail: torch.Tensor, low: torch.Tensor, high: torch.Tensor, frame: int) -> torch.Tensor:
        """[..., H, W] uint8 palette indices of frame number `frame` (high > low, device tensors)."""
        c = self.constants(trail.device, *trail.shape[-2:])
        v = self.values(frame)
        level = self.linear(trail, low, high, v.exposure)
        if v.strength:
            glow = bloom(level, v.threshold, c["levels"], v.strength)
            level = (level + glow).clamp_(max=LMAX)
        if v.vignette:
            level = self.vignette(level, c, v)
        display = c["table"][level]
        if v.grain:
            display = self.grain(display, c, v, frame)
        return ((display * 255 + c["dither"]) // DISPLAY).to(torch.uint8)
