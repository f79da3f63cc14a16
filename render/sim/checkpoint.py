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
    position        int32  [G, D, N] 16.16 fixed point, G = species groups, N = agents each,
                           D = 2 (x, y), or 3 (x, y, z) for a 3D preset
    heading         int16  [G, N] (3D: an index into kernels/exact3d.py's DIRECTIONS)
    trail           float32 [G, H, W] (3D: [G, Z, H, W], Z = canvas.depth)

and, when the render keeps a frame journal (render/out/journal.py), the prefix of it the
checkpoint covers (JournalMark): journal (its file name, beside the checkpoint), journal_frames,
journal_bytes and journal_sha256. A render with a loop (output.loop_mode other than none)
records what its loop holds (render/look/loops.py TrailLoop.members), so that a resumed render
makes the loop of the uninterrupted one:

    loop_taken      int64  frames the loop was handed before the checkpoint
    loop_kept       float32 [K, G, *grid]: crossfade's early trail maps not yet blended
    loop_window     int64  [2] closest's loop (first frame, end frame)
    loop_window_scale float64 [2] its distance and mean step distance (what the sidecar says)

Reading is for files from strangers: no pickles, every member's shape and dtype checked against
the preset before its data is read, its stored size bounded by that shape, and the values
checked against what the kernels accept. Any problem is one CheckpointError naming the file.
What needs only the preset comes first: read_checkpoint reads the header members (each bounded
by its declared size in the zip), Checkpoint.check_sizes bounds the state members' declared
sizes and compression ratios by the preset's shapes, and only then (after the render's own
checks, render/run/runner.py) Checkpoint.state reads the arrays.

