"""Volumes and meshes out (output.volume, docs/3d.md): a 3D preset's trail volume at chosen
steps, a 2D preset's space-time stack once at the end, as float32 arrays and isosurface meshes.

<stem>-volume-<step>.npz (a 2D preset: <stem>-spacetime.npz) holds:

    format          str     "physarum-volume"
    format_version  int64   FORMAT_VERSION
    preset          str     embedded_text(preset), the render's preset
    step            int64   the step (warmup included; a space-time stack: its last step)
    volume          float32 3D: the trail [D, H, W], volume[z, y, x], the model's units;
                            2D: the GIF's index frames stacked [T, H, W] (0 .. 255)
    levels          uint8   the volume's palette levels (3D: the preset's Colourist, exact)

<stem>-volume-<step>.npy is the bare float32 volume (numpy.load, PolyPhy and the like); .npy
carries no text: the .npz of the same step carries the preset. <stem>-volume-<step>.obj and
.stl are the isosurface of the levels at output.volume.level (marching cubes, scikit-image, on
the levels padded by one empty voxel so that the surface closes at the volume's faces),
vertices in voxels (x, y, z; a stack's z is its frame); the OBJ carries the preset in comment
lines, the binary STL's 80-byte header its name, seed and the preset's sha256 (a prefix).
Every file is staged with the render's other outputs and renamed with them, all or nothing; a
file that cannot be written (a full disk) takes the step's files staged before it with it.
"""

from __future__ import annotations

import glob
import hashlib
import struct

import numpy as np
import torch

from ..base.files import PartialFile, commit_together, remove_stale_parts, stage
from ..formats.contract import Frame
from ..look.colour import Colourist
from ..look.loops import shown_frames
from ..preset import Preset
from ..preset.provenance import embedded_text
from ..sim.checkpoint import write_members
from .specs import gif_size

FORMAT = "physarum-volume"
FORMAT_VERSION = 1
MESH_FORMATS = ("obj", "stl")


def volume_steps(preset: Preset) -> frozenset[int]:
    """The steps at which a 3D preset writes its volume (none for a 2D preset)."""
    volume = preset.output.volume
    return volume.steps(preset.end_step) if volume and preset.dims == 3 else frozenset()


def isosurface(levels: np.ndarray, level: int) -> tuple[np.ndarray, np.ndarray]:
    """(vertices [V, 3] float32 (x, y, z) in voxels, faces [F, 3] int64) of the surface where the
    levels [Z, Y, X] cross level - 0.5 (empty arrays when nothing reaches the level)."""
    from skimage.measure import marching_cubes  # start-up: scikit-image loads for a mesh only

    padded = np.pad(levels.astype(np.float32), 1)
    if padded.max() < level - 0.5:
        return np.zeros((0, 3), np.float32), np.zeros((0, 3), np.int64)
    vertices, faces, _, _ = marching_cubes(padded, level=level - 0.5)
    return (vertices[:, ::-1] - 1).astype(np.float32), faces.astype(np.int64)


def write_obj(file, vertices: np.ndarray, faces: np.ndarray, text: str) -> None:
    """A Wavefront OBJ: the preset as '# ' comment lines, then vertices and 1-based faces."""
    lines = ["# physarum isosurface; the preset:"] + [f"# {line}" for line in text.splitlines()]
    lines += [f"v {x:.4f} {y:.4f} {z:.4f}" for x, y, z in vertices.tolist()]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in faces.tolist()]
    file.write(("\n".join(lines) + "\n").encode("utf-8"))


def stl_header(preset: Preset, text: str) -> bytes:
    """80 bytes: 'physarum <name> s<seed> sha256 <hex>', padded with spaces (never 'solid')."""
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    head = f"physarum {preset.name} s{preset.seed} sha256 {digest}".encode("ascii")[:80]
    return head.ljust(80, b" ")


