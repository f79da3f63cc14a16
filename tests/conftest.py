"""Shared fixtures (plain helpers are in support.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from physarum.render.preset import build_preset
from support import tiny_data


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