A render's checkpoints (which steps, their bytes bounded before it starts, the stop that writes
them) are planned in render/sim/checkpoint_plan.py; a resumed render starts from a Resume
(render/run/resume.py).
"""

from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from tokenize import TokenError
from typing import BinaryIO

import numpy as np
import torch

from ...kernels import api
from ...kernels.exact3d import DIRECTIONS
from ..base.errors import RenderError
from ..base.files import stage
from ..base.inputs import MAX_TEXT_BYTES, excerpt, file_problem, shorten
from ..preset import Preset
from ..preset.carried import MAX_CARRIED_BYTES
from ..preset.provenance import OUTPUT_VERSION, embedded_text, version
from ..world.maps import wall_cells

FORMAT = "physarum-checkpoint"
FORMAT_VERSION = 1
STATE_MEMBERS = {"position": np.int32, "heading": np.int16, "trail": np.float32}
HEADER_MEMBERS = ("format", "format_version", "release", "output_version", "preset", "step", "frames")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # fixed member times: the same state, the same bytes
NPY_HEADER_MAX = 4096  # an .npy header of these arrays is about 128 bytes
JOURNAL_MEMBERS = ("journal", "journal_frames", "journal_bytes", "journal_sha256")
LOOP_MEMBERS = {  # each loop mode's members: all of them or none
    "crossfade": ("loop_taken", "loop_kept"),
    "closest": ("loop_taken", "loop_window", "loop_window_scale"),
    "ping-pong": ("loop_taken",),
}
JOURNAL_NAME = re.compile(r"[A-Za-z0-9._+-]{1,200}-journal-[0-9a-f]{16}\.bin")
MAX_DEFLATE_RATIO = 1100  # deflate makes at most about 1032 bytes of one: more is not deflate
# What zipfile raises for a member it cannot read: damaged, and (NotImplementedError) another
# compression method or (RuntimeError) an encrypted one, as a flipped bit in its entry declares
UNREADABLE = (
    zipfile.BadZipFile,
    OSError,
    ValueError,
    EOFError,
    zlib.error,
    NotImplementedError,
    RuntimeError,
)


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


@dataclass(frozen=True)
class JournalMark:
    """The prefix of a render's frame journal a checkpoint covers: the journal's file `name`
    (beside the checkpoint), its first `frames` frames, `size` bytes with that `sha256`."""

    name: str
    frames: int
    size: int
    sha256: str

    def members(self) -> dict[str, np.ndarray]:
        return {
            "journal": np.array(self.name),
            "journal_frames": np.array(self.frames, np.int64),
            "journal_bytes": np.array(self.size, np.int64),
            "journal_sha256": np.array(self.sha256),
        }


def save_checkpoint(
    path: Path,
    preset: Preset,
    state: api.State,
    frames: int,
    journal: JournalMark | None = None,
    loop: dict[str, np.ndarray] | None = None,
) -> None:
    """Write the checkpoint of one render's state (a batch of one: its G species groups), with
    the journal prefix it covers when the render keeps one and its loop's members (loop)."""
    members = {
        "format": np.array(FORMAT),
        "format_version": np.array(FORMAT_VERSION, np.int64),
        "release": np.array(version()),
        "output_version": np.array(OUTPUT_VERSION, np.int64),
        "preset": np.array(embedded_text(preset)),
        "step": np.array(int(state.step), np.int64),
        "frames": np.array(frames, np.int64),
        **state_members(state),
        **(journal.members() if journal is not None else {}),
        **(loop or {}),
    }
    write_npz(path, members)


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
    journal: JournalMark | None = None
    loop_mode: str = "none"  # the mode whose loop members it holds ("none": none)
    loop_taken: int | None = None  # frames its loop was handed before it
    loop_window: tuple[int, int, float, float] | None = None  # closest's (start, end, distance, step)

    def check_sizes(self, preset: Preset) -> None:
        """The state members' declared sizes in the zip bounded by `preset`'s shapes, and their
        compression ratios by deflate's, before any of their data is read: CheckpointError.
        Loop members must be those of the preset's loop mode, their counts within its frames."""
        self._check_loop(preset)
        expected = expected_shapes(preset)
        with _open(self.path) as archive:
            for name, dtype in STATE_MEMBERS.items():
                data = int(np.prod(expected[name], dtype=np.int64)) * np.dtype(dtype).itemsize
                _check_declared(_member(archive, self.path, name), self.path, name, data)
            if self.loop_mode == "crossfade" and self.loop_mode == preset.loop[0]:
                data = self.kept_count(preset) * _map_bytes(preset)
                _check_declared(_member(archive, self.path, "loop_kept"), self.path, "loop_kept", data)

    def _check_loop(self, preset: Preset) -> None:
        mode, count = preset.loop
        if mode != "none" and self.loop_mode != mode:
            held = "none" if self.loop_mode == "none" else f"loop_mode {self.loop_mode}'s"
            raise CheckpointError(
                f"{self.path}: holds {held} loop members; a render with output.loop_mode {mode} resumes "
                "from a checkpoint written by one (resume with --set output.loop_mode=none to leave it out)"
            )
        if mode != "none" and not 0 <= self.loop_taken <= self.frames:
            raise CheckpointError(
                f"{self.path}: loop_taken {self.loop_taken} is not within its {self.frames} frames"
            )
        if mode == "closest":
            start, end, distance, step = self.loop_window
            if not (0 <= start and start + count <= end <= preset.frames) or not (
                distance >= 0 and step >= 0
            ):
                raise CheckpointError(
                    f"{self.path}: loop_window {start}..{end} is not a closest loop of {preset.frames} frames "
                    f"at least {count} long"
                )

    def kept_count(self, preset: Preset) -> int:
        """Crossfade's early maps a checkpoint holds: those taken and not yet blended."""
        frames, count = preset.frames, preset.loop[1]
        taken = self.loop_taken or 0
        return max(0, min(taken, count) - max(0, taken - (frames - count)))

    def kept(self, preset: Preset, map_shape: tuple[int, ...]) -> torch.Tensor:
        """Crossfade's early maps [K, *map_shape] float32 (the maps a frame is coloured from:
        look/layers.py layer_map), checked (shape first, then values), on the host."""
        shape = (self.kept_count(preset), *map_shape)
        with _open(self.path) as archive:
            kept = _read_array(archive, self.path, "loop_kept", shape)
        if kept.dtype != np.float32 or not np.isfinite(kept).all() or (kept < 0).any():
            raise CheckpointError(f"{self.path}: loop_kept is not float32 trail maps (finite, not negative)")
        return torch.from_numpy(kept)

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
        journal = {f"{name}.npy" for name in JOURNAL_MEMBERS}
        loops = {mode: {f"{name}.npy" for name in members} for mode, members in LOOP_MEMBERS.items()}
        if "format.npy" not in names or _read_text(archive, path, "format") != FORMAT:
            raise CheckpointError(f"{path}: not a physarum checkpoint (a zip without its format tag)")
        found = int(_read_scalar(archive, path, "format_version"))
        if found != FORMAT_VERSION:
            raise CheckpointError(
                f"{path}: checkpoint format {found}; this physarum {version()} reads format "
                f"{FORMAT_VERSION} only"
            )
        extra = set(names) - set(wanted)
        loop_mode = next((mode for mode, members in loops.items() if extra - journal == members), "none")
        if (
            not set(wanted) <= set(names)
            or extra - journal - loops.get(loop_mode, set())
            or (extra & journal and not journal <= extra)
        ):
            raise CheckpointError(
                f"{path}: a checkpoint holds exactly {', '.join(wanted)} (and journal, "
                f"journal_frames, journal_bytes, journal_sha256 or none of them, and one loop mode's "
                f"loop members or none; got {excerpt(names)})"
            )
        header = Checkpoint(
            path=path,
            text=_read_text(archive, path, "preset"),
            release=_read_text(archive, path, "release"),
            output_version=int(_read_scalar(archive, path, "output_version")),
            step=int(_read_scalar(archive, path, "step")),
            frames=int(_read_scalar(archive, path, "frames")),
            journal=_read_mark(archive, path) if journal <= extra else None,
            loop_mode=loop_mode,
            loop_taken=int(_read_scalar(archive, path, "loop_taken")) if loop_mode != "none" else None,
            loop_window=_read_window(archive, path) if loop_mode == "closest" else None,
        )
    if not 1 <= header.step <= 20_000_000 or header.frames < 0:
        raise CheckpointError(f"{path}: step {header.step} and frames {header.frames} are not a render's")
    return header


