"""The camera's exact views (render/look/camera.py): orbit frames, the fitting distance, keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from physarum.render.look.camera import FIX, lens_views, view
from physarum.render.preset.camera import Camera

ONE = 1 << FIX


def test_first_orbit_frame_looks_like_the_canvas():
    """At elevation 0 and frame 0 the camera looks down -z: x to the right, y down the frame."""
    v = view(Camera.model_validate({"orbit": {"elevation": 0}}), (16, 16, 16), (8, 8), 0, 4)
    assert v.forward == (0, 0, -ONE)
    assert v.right[0] > 0 and v.right[1:] == (0, 0)
    assert v.up[1] < 0 and v.up[0] == v.up[2] == 0
    assert v.origin[:2] == (8 * ONE, 8 * ONE) and v.origin[2] > 16 * ONE


def test_a_quarter_turn_looks_down_minus_x_and_a_whole_turn_comes_back():
    camera = Camera.model_validate({"orbit": {"turns": 1, "elevation": 0}})
    assert view(camera, (16, 16, 16), (8, 8), 1, 4).forward == (-ONE, 0, 0)
    assert view(camera, (16, 16, 16), (8, 8), 4, 4) == view(camera, (16, 16, 16), (8, 8), 0, 4)


def test_the_default_distance_fits_the_volume_and_samples_span_it():
    v = view(Camera(), (10, 20, 30), (40, 30), 0, 1)
    assert len(v.depths) == 38  # the diagonal, sqrt(1400) = 37.4, rounded up
    assert list(v.depths) == sorted(v.depths) and v.depths[0] > 0
    position = Camera.model_validate({"position": [0, 0, 0.1], "samples": 5})
    assert view(position, (8, 8, 8), (8, 8), 0, 1).depths[0] >= 0  # inside the volume: near is 0


def test_camera_keys_refused():
    with pytest.raises(ValidationError, match="orbit or position"):
        Camera.model_validate({"orbit": {}, "position": [0, 0, 2]})
    with pytest.raises(ValidationError, match="same point"):
        Camera.model_validate({"position": [0, 0, 0]})
    with pytest.raises(ValidationError, match="hex colour"):
        Camera.model_validate({"background": "blue"})
    with pytest.raises(ValueError, match="too far"):
        view(
            Camera.model_validate({"position": [0, 0, 1000], "fov": 150, "samples": 8}),
            (4096, 4096, 4096),
            (4096, 8),  # a wide frame: long directions at its sides
            0,
            1,
        )


# ---------------------------------------------------------------------------------------------
# Depth of field: a thin lens's views


def _lens(**lens) -> Camera:
    return Camera.model_validate({"position": [0.3, -0.2, 2.5], "fov": 45, "depth_of_field": lens})


def test_a_pinhole_camera_has_one_view_and_a_lens_has_rays_views():
    pinhole = Camera.model_validate({"position": [0.3, -0.2, 2.5], "fov": 45})
    grid, size = (24, 24, 24), (16, 12)
    assert lens_views(pinhole, grid, size, 0, 1) == [view(pinhole, grid, size, 0, 1)]
    views = lens_views(_lens(aperture=0.2, rays=9), grid, size, 0, 1)
    assert len(views) == 9 and len(set(views)) == 9
    assert views == lens_views(_lens(aperture=0.2, rays=9), grid, size, 0, 1)  # the same numbers


def test_the_lens_views_meet_on_the_focus_plane_and_their_origins_lie_on_the_lens():
    """Every lens view's ray through a pixel passes through the pinhole ray's point at depth
    `focus` (within the fixed point's rounding), and the lens points lie in the plane of right
    and up, within `aperture` of the camera (units: half longest sides, 12 voxels here)."""
    grid, size = (24, 24, 24), (16, 12)
    pinhole = view(_lens(aperture=0.3, focus=1.7), grid, size, 0, 1)
    views = lens_views(_lens(aperture=0.3, focus=1.7), grid, size, 0, 1)
    focus = round(1.7 * 12 * ONE)  # voxels, fixed point
    unit = sum(c * c for c in pinhole.forward) ** 0.5
    for v in views:
        shift = [o - p for o, p in zip(v.origin, pinhole.origin)]
        assert abs(sum(s * f for s, f in zip(shift, pinhole.forward))) / unit <= 2 * ONE // 256  # on the lens
        assert sum(s * s for s in shift) ** 0.5 <= 0.3 * 12 * ONE + 2
        for i, j in ((0, 0), (15, 11), (7, 5)):
            here = _point(v, i, j, focus)
            there = _point(pinhole, i, j, focus)
            assert max(abs(a - b) for a, b in zip(here, there)) <= ONE // 64  # within 1/64 voxel
    far = [_point(v, 7, 5, 2 * focus) for v in views]
    assert max(p[0] for p in far) - min(p[0] for p in far) > ONE  # elsewhere the rays part


def _point(v, i: int, j: int, depth: int) -> tuple[int, ...]:
    """The point at `depth` (fixed point) on pixel (i, j)'s ray, as the renderer computes it."""
    out_w, out_h = v.size
    d = [
        (out_h * v.forward[a] + v.right[a] * (2 * i + 1 - out_w) + v.up[a] * (out_h - 1 - 2 * j)) // out_h
        for a in range(3)
    ]
    return tuple(v.origin[a] + ((depth * d[a]) >> FIX) for a in range(3))


@pytest.mark.parametrize(
    "lens, problem",
    [
        ({"rays": 1}, "greater than or equal to 2"),
        ({"rays": 65}, "less than or equal to 64"),
        ({"aperture": 0}, "greater than 0"),
        ({"focus": -1}, "greater than 0"),
    ],
)
def test_lens_keys_refused(lens, problem):
    with pytest.raises(ValidationError, match=problem):
        Camera.model_validate({"depth_of_field": lens})
