"""Exact checkpoints: the whole simulation state of a render in one file, and reading it back.

A checkpoint (docs/checkpoints.md) is a zip of .npy members (numpy's .npz, deflated), written
with fixed member times so that the same state gives the same bytes on every machine:

    format          str    "physarum-checkpoint"
    format_version  int64  FORMAT_VERSION
    release         str    the physarum release that wrote it
    output_version  int64  its output version (render/preset/provenance.py)
    preset          str    embedded_text(preset): what render --resume renders
    step            int64  steps taken (warmup included)
    frames          int64  frames taken by then
    position        int32  [G, 2, N] 16.16 fixed point, G = species groups, N = agents each
    heading         int16  [G, N]
    trail           float32 [G, H, W]

Reading is for files from strangers: no pickles, every member's shape and dtype checked against
the preset before its data is read, its stored size bounded by that shape, and the values
checked against what the kernels accept. Any problem is one CheckpointError naming the file.
"""

from __future__ import annotations

import shutil
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import numpy as np
import torch

from physarum.kernels import api
from physarum.render.base.errors import RenderError
from physarum.render.base.files import remove_stale_parts, stage
from physarum.render.base.inputs import MAX_TEXT_BYTES, excerpt, file_problem, shorten
from physarum.render.preset import Preset
from physarum.render.preset.provenance import OUTPUT_VERSION, embedded_text, version
from physarum.render.preset.sections import MAX_STOPS
from physarum.render.sim.course import frames_before
from physarum.render.world.maps import wall_cells

FORMAT = "physarum-checkpoint"
FORMAT_VERSION = 1
STATE_MEMBERS = {"position": np.int32, "heading": np.int16, "trail": np.float32}
HEADER_MEMBERS = ("format", "format_version", "release", "output_version", "preset", "step", "frames")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed member times: the same state, the same bytes
NPY_HEADER_MAX = 4096  # an .npy header of these arrays is about 128 bytes
MAX_CHECKPOINTS = MAX_STOPS  # a render's, however scheduled (checkpoint.at's own limit)
MEMBER_OVERHEAD = 512  # a member's .npy header (128 bytes) and zip records (zip64 included)
ARCHIVE_OVERHEAD = 256  # the zip's end records (zip64 included)


class CheckpointError(RenderError):
    """A checkpoint file that cannot be resumed: one message naming the file and the problem."""


def checkpoint_path(folder: Path, stem: str, step: int) -> Path:
    return Path(folder) / f"{stem}-checkpoint-{step}.npz"


# ---------------------------------------------------------------------------------------------
# Writing


def write_npz(path: Path, members: dict[str, np.ndarray]) -> None:
    """An .npz (deflated, fixed member times) written under a temporary name and renamed."""
    stage(path, lambda file: write_members(file, members)).commit()