def _read_window(archive: zipfile.ZipFile, path: Path) -> tuple[int, int, float, float]:
    """closest's loop as a checkpoint records it (checked against the preset: check_sizes)."""
    window = _read_array(archive, path, "loop_window", (2,), limit=16)
    scale = _read_array(archive, path, "loop_window_scale", (2,), limit=16)
    if window.dtype != np.int64 or scale.dtype != np.float64 or not np.isfinite(scale).all():
        raise CheckpointError(f"{path}: loop_window is not two int64 frames and two float64 distances")
    return int(window[0]), int(window[1]), float(scale[0]), float(scale[1])


def _read_mark(archive: zipfile.ZipFile, path: Path) -> JournalMark:
    """The journal prefix a checkpoint records, its name confined to a file beside it."""
    mark = JournalMark(
        name=_read_text(archive, path, "journal"),
        frames=int(_read_scalar(archive, path, "journal_frames")),
        size=int(_read_scalar(archive, path, "journal_bytes")),
        sha256=_read_text(archive, path, "journal_sha256"),
    )
    if not JOURNAL_NAME.fullmatch(mark.name):
        raise CheckpointError(f"{path}: journal {excerpt(mark.name)} is not a frame journal's file name")
    if mark.frames < 0 or mark.size < 0 or not re.fullmatch(r"[0-9a-f]{64}", mark.sha256):
        raise CheckpointError(f"{path}: its journal record (frames, bytes, sha256) is not a render's")
    return mark


def expected_shapes(preset: Preset) -> dict[str, tuple[int, ...]]:
    """The shape of each state member of a checkpoint of `preset` (a batch of one; a 3D
    preset's positions have three rows and its trail a depth)."""
    groups, agents, dims = preset.species_count, preset.agents_per_species, preset.dims
    grid = _sides(preset)[::-1]  # (H, W), or (Z, H, W)
    return {"position": (groups, dims, agents), "heading": (groups, agents), "trail": (groups, *grid)}


