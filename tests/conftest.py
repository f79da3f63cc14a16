"""Shared fixtures (plain helpers are in support.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from physarum.render.preset import build_preset
from support import save_image, tiny_data


@pytest.fixture
def tiny_preset():
    return build_preset(tiny_data(), "tiny.yaml")


@pytest.fixture
def write_yaml(tmp_path):
    """Write text to a YAML file in tmp_path and return its path."""

    def write(text: str, name: str = "preset.yaml") -> Path:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return path

    return write


@pytest.fixture
def images(tmp_path):
    """Small images beside the presets: a left-third wall, a horizontal gradient, black."""
    wall = np.zeros((20, 30), np.uint8)
    wall[:, :10] = 255
    save_image(tmp_path / "wall.png", wall)
    save_image(tmp_path / "gradient.png", np.tile(np.arange(0, 256, 4, dtype=np.uint8), (40, 1)))
    save_image(tmp_path / "black.png", np.zeros((8, 8)))
    rgb = np.zeros((16, 16, 3), np.uint8)
    rgb[4:12, 4:12] = (255, 255, 255)
    save_image(tmp_path / "square.png", rgb, "RGB")
    (tmp_path / "notes.txt").write_text("not an image")
    (tmp_path / "broken.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    (tmp_path / "folder.png").mkdir()
    return tmp_path
