"""World maps: images resized exactly, walls, food points."""

from __future__ import annotations

from fractions import Fraction

import numpy as np

from physarum.render.preset import build_preset
from physarum.render.world import box_resize, point_cells, wall_cells
from support import tiny_data


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