def _map_bytes(preset: Preset) -> int:
    """The most bytes of one map a frame is coloured from (a species' trails, or a layer's two
    maps): crossfade keeps them (look/loops.py)."""
    grid = expected_shapes(preset)["trail"][1:]
    return max(preset.species_count, 2) * int(np.prod(grid, dtype=np.int64)) * 4


def _sides(preset: Preset) -> tuple[int, ...]:
    """The canvas's sides in position order: (W, H), or (W, H, Z) for a 3D preset."""
    canvas = preset.canvas
    return (canvas.width, canvas.height, canvas.depth) if preset.dims == 3 else (canvas.width, canvas.height)


def value_problem(arrays: dict[str, np.ndarray], preset: Preset) -> str | None:
    """Why these state arrays are not a state the kernels may step (docs/model.md section 3)."""
    position, heading, trail = arrays["position"], arrays["heading"], arrays["trail"]
    sides = _sides(preset)
    for row, (axis, side) in enumerate(zip("xyz", sides)):
        values = position[:, row]
        if values.size and (values.min() < 0 or values.max() >= side << api.FRAC_BITS):
            return f"agent positions ({axis}) outside the {'x'.join(map(str, sides))} canvas"
    headings = DIRECTIONS if preset.dims == 3 else api.HEADINGS
    if heading.size and (heading.min() < 0 or heading.max() >= headings):
        return f"headings outside [0, {headings})"
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
    if limit is not None:
        _check_declared(info, path, name, limit)
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
            data = np.empty(found_shape, dtype=dtype)
            got = _read_into(member, memoryview(data.reshape(-1).view(np.uint8)))
    except CheckpointError:
        raise
    except (*UNREADABLE, SyntaxError, TokenError) as error:
        # (an .npy header cut short or garbled: numpy's parser raises SyntaxError or TokenError)
        raise CheckpointError(
            f"{path}: {name} cannot be read ({shorten(str(error))}); is it truncated?"
        ) from None
    if got != data_bytes:
        raise CheckpointError(f"{path}: {name} is truncated")
    return data


def _read_into(member, buffer: memoryview) -> int:
    """Fill `buffer` from `member` a chunk at a time (no second copy of the array); bytes read."""
    got = 0
    while got < len(buffer):
        chunk = member.read(min(1 << 20, len(buffer) - got))
        if not chunk:
            break
        buffer[got : got + len(chunk)] = chunk
        got += len(chunk)
    return got


def _check_declared(info: zipfile.ZipInfo, path: Path, name: str, data_bytes: int) -> None:
    """A member's sizes as the zip declares them, before it is opened: at most `data_bytes` and
    an .npy header, and no more than deflate can make of its stored bytes."""
    if info.file_size > data_bytes + NPY_HEADER_MAX + 16:
        raise CheckpointError(
            f"{path}: {name} declares {info.file_size} bytes; the preset's shapes allow at most "
            f"{data_bytes + NPY_HEADER_MAX + 16}"
        )
    if info.file_size > MAX_DEFLATE_RATIO * info.compress_size + 1024:
        raise CheckpointError(
            f"{path}: {name} declares {info.file_size} bytes from {info.compress_size} stored, more "
            f"than deflate makes (at most {MAX_DEFLATE_RATIO} to 1)"
        )


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
    """A text member: at most a preset text, and for the preset what any output may carry after
    it (its images, carried.MAX_CARRIED_BYTES), so every checkpoint a render writes reads back;
    4 bytes a character (numpy's UTF-32)."""
    most = MAX_TEXT_BYTES + (MAX_CARRIED_BYTES if name == "preset" else 0)
    array = _read_array(archive, path, name, (), limit=4 * most)
    if array.dtype.kind != "U":
        raise CheckpointError(f"{path}: {name} is {array.dtype}, a checkpoint's is text")
    return str(array)