def write_members(file: BinaryIO, members: dict[str, np.ndarray]) -> None:
    """members as the .npy files of a zip (deflated, fixed times) into an open file."""
    with zipfile.ZipFile(file, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, array in members.items():
            info = zipfile.ZipInfo(f"{name}.npy", date_time=ZIP_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            with archive.open(info, "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asarray(array), allow_pickle=False)


def state_members(state: api.State) -> dict[str, np.ndarray]:
    """The state's tensors on the host, in their exact dtypes."""
    return {name: getattr(state, name).detach().cpu().numpy() for name in STATE_MEMBERS}


def save_checkpoint(path: Path, preset: Preset, state: api.State, frames: int) -> None:
    """Write the checkpoint of one render's state (a batch of one: its G species groups)."""
    members = {
        "format": np.array(FORMAT),
        "format_version": np.array(FORMAT_VERSION, np.int64),
        "release": np.array(version()),
        "output_version": np.array(OUTPUT_VERSION, np.int64),
        "preset": np.array(embedded_text(preset)),
        "step": np.array(int(state.step), np.int64),
        "frames": np.array(frames, np.int64),
        **state_members(state),
    }
    write_npz(path, members)


class CheckpointWriter:
    """The course's stop (render/sim/course.py) that writes a render's checkpoints into `folder`.
    Each checkpoint is renamed
    into place as soon as it is written and stays when the render later fails or is killed
    (that is what it is for); the render's outputs keep their all-or-nothing commit."""

    def __init__(self, preset: Preset, folder: Path, stem: str, steps: frozenset[int]):
        self.preset, self.folder, self.stem, self.steps = preset, Path(folder), stem, steps
        self.written: list[Path] = []
        remove_stale_parts(self.folder, f"{stem}-checkpoint-*.npz")

    def __call__(self, simulation, step: int) -> None:
        path = checkpoint_path(self.folder, self.stem, step)
        save_checkpoint(path, self.preset, simulation.state, frames_before(self.preset.run, step))
        self.written.append(path)


@dataclass(frozen=True)
class Resume:
    """Where a resumed render starts (RenderOptions.resume): a checkpoint's state, checked
    against the preset it renders, and the note its sidecar carries about it."""

    state: api.State
    note: str

    @property
    def step(self) -> int:
        return int(self.state.step)


def checkpointed(presets) -> Preset | None:
    """The preset whose checkpoints a render writes (a batch of one), None without a checkpoint
    section; RenderError for a batch of several, whose state is no one render's."""
    wanted = [p for p in presets if p.checkpoint is not None]
    if not wanted:
        return None
    if len(presets) > 1:
        raise RenderError(
            f"{wanted[0].name}: checkpoint: is written by physarum render, one preset at a time, "
            "not by a batch of several (a sweep); remove the checkpoint section"
        )
    return presets[0]


def checkpoint_stops(presets, folder: Path, stem: str) -> list[CheckpointWriter]:
    """The checkpoint writer of a render (a batch of one), none without a checkpoint section."""
    preset = checkpointed(presets)
    if preset is None:
        return []
    return [CheckpointWriter(preset, folder, stem, preset.checkpoint.steps(preset.end_step))]


# ---------------------------------------------------------------------------------------------
# Size: what a render's checkpoints take, known before it starts


def deflate_bound(size: int) -> int:
    """The most bytes deflate makes of `size` bytes: zlib's deflateBound at its default window
    and memory (about 0.03% more, for input it cannot shrink), with room to spare (0.1%)."""
    return size + (size >> 10) + 64


def checkpoint_bytes(preset: Preset) -> int:
    """The most bytes one checkpoint of `preset` (a batch of one) takes on disk, whatever its
    state: every member's .npy data deflated at its worst, with the headers of the .npy and the
    zip. A developed state deflates to about 0.9 of it (docs/checkpoints.md, "Size")."""
    shapes = expected_shapes(preset)
    state = [int(np.prod(shapes[n])) * np.dtype(t).itemsize for n, t in STATE_MEMBERS.items()]
    texts = [4 * len(text) for text in (FORMAT, version(), embedded_text(preset))]  # numpy's UCS-4
    scalars = [8] * (len(HEADER_MEMBERS) - len(texts))
    members = (*state, *texts, *scalars)
    return ARCHIVE_OVERHEAD + sum(deflate_bound(size) + MEMBER_OVERHEAD for size in members)


def free_bytes(folder: Path) -> int:
    """The bytes free to this user on the disk that holds `folder` (or the nearest folder above
    it that exists: the render makes the rest)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder.parent != folder:
        folder = folder.parent
    return shutil.disk_usage(folder).free


def megabytes(size: int) -> str:
    """A size in MB (10^6 bytes), or GB from 10^9."""
    return f"{size / 1e9:,.1f} GB" if size >= 1e9 else f"{size / 1e6:.1f} MB"


@dataclass(frozen=True)
class CheckpointPlan:
    """A render's checkpoints, before it starts: at `steps` (after the step it starts from),
    each at most `each` bytes, into `folder`, whose disk has `free` bytes."""

    name: str
    steps: tuple[int, ...]
    each: int
    folder: Path
    free: int

    @property
    def total(self) -> int:
        """The most bytes all of them take."""
        return len(self.steps) * self.each

    def note(self) -> str:
        """One line for stderr: how many, when, how large at most."""
        count, first, last = len(self.steps), self.steps[0], self.steps[-1]
        when = f"step {first}" if count == 1 else f"steps {first} to {last}"
        return (
            f"{count} checkpoint{'s' * (count > 1)} ({when}), each at most {megabytes(self.each)}, "
            f"{megabytes(self.total)} in all ({megabytes(self.free)} free in {self.folder})"
        )

    def record(self) -> dict:
        """The sidecar's `checkpoints` entry (docs/checkpoints.md)."""
        return {
            "count": len(self.steps),
            "first_step": self.steps[0],
            "last_step": self.steps[-1],
            "max_bytes_each": self.each,
            "max_bytes_total": self.total,
            "free_bytes": self.free,
        }

    def problem(self) -> str | None:
        """Why these checkpoints may not be written: more than MAX_CHECKPOINTS, or more bytes
        than the disk has free. None when they fit."""
        count, sizes = len(self.steps), f"each up to {megabytes(self.each)}, {megabytes(self.total)} in all"
        if count > MAX_CHECKPOINTS:
            return (
                f"{self.name}: checkpoint: schedules {count} checkpoints ({sizes}); a render writes "
                f"at most {MAX_CHECKPOINTS}: choose a larger checkpoint.every (--checkpoint-every) "
                "or fewer checkpoint.at steps"
            )
        if self.total > self.free:
            return (
                f"{self.name}: checkpoint: {count} checkpoints ({sizes}) do not fit in the "
                f"{megabytes(self.free)} free on the disk of {self.folder}: write fewer "
                "(checkpoint.every, checkpoint.at) or render to another --out"
            )
        return None


def checkpoint_plan(presets, folder: Path, start: int = 0) -> CheckpointPlan | None:
    """The checkpoints a render (a batch of one) will write into `folder` after step `start`,
    checked before it starts: RenderError (nothing written) when they are too many or would not
    fit on the disk. None when it writes none."""
    preset = checkpointed(presets)
    if preset is None:
        return None
    steps = tuple(sorted(s for s in preset.checkpoint.steps(preset.end_step) if s > start))
    if not steps:
        return None
    plan = CheckpointPlan(preset.name, steps, checkpoint_bytes(preset), Path(folder), free_bytes(folder))
    problem = plan.problem()
    if problem:
        raise RenderError(problem)
    return plan


# ---------------------------------------------------------------------------------------------
# Reading


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint's header, read and checked; its state is read against a preset (state)."""

    path: Path
    text: str
    release: str
    output_version: int
    step: int
    frames: int

    def state(self, preset: Preset) -> api.State:
        """The checkpoint's state, checked against `preset` (shapes and dtypes before any data is
        read, then every value), on the host."""
        expected = expected_shapes(preset)
        with _open(self.path) as archive:
            arrays = {name: _read_array(archive, self.path, name, expected[name]) for name in STATE_MEMBERS}
        problem = value_problem(arrays, preset)
        if problem:
            raise CheckpointError(f"{self.path}: {problem}; it was not written by physarum as it is now")
        tensors = {name: torch.from_numpy(array) for name, array in arrays.items()}
        return api.State(**tensors, step=torch.tensor(self.step, dtype=torch.int64))


def read_checkpoint(path: str | Path) -> Checkpoint:
    """The header of a checkpoint file; CheckpointError for anything that is not one."""
    path = Path(path)
    problem = file_problem(path)
    if problem:
        raise CheckpointError(f"{path}: {problem}")
    with _open(path) as archive:
        names = sorted(info.filename for info in archive.infolist())
        wanted = sorted(f"{name}.npy" for name in (*HEADER_MEMBERS, *STATE_MEMBERS))
        if "format.npy" not in names or _read_text(archive, path, "format") != FORMAT:
            raise CheckpointError(f"{path}: not a physarum checkpoint (a zip without its format tag)")
        found = int(_read_scalar(archive, path, "format_version"))
        if found != FORMAT_VERSION:
            raise CheckpointError(
                f"{path}: checkpoint format {found}; this physarum {version()} reads format "
                f"{FORMAT_VERSION} only"
            )
        if names != wanted:
            raise CheckpointError(
                f"{path}: a checkpoint holds exactly {', '.join(wanted)} (got {excerpt(names)})"
            )
        header = Checkpoint(
            path=path,
            text=_read_text(archive, path, "preset"),
            release=_read_text(archive, path, "release"),
            output_version=int(_read_scalar(archive, path, "output_version")),
            step=int(_read_scalar(archive, path, "step")),
            frames=int(_read_scalar(archive, path, "frames")),
        )
    if not 1 <= header.step <= 20_000_000 or header.frames < 0:
        raise CheckpointError(f"{path}: step {header.step} and frames {header.frames} are not a render's")
    return header


def expected_shapes(preset: Preset) -> dict[str, tuple[int, ...]]:
    """The shape of each state member of a checkpoint of `preset` (a batch of one)."""
    groups, agents = preset.species_count, preset.agents_per_species
    height, width = preset.canvas.height, preset.canvas.width
    return {"position": (groups, 2, agents), "heading": (groups, agents), "trail": (groups, height, width)}


def value_problem(arrays: dict[str, np.ndarray], preset: Preset) -> str | None:
    """Why these state arrays are not a state the kernels may step (docs/model.md section 3)."""
    position, heading, trail = arrays["position"], arrays["heading"], arrays["trail"]
    size = (preset.canvas.width << api.FRAC_BITS, preset.canvas.height << api.FRAC_BITS)
    for row, (axis, limit) in enumerate(zip("xy", size)):
        values = position[:, row]
        if values.size and (values.min() < 0 or values.max() >= limit):
            return f"agent positions ({axis}) outside the {preset.canvas.width}x{preset.canvas.height} canvas"
    if heading.size and (heading.min() < 0 or heading.max() >= api.HEADINGS):
        return f"headings outside [0, {api.HEADINGS})"
    if not np.isfinite(trail).all() or (trail < 0).any() or ((trail > 0) & (trail < api.TRAIL_FLOOR)).any():
        return "trail values that are not finite, negative or below the trail floor"
    return wall_problem(position, trail, preset)


def wall_problem(position: np.ndarray, trail: np.ndarray, preset: Preset) -> str | None:
    """Why the state does not fit the preset's walls: an agent stands in one, or a wall holds
    trail (the kernels keep both from happening, docs/model.md section 12)."""
    wall = wall_cells(preset)
    if wall is None:
        return None
    if (trail[:, wall] != 0).any():
        return "trail on the preset's walls"
    x, y = position[:, 0] >> api.FRAC_BITS, position[:, 1] >> api.FRAC_BITS
    if wall[y, x].any():
        return "agents inside the preset's walls"
    return None


def _open(path: Path) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as error:
        raise CheckpointError(
            f"{path}: not a physarum checkpoint (not a readable .npz: {shorten(str(error))})"
        ) from None


def _member(archive: zipfile.ZipFile, path: Path, name: str) -> zipfile.ZipInfo:
    try:
        return archive.getinfo(f"{name}.npy")
    except KeyError:
        raise CheckpointError(f"{path}: a checkpoint holds {name}.npy; this file has none") from None


def _read_array(
    archive: zipfile.ZipFile, path: Path, name: str, shape: tuple[int, ...] | None, limit: int | None = None
) -> np.ndarray:
    """One member's array: its header read first, its shape and dtype checked (shape None: any
    shape within `limit` bytes), its stored size bounded by them, then its data."""
    info = _member(archive, path, name)
    try:
        with archive.open(info) as member:
            version = np.lib.format.read_magic(member)
            read_header = {
                (1, 0): np.lib.format.read_array_header_1_0,
                (2, 0): np.lib.format.read_array_header_2_0,
            }.get(version)
            if read_header is None:
                raise ValueError(f"npy format {version}")
            found_shape, fortran, dtype = read_header(member, max_header_size=NPY_HEADER_MAX)
            problem = _header_problem(name, found_shape, fortran, dtype, shape, limit)
            if problem:
                raise CheckpointError(f"{path}: {problem}")
            data_bytes = int(np.prod(found_shape, dtype=np.int64)) * dtype.itemsize
            if info.file_size > member.tell() + data_bytes:
                raise CheckpointError(f"{path}: {name} holds more bytes than its shape")
            data = member.read(data_bytes)
    except CheckpointError:
        raise
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error) as error:
        raise CheckpointError(
            f"{path}: {name} cannot be read ({shorten(str(error))}); is it truncated?"
        ) from None
    if len(data) != data_bytes:
        raise CheckpointError(f"{path}: {name} is truncated")
    return np.frombuffer(data, dtype=dtype).reshape(found_shape).copy()


def _header_problem(name, found_shape, fortran, dtype, shape, limit) -> str | None:
    expected = STATE_MEMBERS.get(name)
    if fortran or dtype.hasobject or not dtype.isnative and dtype.itemsize > 1:
        return f"{name} is not a plain array (fortran order, objects or foreign byte order)"
    if expected is not None and dtype != np.dtype(expected):
        return f"{name} is {dtype}, a checkpoint's is {np.dtype(expected)}"
    if shape is not None and tuple(found_shape) != shape:
        return (
            f"{name} has shape {list(found_shape)}; the preset's canvas, agents and species give "
            f"{list(shape)}"
        )
    if limit is not None and int(np.prod(found_shape, dtype=np.int64)) * dtype.itemsize > limit:
        return f"{name} is larger than a checkpoint's {name} ({limit} bytes at most)"
    return None


def _read_scalar(archive: zipfile.ZipFile, path: Path, name: str) -> int:
    array = _read_array(archive, path, name, (), limit=8)
    if array.dtype != np.int64:
        raise CheckpointError(f"{path}: {name} is {array.dtype}, a checkpoint's is int64")
    return int(array)


def _read_text(archive: zipfile.ZipFile, path: Path, name: str) -> str:
    array = _read_array(archive, path, name, (), limit=4 * MAX_TEXT_BYTES)
    if array.dtype.kind != "U":
        raise CheckpointError(f"{path}: {name} is {array.dtype}, a checkpoint's is text")
    return str(array)
