"""The exact arithmetic of the 3D model, on the host: the direction table, its sensor cones and
turns, and the per-simulation tables (docs/model.md section 13).

A direction is an index d into a fixed table of DIRECTIONS unit vectors: the cells of a cube map
of CUBE_SIDE x CUBE_SIDE cells a face. Cell (face f, i, j) is the ray through the centre of that
cell, the integer vector c with c[a] = +-CUBE_SIDE on the face's axis a and 2i + 1 - CUBE_SIDE,
2j + 1 - CUBE_SIDE on its other two axes (b < c); d = (f * CUBE_SIDE + i) * CUBE_SIDE + j with
f = 2a (+) or 2a + 1 (-). Any integer vector v has the direction of the cell its ray crosses
(`direction_of`: integers only). The unit vectors and every rotation are integers at UNIT_BITS
fixed point, computed with integer square roots and rounded divisions, so every machine builds
the same tables:

- U[d] = c / |c|, E1[d] = (c x e_a) / |.|, E2[d] = (c x (c x e_a)) / |.|: an orthonormal frame;
- the ring of AROUND sensors: R_k = cos(k/AROUND turns) E1 + sin(k/AROUND turns) E2;
- sensor k (k = 1 .. AROUND) looks along cos(sensor_angle) U + sin(sensor_angle) R_k, sensor 0
  along U; its 16.16 offset is that unit vector times sensor_distance;
- turning toward sensor k leads to direction_of(cos(turn_angle) U + sin(turn_angle) R_k).

Cosines and sines come from exact.decimal_cos_sin (Decimal Taylor series) rounded half to even,
every product of two UNIT_BITS values is divided back by 2^UNIT_BITS rounded half to even
(int64 never overflows: |products| < 2^61), distances are taken in whole 1/65536 pixels.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_EVEN
from fractions import Fraction
from functools import lru_cache
from math import isqrt

import numpy as np
import torch

from .api import MIN_COEFFICIENT, ONE, UNIT_BITS, ModelParams
from .exact import (
    coefficient_tensors,
    coefficients,
    decimal_cos_sin,
    float32_nearest,
)

CUBE_SIDE = 64  # cells along each edge of a cube-map face
DIRECTIONS = 6 * CUBE_SIDE * CUBE_SIDE  # 24576: every direction index fits int16
AROUND = 4  # sensors on the cone around the forward one
SENSORS = 1 + AROUND  # forward first, then the cone


@dataclass
class Tables3D:
    """Per-simulation constants of the 3D model (one entry per group), derived once.

    sense_offset: [B, DIRECTIONS, SENSORS, 4] int32: 16.16 (dx, dy, dz, 0) of each sensor
    turn_to:      [B, DIRECTIONS, SENSORS] int16: the direction after turning toward sensor k
                  (k = 0: the direction itself)
    step_offset:  [B, DIRECTIONS, 4] int32: 16.16 (dx, dy, dz, 0) of a step
    mirror:       [DIRECTIONS, 4] int16: the direction with its x, y, z component negated
                  (reflect), and the opposite direction (all three)
    deposit, keep, spread, retain: [B] float32 (spread = diffuse / 27)
    seed_key:     [B] int64, lowbias32(seed)
    """

    sense_offset: torch.Tensor
    turn_to: torch.Tensor
    step_offset: torch.Tensor
    mirror: torch.Tensor
    deposit: torch.Tensor
    keep: torch.Tensor
    spread: torch.Tensor
    retain: torch.Tensor
    seed_key: torch.Tensor

    def to(self, device: torch.device | str) -> Tables3D:
        return replace(self, **{k: v.to(device) for k, v in self.__dict__.items()})


# ---------------------------------------------------------------------------------------------
# Integer helpers.


def _round_shift(x: np.ndarray, shift: int = UNIT_BITS) -> np.ndarray:
    """x / 2^shift rounded half to even, for int64 arrays (floor shifts, then the remainder)."""
    quotient = x >> shift
    twice_remainder = (x - (quotient << shift)) << 1
    half = 1 << shift
    up = (twice_remainder > half) | ((twice_remainder == half) & (quotient & 1 == 1))
    return quotient + up


def _unit(v: Sequence[int]) -> tuple[int, ...]:
    """An integer vector scaled to length 2^UNIT_BITS, each component's magnitude rounded to
    nearest (floor(sqrt(x)) = isqrt(floor(x)); a half rounds up), its sign kept."""
    norm2 = sum(c * c for c in v)
    scaled = [(isqrt((4 * c * c << (2 * UNIT_BITS)) // norm2) + 1) // 2 for c in v]
    return tuple(s if c >= 0 else -s for s, c in zip(scaled, v))


def _cross(u: Sequence[int], v: Sequence[int]) -> tuple[int, int, int]:
    return (u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0])


def cos_sin(turns: Fraction) -> tuple[int, int]:
    """cos and sin of an angle in turns at UNIT_BITS fixed point, rounded half to even."""
    scale = 1 << UNIT_BITS
    return tuple(int((v * scale).to_integral_value(rounding=ROUND_HALF_EVEN)) for v in decimal_cos_sin(turns))


# ---------------------------------------------------------------------------------------------
# The cube map.


@lru_cache(maxsize=1)
def centres() -> np.ndarray:
    """[DIRECTIONS, 3] int64: the integer ray c of every direction (x, y, z)."""
    m = CUBE_SIDE
    odd = 2 * np.arange(m, dtype=np.int64) + 1 - m
    out = np.zeros((6, m, m, 3), dtype=np.int64)
    for f in range(6):
        a, negative = divmod(f, 2)
        b, c = [axis for axis in range(3) if axis != a]
        out[f, :, :, a] = -m if negative else m
        out[f, :, :, b] = odd[:, None]
        out[f, :, :, c] = odd[None, :]
    return out.reshape(DIRECTIONS, 3)


def direction_of(v: np.ndarray) -> np.ndarray:
    """[...] int64 direction index of integer vectors v [..., 3] (none zero): the face of the
    largest |component| (the first axis on a tie), then i = floor((v_b + |v_a|) * M / (2 |v_a|))
    and j likewise, held to [0, M - 1]. Integers only: |v| < 2^32 keeps products below 2^39."""
    m = CUBE_SIDE
    size = np.abs(v)
    a = np.argmax(size, axis=-1)
    major = np.take_along_axis(size, a[..., None], -1)[..., 0]
    negative = np.take_along_axis(v, a[..., None], -1)[..., 0] < 0
    b = np.where(a == 0, 1, 0)
    c = np.where(a == 2, 1, 2)
    v_b = np.take_along_axis(v, b[..., None], -1)[..., 0]
    v_c = np.take_along_axis(v, c[..., None], -1)[..., 0]
    i = np.clip(((v_b + major) * m) // (2 * major), 0, m - 1)
    j = np.clip(((v_c + major) * m) // (2 * major), 0, m - 1)
    return ((2 * a + negative) * m + i) * m + j


@lru_cache(maxsize=1)
def frames() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(U, E1, E2), each [DIRECTIONS, 3] int64 at UNIT_BITS: every direction's unit vector and
    two unit vectors perpendicular to it (from c x e_a, never zero: c's minor parts are odd)."""
    us, e1s, e2s = [], [], []
    for c in centres().tolist():
        a = max(range(3), key=lambda k: abs(c[k]))
        axis = [0, 0, 0]
        axis[a] = 1
        side = _cross(c, axis)
        us.append(_unit(c))
        e1s.append(_unit(side))
        e2s.append(_unit(_cross(c, side)))
    return tuple(np.array(t, dtype=np.int64) for t in (us, e1s, e2s))


