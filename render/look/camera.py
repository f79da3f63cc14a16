"""The camera of a 3D preset, on the host and exact: each frame's view as integers.

A view (View) is what the volume renderer (render/look/volume.py) needs to cast the frame's
rays with integer tensor ops only: the camera's origin in voxels, its forward, right and up
vectors (right and up scaled by tan(fov / 2)) and the depths of the samples along the forward
axis, each rounded half even to FIX-bit fixed point from 60-digit Decimal arithmetic (the exact
unit circle's kind, kernels/exact.py: platform independent, computed once a frame).

Space: the preset's camera coordinates are in units of half the volume's longest side, the
volume's centre at 0, x right, y down (the canvas's rows), z toward the viewer of the first
orbit frame; voxel (x, y, z) covers [x, x + 1) x [y, y + 1) x [z, z + 1) of the grid
(trail[z, y, x]). The ray of pixel (i, j) of a W x H frame is the line
origin + s * d(i, j), s >= 0, with
    d(i, j) = forward + right * (2i + 1 - W) / H + up * (H - 1 - 2j) / H,
so that a point at depth s along the forward axis is origin + s * d (forward . d = 1).
Samples are taken at the depths of the planes s_k = near + (far - near) * (2k + 1) / (2 S),
k = 0 .. S - 1, where [near, far] is the depth range of the volume's bounding sphere.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import ROUND_HALF_EVEN, Decimal, localcontext
from fractions import Fraction

from ...kernels.exact import decimal_cos_sin
from ..preset.camera import Camera, Orbit

FIX = 16  # fixed-point bits of positions (voxels) and directions
PRECISION = 60
MAX_PRODUCT = 2**62  # |depth * direction| must stay inside int64


@dataclass(frozen=True)
class View:
    """One frame's view, in FIX-bit fixed point: origin (x, y, z) in voxels; forward, right, up
    (right and up times tan(fov / 2)); depths: the S sample depths along forward, in voxels;
    size: the frame's (width, height)."""

    origin: tuple[int, int, int]
    forward: tuple[int, int, int]
    right: tuple[int, int, int]
    up: tuple[int, int, int]
    depths: tuple[int, ...]
    size: tuple[int, int]


def _dec(value) -> Decimal:
    """A number (int, float, Fraction) as a Decimal in the current context (a float exactly)."""
    if isinstance(value, Fraction):
        return Decimal(value.numerator) / Decimal(value.denominator)
    return +Decimal(value)


def _norm(v: tuple[Decimal, ...]) -> tuple[Decimal, ...]:
    length = sum(c * c for c in v).sqrt()
    return tuple(c / length for c in v)


def _cross(a, b):
    return (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0])


def _dot(a, b) -> Decimal:
    return sum(x * y for x, y in zip(a, b))


def _fixed(value: Decimal) -> int:
    return int((value * (1 << FIX)).to_integral_value(rounding=ROUND_HALF_EVEN))


