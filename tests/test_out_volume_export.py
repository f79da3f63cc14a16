"""Volume and mesh exports (render/out/volume_export.py): the isosurface read back by trimesh (a
library that did not write it), each file's preset, a 3D render end to end on the CPU at tiny
size, and a 2D preset's space-time stack."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys

import numpy as np
import pytest
import trimesh
from PIL import Image

from physarum.render.base import files
from physarum.render.base.errors import RenderError
from physarum.render.out.volume_export import isosurface, stl_header, write_obj, write_stl
from physarum.render.preset import build_preset
from physarum.render.preset.provenance import embedded_text
from support import TINY_3D, render_cpu, tiny_3d, tiny_data


def _ball(n: int = 12) -> np.ndarray:
    z, y, x = np.mgrid[:n, :n, :n]
    return np.where((x - 5.5) ** 2 + (y - 6) ** 2 + (z - 4) ** 2 <= 9, 200, 0).astype(np.uint8)


def test_the_isosurface_reads_back_closed_with_its_bounds(tmp_path):
    vertices, faces = isosurface(_ball(), 64)
    with open(tmp_path / "ball.stl", "wb") as file:
        write_stl(file, vertices, faces, b"physarum test".ljust(80))
    with open(tmp_path / "ball.obj", "wb") as file:
        write_obj(file, vertices, faces, "name: ball\nseed: 1")
    for name in ("ball.stl", "ball.obj"):
        mesh = trimesh.load(tmp_path / name, force="mesh")
        assert len(mesh.faces) == len(faces) > 20
        assert mesh.is_watertight
        low, high = mesh.bounds  # (x, y, z): the ball's centre (5.5, 6, 4), radius 3
        assert np.allclose(low, [2.5, 3, 1], atol=0.6) and np.allclose(high, [8.5, 9, 7], atol=0.6)
    assert (tmp_path / "ball.obj").read_text().startswith("# physarum isosurface; the preset:\n# name: ball")


def test_an_empty_volume_has_an_empty_mesh():
    vertices, faces = isosurface(np.zeros((4, 5, 6), np.uint8), 10)
    assert vertices.shape == (0, 3) and faces.shape == (0, 3)


def test_stl_header_names_the_preset_and_never_starts_with_solid():
    preset = build_preset(tiny_3d(), "tiny3d.yaml")
    header = stl_header(preset, "some text")
    assert len(header) == 80 and header.startswith(b"physarum tiny3d s2 sha256 ")
    assert hashlib.sha256(b"some text").hexdigest()[:20].encode() in header


def test_a_3d_preset_renders_end_to_end_and_writes_its_volume(tmp_path):
    volume = {"at": [3, 6], "formats": ["npz", "npy", "obj", "stl"], "level": 40}
    preset = build_preset(tiny_3d(output={**TINY_3D["output"], "volume": volume}), "tiny3d.yaml")
    result = render_cpu(preset, tmp_path / "a")
    with Image.open(result.outputs["png"]) as png:
        assert png.size == (24, 20)
    with Image.open(result.outputs["gif"]) as gif:
        assert gif.size == (24, 20) and gif.n_frames == 2
    folder = result.outputs["png"].parent
    for step in (3, 6):
        with np.load(folder / f"tiny3d-s2-volume-{step}.npz") as npz:
            assert str(npz["preset"]) == embedded_text(preset) and int(npz["step"]) == step
            assert npz["volume"].shape == (10, 12, 16) and npz["volume"].dtype == np.float32
            assert npz["levels"].shape == (10, 12, 16) and npz["levels"].max() > 40
            bare = np.load(folder / f"tiny3d-s2-volume-{step}.npy")
            assert np.array_equal(bare, npz["volume"]) and bare.sum() > 0
        mesh = trimesh.load(folder / f"tiny3d-s2-volume-{step}.stl", force="mesh")
        assert len(mesh.faces) > 0
        assert (mesh.bounds[0] >= -1).all() and (mesh.bounds[1] <= [16, 12, 10]).all()
    again = render_cpu(preset, tmp_path / "b")  # the same bytes, the volumes too
    for fmt in ("gif", "png"):
        assert again.outputs[fmt].read_bytes() == result.outputs[fmt].read_bytes()
    other = again.outputs["png"].parent / "tiny3d-s2-volume-6.npz"
    assert other.read_bytes() == (folder / "tiny3d-s2-volume-6.npz").read_bytes()


def test_a_2d_preset_writes_its_space_time_stack(tmp_path):
    volume = {"formats": ["npz", "obj"], "level": 100}
    data = tiny_data(output={"formats": ["gif"], "volume": volume}, run={"steps": 12, "steps_per_frame": 3})
    result = render_cpu(build_preset(data, "tiny.yaml"), tmp_path)
    folder = result.outputs["gif"].parent
    with np.load(folder / "tiny-s3-spacetime.npz") as npz, Image.open(result.outputs["gif"]) as gif:
        stack = npz["levels"]
        assert stack.shape == (4, 32, 48) and npz["volume"].dtype == np.float32
        assert gif.mode == "P" and np.array_equal(np.array(gif), stack[0])  # the GIF's own index frames
        assert not np.array_equal(stack[0], stack[3])
    assert "tiny" in (folder / "tiny-s3-spacetime.obj").read_text()[:2000]


@pytest.mark.parametrize("formats", [["npz"], ["stl", "npy"]])
def test_volume_formats_are_what_is_written(tmp_path, formats):
    volume = {"at": [6], "formats": formats}
    preset = build_preset(tiny_3d(output={"formats": ["png"], "volume": volume}), "tiny3d.yaml")
    folder = render_cpu(preset, tmp_path).outputs["png"].parent
    written = sorted(p.suffix[1:] for p in folder.glob("tiny3d-s2-volume-6.*"))
    assert written == sorted(formats)


def disk_full_at(monkeypatch, name: str) -> None:
    """Every write of the file whose name starts with `name` fails as on a full disk (its
    temporary file is made, then written on /dev/full: the kernel's own ENOSPC)."""
    made = files.create_exclusive

    def full(path):
        descriptor = made(path)
        if path.name.startswith(f".{name}"):
            os.close(descriptor)
            return os.open("/dev/full", os.O_WRONLY)
        return descriptor

    monkeypatch.setattr(files, "create_exclusive", full)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
@pytest.mark.parametrize(
    "dims, name",
    [(3, "tiny3d-s2-volume-3.npy"), (3, "tiny3d-s2-volume-6.stl"), (2, "tiny-s3-spacetime.obj")],
)
def test_a_full_disk_during_a_volume_export_leaves_no_part_and_names_the_file(
    tmp_path, monkeypatch, dims, name
):
    """A volume's files are staged one after another: when a later one fails, the earlier ones'
    temporary files go too, and the one message names the file that failed."""
    volume = {"formats": ["npz", "npy", "obj", "stl"]}
    if dims == 3:
        preset = build_preset(
            tiny_3d(output={"formats": ["png"], "volume": {**volume, "at": [3, 6]}}), "t.yaml"
        )
    else:
        preset = build_preset(tiny_data(output={"formats": ["gif"], "volume": volume}), "tiny.yaml")
    disk_full_at(monkeypatch, name)
    with pytest.raises(RenderError) as raised:
        render_cpu(preset, tmp_path)
    assert str(raised.value) == f"{tmp_path / preset.name / name}: cannot write: No space left on device"
    assert sorted(os.listdir(tmp_path / preset.name)) == []  # no output, no temporary file


def test_a_killed_renders_space_time_part_is_removed_by_the_next_render(tmp_path):
    """A render killed while writing its space-time stack leaves .NAME.PID.part; the next render
    of that name removes it (its process no longer runs), as it does its outputs' parts."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a process id that no longer runs
    folder = tmp_path / "tiny"
    folder.mkdir()
    stale = [folder / f".tiny-s3-spacetime.{fmt}.{gone.pid}.part" for fmt in ("npz", "obj")]
    for part in stale:
        part.write_bytes(b"half a stack")
    preset = build_preset(tiny_data(output={"formats": ["gif"], "volume": {"formats": ["npz"]}}), "tiny.yaml")
    render_cpu(preset, tmp_path)
    assert sorted(os.listdir(folder)) == sorted(["tiny-s3.gif", "tiny-s3.json", "tiny-s3-spacetime.npz"])