@lru_cache(maxsize=1)
def rings() -> np.ndarray:
    """[AROUND, DIRECTIONS, 3] int64: R_k = cos(k / AROUND turns) E1 + sin(...) E2, rounded."""
    _, e1, e2 = frames()
    out = []
    for k in range(AROUND):
        ck, sk = cos_sin(Fraction(k, AROUND))
        out.append(_round_shift(ck * e1 + sk * e2))
    return np.stack(out)


@lru_cache(maxsize=1)
def mirrors() -> np.ndarray:
    """[DIRECTIONS, 4] int64: the direction of c with x, y, z negated in turn, and of -c."""
    c = centres()
    columns = []
    for axis in range(3):
        flipped = c.copy()
        flipped[:, axis] *= -1
        columns.append(direction_of(flipped))
    columns.append(direction_of(-c))
    return np.stack(columns, axis=1)


def _cone(angle_degrees: float) -> np.ndarray:
    """[SENSORS, DIRECTIONS, 3] int64 unit vectors at `angle` from U toward each ring vector
    (row 0: U itself)."""
    u = frames()[0]
    ca, sa = cos_sin(Fraction(angle_degrees) / 360)
    tilted = _round_shift(ca * u[None] + sa * rings())
    return np.concatenate([u[None], tilted])


