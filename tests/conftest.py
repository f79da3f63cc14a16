"""Shared fixtures (plain helpers are in support.py) and the one hook that skips tests this
machine cannot run.

Markers (declared in pyproject.toml), never a hand-written skipif:
- ``@pytest.mark.gpu``: needs a CUDA GPU; skipped where none is present.
- ``@pytest.mark.interpreter``: runs the Triton backend, on CUDA or in Triton's CPU interpreter;
  skipped where Triton is not installed, or neither a CUDA GPU is present nor TRITON_INTERPRET=1
  was set before Python started (Triton reads it once, at import).
- ``@pytest.mark.interpreter(cpu=True)``: runs Triton kernels on CPU tensors, so it needs the
  interpreter even where a CUDA GPU is present.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from physarum.render.preset import build_preset
from physarum.render.sim import course
from support import end_fifo_partners, save_image, tiny_data

# Read when the tests start, before anything imports Triton (which reads it only then).
INTERPRETER = os.environ.get("TRITON_INTERPRET") == "1"


def _why_not_runnable(item: pytest.Item) -> str | None:
    """Why this machine cannot run the item, by its markers; None where it can."""
    import torch

    cuda = torch.cuda.is_available()
    if item.get_closest_marker("gpu") and not cuda:
        return "marked gpu: needs a CUDA GPU, and none is present"
    marker = item.get_closest_marker("interpreter")
    if marker is None:
        return None
    if importlib.util.find_spec("triton") is None:
        return "marked interpreter: needs Triton, which is not installed"
    if marker.kwargs.get("cpu"):
        if not INTERPRETER:
            return (
                "marked interpreter(cpu=True): runs Triton on CPU tensors, so needs "
                "TRITON_INTERPRET=1 set before Python starts"
            )
    elif not (cuda or INTERPRETER):
        return "marked interpreter: Triton needs a CUDA GPU or TRITON_INTERPRET=1 set before Python starts"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip, with the reason, every collected test this machine cannot run (see the markers)."""
    for item in items:
        reason = _why_not_runnable(item)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


@pytest.fixture(autouse=True)
def _fifo_partners_ended():
    """After each test, the partner threads of the FIFOs it made (support.fifo) are ended."""
    yield
    end_fifo_partners()


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


@pytest.fixture
def steps_simulated(monkeypatch) -> list[int]:
    """Every step the renders of a test advance, counted where the course advances them."""
    counted, advance = [], course.advance

    def counting(simulation, steps, on_step=None):
        counted.append(steps)
        return advance(simulation, steps, on_step)

    monkeypatch.setattr(course, "advance", counting)
    return counted


@pytest.fixture
def s3(monkeypatch):
    """moto's S3 server on 127.0.0.1 (any free port), its test credentials and endpoint in this
    process's environment (which a subprocess inherits; test_store_probe.aws: no file of this
    machine's), one bucket, 'renders', and no S3 file system cached from another test's server.
    A test module's own `s3` fixture takes its place there."""
    moto_server = pytest.importorskip("moto.server", reason="the test extra's moto[server] runs the S3 API")
    s3fs = pytest.importorskip("s3fs", reason="object storage is the optional extra physarum[cloud]")
    from test_store_probe import aws

    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    aws(monkeypatch, f"http://127.0.0.1:{server.get_host_and_port()[1]}")
    s3fs.S3FileSystem.clear_instance_cache()  # an instance of another test's server (another port)
    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    fs.mkdir("renders")
    yield fs
    fs.rm("renders", recursive=True)  # moto's state outlives the server within this process
    server.stop()
    s3fs.S3FileSystem.clear_instance_cache()
