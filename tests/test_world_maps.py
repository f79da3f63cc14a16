"""World maps: images resized exactly, walls, food points."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from PIL import Image

from physarum.render.preset import build_preset
from physarum.render.preset.images import (
    IMAGE_PIXELS_ANY_CANVAS,
    MAX_IMAGE_PIXELS,
    allowed_pixels,
    box_resize,
    read_grey,
)
from physarum.render.world.maps import point_cells, wall_cells
from support import fifo, problems_of, save_image, tiny_data


def test_box_resize_is_an_exact_area_average():
    assert box_resize(np.array([[0, 30, 90]], np.uint8), 2, 1).tolist() == [[10, 70]]  # (2a+b)/3, (b+2c)/3
    assert box_resize(np.array([[0, 1], [0, 0]], np.uint8), 1, 1).tolist() == [[0]]  # 0.25 -> 0
    assert box_resize(np.array([[0, 1], [0, 1]], np.uint8), 1, 1).tolist() == [[1]]  # 0.5 -> 1 (half up)
    assert box_resize(np.array([[7, 200]], np.uint8), 4, 2).tolist() == [[7, 7, 200, 200]] * 2
    rng = np.random.default_rng(1)
    pixels = rng.integers(0, 256, (37, 53), dtype=np.uint8)
    small = box_resize(pixels, 11, 7)
    exact = Fraction(int(pixels[:, :].astype(np.int64).sum()), pixels.size)
    assert abs(Fraction(int(small.astype(np.int64).sum()), small.size) - exact) < 1
    assert box_resize(pixels, 53, 37) is pixels


def test_walls_threshold_invert_and_colour_images(images):
    def walls(**spec):
        return wall_cells(
            build_preset(tiny_data(world={"walls": {"path": "wall.png", **spec}}), str(images / "p.yaml"))
        )

    wall = walls()
    assert wall.shape == (32, 48) and wall[:, :16].all() and not wall[:, 16:].any()
    assert (walls(invert=True) == ~wall).all()
    square = wall_cells(
        build_preset(tiny_data(world={"walls": {"path": "square.png"}}), str(images / "p.yaml"))
    )  # RGB: converted to greyscale
    assert square[8:24, 12:36].all() and not square[:8].any() and square.sum() == 16 * 24


def test_a_food_points_disk_by_hand():
    # a point's disk, hand-checked: centre (36, 16), radius 3.2 cells
    inside = point_cells(0.75, 0.5, 0.1, 48, 32)
    assert (
        inside[16, 36] and inside[18, 37] and not inside[18, 38] and not inside[16, 39] and inside.sum() == 32
    )
    assert point_cells(0.0, 0.0, 0.0, 8, 8).sum() == 1 and point_cells(1.0, 1.0, 0.0, 8, 8)[7, 7]


def test_sixteen_bit_and_float_images_are_read_by_their_range(tmp_path):
    wide = np.arange(0, 65536, 257, dtype=np.uint16).reshape(16, 16)  # 0, 257, ... 65535
    Image.fromarray(wide).save(tmp_path / "wide.png")
    assert Image.open(tmp_path / "wide.png").mode == "I;16"
    assert read_grey(str(tmp_path / "wide.png")).tolist() == np.arange(256).reshape(16, 16).tolist()
    halves = np.array([[0, 128, 32767, 32768, 65534, 65535]], np.uint16)  # v * 255 / 65535, half up
    Image.fromarray(halves).save(tmp_path / "halves.png")
    assert read_grey(str(tmp_path / "halves.png")).tolist() == [[0, 0, 127, 128, 255, 255]]
    floats = np.array([[0.0, 0.5, 1.0, 1 / 255, 0.25]], np.float32)
    Image.fromarray(floats).save(tmp_path / "float.tif")
    assert read_grey(str(tmp_path / "float.tif")).tolist() == [[0, 128, 255, 1, 64]]


def test_images_that_cannot_be_read_by_their_range_are_refused(tmp_path):
    Image.fromarray(np.array([[0.0, 2.0]], np.float32)).save(tmp_path / "bright.tif")
    with pytest.raises(
        ValueError, match=r"float pixels from 0 to 2; float images are read as 0 \(black\) to 1"
    ):
        read_grey(str(tmp_path / "bright.tif"))
    Image.fromarray(np.array([[0, 70000]], np.int32)).save(tmp_path / "int.tif")
    with pytest.raises(ValueError, match=r"32-bit integer pixels \(mode I\)"):
        read_grey(str(tmp_path / "int.tif"))


def test_an_image_far_larger_than_its_canvas_is_refused_from_its_header(tmp_path, monkeypatch):
    save_image(tmp_path / "huge.png", np.zeros((3000, 3000)))  # 9 Mpx, a few KB of PNG
    assert allowed_pixels(48, 32) == IMAGE_PIXELS_ANY_CANVAS < 3000 * 3000
    decoded = []
    monkeypatch.setattr(Image.Image, "load", lambda self: decoded.append(self) or None)
    problems = problems_of(tiny_data(world={"walls": {"path": "huge.png"}}), source=str(tmp_path / "p.yaml"))
    assert decoded == [] and len(problems) == 1
    assert "world.walls.path: " in problems[0] and "huge.png is 3000x3000 = 9000000 pixels" in problems[0]
    assert f"the most allowed on this canvas is {IMAGE_PIXELS_ANY_CANVAS}" in problems[0]
    assert allowed_pixels(1024, 1024) == 16 << 20 and allowed_pixels(16384, 16384) == MAX_IMAGE_PIXELS


def test_an_image_that_is_a_fifo_is_refused_without_opening_it(tmp_path):
    fifo(tmp_path / "pipe.png")
    problems = problems_of(tiny_data(world={"walls": {"path": "pipe.png"}}), source=str(tmp_path / "p.yaml"))
    assert len(problems) == 1 and "pipe.png is a FIFO (named pipe), not a regular file" in problems[0]