def _turns_cos_sin(turns: Fraction) -> tuple[Decimal, Decimal]:
    """cos and sin of an angle in turns (reduced to [0, 1) first, exactly)."""
    return decimal_cos_sin(turns - (turns.numerator // turns.denominator))


def _tan_half(fov: float) -> Decimal:
    cos, sin = _turns_cos_sin(Fraction(fov) / 720)
    return sin / cos


def orbit_position(camera: Camera, frame: int, frames: int, fit: Decimal) -> tuple[Decimal, ...]:
    """The camera's position (units) at frame `frame` of `frames` on its orbit round the target:
    azimuth start + turns * frame / frames (turns), elevation above the horizontal."""
    orbit = camera.orbit
    azimuth = Fraction(orbit.start) / 360 + Fraction(orbit.turns) * Fraction(frame, max(1, frames))
    cos_a, sin_a = _turns_cos_sin(azimuth)
    cos_e, sin_e = _turns_cos_sin(Fraction(orbit.elevation) / 360)
    distance = fit if orbit.distance is None else _dec(orbit.distance)
    target = [_dec(c) for c in camera.target]
    offset = (cos_e * sin_a, -sin_e, cos_e * cos_a)
    return tuple(t + distance * o for t, o in zip(target, offset))


@dataclass(frozen=True)
class _Basis:
    """One frame's camera in Decimal units (half longest sides): position, the unit forward,
    right and up vectors, tan(fov / 2), voxels per unit (half), the sample depths (voxels, fixed
    point) and the volume's centre (voxels)."""

    position: tuple[Decimal, ...]
    forward: tuple[Decimal, ...]
    right: tuple[Decimal, ...]
    up: tuple[Decimal, ...]
    tan: Decimal
    half: Decimal
    depths: tuple[int, ...]
    centre: tuple[Decimal, ...]


def _basis(
    camera: Camera, grid: tuple[int, int, int], size: tuple[int, int], frame: int, frames: int
) -> _Basis:
    """The frame's camera, in a context of PRECISION digits rounding half even."""
    depth, height, width = grid
    out_w, out_h = size
    half = Decimal(max(grid)) / 2  # voxels per unit
    radius = (Decimal(width * width + height * height + depth * depth).sqrt() / 2) / half
    tan = _tan_half(camera.fov)
    narrow = min(tan, tan * out_w / out_h)  # the narrower half-angle's tangent
    fit = radius * (1 + narrow * narrow).sqrt() / narrow  # the bounding sphere just fits
    if camera.orbit is not None or camera.position is None:
        position = orbit_position(camera if camera.orbit else _default_orbit(camera), frame, frames, fit)
    else:
        position = tuple(_dec(c) for c in camera.position)
    target = tuple(_dec(c) for c in camera.target)
    forward = _norm(tuple(t - p for t, p in zip(target, position)))
    world_up = (Decimal(0), Decimal(-1), Decimal(0))
    if abs(_dot(forward, world_up)) > Decimal("0.999999"):
        world_up = (Decimal(0), Decimal(0), Decimal(-1))  # looking straight up or down
    right = _norm(_cross(world_up, forward))
    up = _cross(forward, right)
    to_centre = _dot(tuple(-p for p in position), forward)
    near, far = max(Decimal(0), to_centre - radius), to_centre + radius
    if far <= 0:
        far = near = Decimal(0)  # the volume is behind the camera: samples miss it
    samples = camera.samples or default_samples(grid)
    depths = tuple(_fixed((near + (far - near) * (2 * k + 1) / (2 * samples)) * half) for k in range(samples))
    centre = (Decimal(width) / 2, Decimal(height) / 2, Decimal(depth) / 2)
    return _Basis(position, forward, right, up, tan, half, depths, centre)


def _view(
    b: _Basis, position: tuple[Decimal, ...], forward: tuple[Decimal, ...], size: tuple[int, int]
) -> View:
    """The View of basis b from `position` (units) along `forward` (forward . b.forward = 1)."""
    result = View(
        origin=tuple(_fixed(c + p * b.half) for c, p in zip(b.centre, position)),
        forward=tuple(_fixed(c) for c in forward),
        right=tuple(_fixed(c * b.tan) for c in b.right),
        up=tuple(_fixed(c * b.tan) for c in b.up),
        depths=b.depths,
        size=size,
    )
    _check_range(result)
    return result


def view(camera: Camera, grid: tuple[int, int, int], size: tuple[int, int], frame: int, frames: int) -> View:
    """The view of frame `frame` (of `frames` shown) of a volume of grid (depth, height, width)
    seen by `camera` in a frame of size (width, height); ValueError when the camera looks along
    no direction or so far that a sample's position leaves int64."""
    with localcontext() as context:
        context.prec, context.rounding = PRECISION, ROUND_HALF_EVEN
        b = _basis(camera, grid, size, frame, frames)
        return _view(b, b.position, b.forward, size)


# The lens's points: a sunflower (Vogel) spiral of `rays` points over the unit disk, point k at
# radius sqrt((k + 1/2) / rays) and k golden angles round, the golden angle in turns 2 - phi
# as a fixed fraction, so that the views are the same numbers everywhere.
GOLDEN_TURNS = Fraction(381966011250105, 10**15)


def lens_views(
    camera: Camera, grid: tuple[int, int, int], size: tuple[int, int], frame: int, frames: int
) -> list[View]:
    """The views whose frames are averaged into frame `frame`: [view(...)] for a pinhole camera;
    with camera.depth_of_field, one view from each lens point p_k (a sunflower spiral on the disk
    of radius aperture, in the plane of right and up round the camera's position): from
    position + p_k, along forward - p_k / focus, with the same right, up and sample depths. The
    rays of every view through one pixel meet on the plane at distance `focus` along forward
    (unset: the target's distance), so what lies there is sharp and the rest blurs."""
    lens = camera.depth_of_field
    if lens is None:
        return [view(camera, grid, size, frame, frames)]
    with localcontext() as context:
        context.prec, context.rounding = PRECISION, ROUND_HALF_EVEN
        b = _basis(camera, grid, size, frame, frames)
        target = tuple(_dec(c) for c in camera.target)
        focus = (
            _dec(lens.focus)
            if lens.focus is not None
            else _dot(tuple(t - p for t, p in zip(target, b.position)), b.forward)
        )
        focus = max(focus, Decimal(1) / (1 << FIX))  # a target at the camera: focus on the lens
        views = []
        for k in range(lens.rays):
            r = ((Decimal(2 * k + 1) / (2 * lens.rays)).sqrt()) * _dec(lens.aperture)
            cos, sin = _turns_cos_sin(GOLDEN_TURNS * k)
            shift = tuple(r * (cos * x + sin * y) for x, y in zip(b.right, b.up))
            position = tuple(p + d for p, d in zip(b.position, shift))
            forward = tuple(f - d / focus for f, d in zip(b.forward, shift))
            views.append(_view(b, position, forward, size))
        return views


def default_samples(grid: tuple[int, int, int]) -> int:
    """Samples along each ray when camera.samples is unset: the volume's diagonal in voxels
    (rounded up), about one sample a voxel across the bounding sphere."""
    squares = sum(side * side for side in grid)
    return math.isqrt(squares - 1) + 1


def _default_orbit(camera: Camera) -> Camera:
    """A camera without orbit or position orbits with the orbit's defaults."""
    return camera.model_copy(update={"orbit": Orbit()})


def _check_range(v: View) -> None:
    """Refuse a view whose sample positions could leave int64 (render/look/volume.py)."""
    out_w, out_h = v.size
    reach = (
        max(abs(c) for c in v.forward) * out_h
        + (max(abs(c) for c in v.right) * out_w)
        + (max(abs(c) for c in v.up) * out_h)
    )
    direction = reach // out_h + 1
    deepest = max((abs(s) for s in v.depths), default=0)
    if deepest * direction >= MAX_PRODUCT or max(abs(c) for c in v.origin) >= 2**40:
        raise ValueError("the camera is too far from the volume (its samples leave 64-bit integers)")