def write_stl(file, vertices: np.ndarray, faces: np.ndarray, header: bytes) -> None:
    """A binary STL: header, triangle count, each triangle's unit normal and corners (float32)."""
    corners = vertices[faces].astype(np.float32)  # [F, 3, 3]
    normals = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.linalg.norm(normals, axis=1, keepdims=True)
    normals = np.where(length > 0, normals / np.maximum(length, 1e-30), 0).astype(np.float32)
    records = np.zeros(len(faces), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    records["n"], records["v"] = normals, corners
    file.write(header + struct.pack("<I", len(faces)) + records.tobytes())


def write_volume(job, label: str, step: int, volume: np.ndarray, levels: np.ndarray) -> list[PartialFile]:
    """One job's files of a volume (label: '-volume-<step>' or '-spacetime'), staged."""
    preset: Preset = job.preset
    folder, stem = job.paths["json"].parent, job.paths["json"].stem
    text, wanted = embedded_text(preset), preset.output.volume
    base = folder / f"{stem}{label}"
    staged: list[PartialFile] = []
    try:
        if "npz" in wanted.formats:
            members = {
                "format": np.array(FORMAT),
                "format_version": np.array(FORMAT_VERSION, np.int64),
                "preset": np.array(text),
                "step": np.array(step, np.int64),
                "volume": volume.astype(np.float32),
                "levels": levels.astype(np.uint8),
            }
            staged.append(stage(base.with_suffix(".npz"), lambda f: write_members(f, members)))
        if "npy" in wanted.formats:
            staged.append(stage(base.with_suffix(".npy"), lambda f: np.save(f, volume.astype(np.float32))))
        if any(fmt in wanted.formats for fmt in MESH_FORMATS):
            vertices, faces = isosurface(levels, wanted.level)
            if "obj" in wanted.formats:
                staged.append(stage(base.with_suffix(".obj"), lambda f: write_obj(f, vertices, faces, text)))
            if "stl" in wanted.formats:
                header = stl_header(preset, text)
                staged.append(
                    stage(base.with_suffix(".stl"), lambda f: write_stl(f, vertices, faces, header))
                )
    except BaseException:  # a later file failed (a full disk): the earlier ones' temporaries go too
        for partial in staged:
            partial.abort()
        raise
    return staged


class VolumeStop:
    """The course's stop (render/sim/course.py) that writes each 3D job's volume at its steps
    (a job: out.job.Job; its files join its partials, renamed with its outputs)."""

    def __init__(self, jobs):
        self.jobs = [job for job in jobs if volume_steps(job.preset)]
        self.steps = frozenset().union(*(volume_steps(job.preset) for job in self.jobs))
        for job in self.jobs:
            remove_stale_parts(job.paths["json"].parent, f"{glob.escape(job.paths['json'].stem)}-volume-*")

    def __call__(self, simulation, step: int) -> None:
        jobs = [job for job in self.jobs if job.error is None and step in volume_steps(job.preset)]
        trail = simulation.trail if jobs else None
        for job in jobs:
            volume: torch.Tensor = trail[job.index]
            levels = Colourist(job.preset.palette).index_frame(volume)
            try:
                job.partials.extend(
                    write_volume(job, f"-volume-{step}", step, volume.cpu().numpy(), levels.cpu().numpy())
                )
            except OSError as error:
                job.fail(error)


# Host bytes a 2D preset's space-time stack takes while it is written, a voxel (frame x pixel):
# its frames, the stack, its float32 copies and the deflated members (measured with tracemalloc:
# 20 for npz, 10 for npy, 128^2 x 100 frames); a mesh's marching cubes and its OBJ lines take
# up to 743 more on a stack of noise (the most triangles a voxel), counted at their worst.
STACK_BYTES = 24
MESH_STACK_BYTES = 768


def stack_bytes(preset: Preset) -> int:
    """The host bytes a 2D preset's space-time stack (output.volume) takes at most while it is
    kept and written (STACK_BYTES, MESH_STACK_BYTES a voxel of shown frames x GIF pixels); 0
    without one."""
    if preset.dims != 2 or preset.output.volume is None:
        return 0
    width, height = gif_size(preset)
    mesh = any(fmt in preset.output.volume.formats for fmt in MESH_FORMATS)
    return shown_frames(preset) * width * height * (STACK_BYTES + (MESH_STACK_BYTES if mesh else 0))


class SpacetimeWriter:
    """A 2D job's space-time stack: the GIF's index frames as they are handed over (replayed
    frames of a ping-pong loop left out), written by complete() (write_volume, '-spacetime')."""

    reads = "preview"

    def __init__(self, job):
        self.job, self.path = job, job.paths["json"].with_name(f"{job.paths['json'].stem}-spacetime.npz")
        self.frames: list[np.ndarray] = []
        # a killed render's temporary stack files (the name is locked: no running render's)
        remove_stale_parts(self.path.parent, f"{glob.escape(self.path.stem)}.*")

    def write(self, frame: Frame) -> None:
        if not frame.replay and frame.preview is not None:
            self.frames.append(np.array(frame.preview, dtype=np.uint8))

    def complete(self) -> list[PartialFile]:
        stack = np.stack(self.frames) if self.frames else np.zeros((0, 1, 1), np.uint8)
        return write_volume(self.job, "-spacetime", self.job.preset.end_step, stack.astype(np.float32), stack)

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        self.frames = []