def fixed_distance(distance: float) -> int:
    """A distance in whole 1/65536 pixels (round half to even, exact)."""
    return round(Fraction(distance) * ONE)


@lru_cache(maxsize=64)
def sense_table(sensor_angle: float, sensor_distance: float) -> np.ndarray:
    """[DIRECTIONS, SENSORS, 4] int32 16.16 sensor offsets (the fourth column 0)."""
    offsets = _round_shift(_cone(sensor_angle) * fixed_distance(sensor_distance))
    out = np.zeros((DIRECTIONS, SENSORS, 4), dtype=np.int32)
    out[..., :3] = offsets.transpose(1, 0, 2)
    return out


@lru_cache(maxsize=64)
def turn_table(turn_angle: float) -> np.ndarray:
    """[DIRECTIONS, SENSORS] int16: where turning by turn_angle toward each sensor leads."""
    turned = direction_of(_cone(turn_angle)).T.copy()
    turned[:, 0] = np.arange(DIRECTIONS)
    return turned.astype(np.int16)


@lru_cache(maxsize=64)
def step_table(step_size: float) -> np.ndarray:
    """[DIRECTIONS, 4] int32 16.16 step vectors (the fourth column 0)."""
    out = np.zeros((DIRECTIONS, 4), dtype=np.int32)
    out[:, :3] = _round_shift(frames()[0] * fixed_distance(step_size))
    return out


def coefficients3d(params: ModelParams) -> tuple[float, float, float, float]:
    """(deposit, keep, spread, retain) as float32 values, the 2D rule (exact.coefficients:
    exactly rounded, below MIN_COEFFICIENT 0) but spread = diffuse / 27, the weight of each of
    the 27 neighbours."""
    deposit, keep, _, retain = coefficients(params)
    spread = float32_nearest(Fraction(params.diffuse) / 27)
    return deposit, keep, 0.0 if spread < MIN_COEFFICIENT else spread, retain


def build_tables3d(params: Sequence[ModelParams], device: torch.device | str = "cpu") -> Tables3D:
    """The 3D tables of a batch of groups (one ModelParams each)."""
    tables = Tables3D(
        sense_offset=torch.from_numpy(
            np.stack([sense_table(p.sensor_angle, p.sensor_distance) for p in params])
        ),
        turn_to=torch.from_numpy(np.stack([turn_table(p.turn_angle) for p in params])),
        step_offset=torch.from_numpy(np.stack([step_table(p.step_size) for p in params])),
        mirror=torch.from_numpy(mirrors().astype(np.int16)),
        **coefficient_tensors([coefficients3d(p) for p in params], params),
    )
    return tables.to(device)
