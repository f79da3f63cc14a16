"""The camera's exact views (render/look/camera.py): orbit frames, the fitting distance, keys."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from physarum.render.look.camera import FIX, view
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
