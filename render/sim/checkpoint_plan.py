"""A render's checkpoints, known before it starts: which steps, at most how many bytes, whether
they fit, and the course's stop that writes them.

checkpoint_plan(presets, folder, start) is the plan of a render (a batch of one) with a
checkpoint section: the steps after `start` its checkpoints are taken at, each bounded by
checkpoint_bytes (every member deflated at its worst, with the .npy and zip headers), their
count at most MAX_CHECKPOINTS and their sum within the disk's free bytes; a plan that cannot be
kept is a RenderError before anything is written. The render's frame journal (render/out/journal.py),
whose bound the out stage gives as `journal`, is counted with them: stated, recorded and within
the disk's free bytes. checkpoint_stops gives the render's course the CheckpointWriter that
writes them (render/sim/checkpoint.py: the file itself), each with the journal prefix it covers.

The plan checks the render's volume exports too (output.volume, render/out/volume_export.py):
at most MAX_VOLUMES, and their files at their worst (volume_export_bytes) within the disk's free
bytes beside the checkpoints, before anything is written.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..base.errors import RenderError
from ..base.files import remove_stale_parts
from ..preset import Preset
from ..preset.output_sections import MAX_STOPS
from ..preset.provenance import embedded_text, version
from .checkpoint import (
    FORMAT,
    HEADER_MEMBERS,
    STATE_MEMBERS,
    JournalMark,
    checkpoint_path,
    expected_shapes,
    save_checkpoint,
)
from .course import frames_before

MAX_CHECKPOINTS = MAX_STOPS  # a render's, however scheduled (checkpoint.at's own limit)
MAX_VOLUMES = 100  # a render's volume exports (output.volume), each a whole volume
MEMBER_OVERHEAD = 512  # a member's .npy header (128 bytes) and zip records (zip64 included)
ARCHIVE_OVERHEAD = 256  # the zip's end records (zip64 included)


# ---------------------------------------------------------------------------------------------
# The stop that writes them


class CheckpointWriter:
    """The course's stop (render/sim/course.py) that writes a render's checkpoints into `folder`.
    Each checkpoint is renamed
    into place as soon as it is written and stays when the render later fails or is killed
    (that is what it is for); the render's outputs keep their all-or-nothing commit.
    mark: called before each checkpoint is written, it makes the frames taken so far durable
    in the render's frame journal and returns the prefix the checkpoint records (None: none)."""

    def __init__(
        self,
        preset: Preset,
        folder: Path,
        stem: str,
        steps: frozenset[int],
        mark: Callable[[], JournalMark | None] | None = None,
        loop: Callable[[], dict[str, np.ndarray]] | None = None,
    ):
        """loop: what the render's loop holds now, as checkpoint members (look/loops.py
        TrailLoop.members), called after mark."""
        self.preset, self.folder, self.stem, self.steps = preset, Path(folder), stem, steps
        self.mark, self.loop = mark, loop
        self.written: list[Path] = []
        remove_stale_parts(self.folder, f"{stem}-checkpoint-*.npz")

    def __call__(self, simulation, step: int) -> None:
        path = checkpoint_path(self.folder, self.stem, step)
        journal = self.mark() if self.mark is not None else None
        loop = self.loop() if self.loop is not None else None
        frames = frames_before(self.preset.run, step)
        save_checkpoint(path, self.preset, simulation.state, frames, journal, loop)
        self.written.append(path)


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


def checkpoint_stops(
    presets,
    folder: Path,
    stem: str,
    mark: Callable[[], JournalMark | None] | None = None,
    loop: Callable[[], dict[str, np.ndarray]] | None = None,
) -> list[CheckpointWriter]:
    """The checkpoint writer of a render (a batch of one), none without a checkpoint section."""
    preset = checkpointed(presets)
    if preset is None:
        return []
    return [CheckpointWriter(preset, folder, stem, preset.checkpoint.steps(preset.end_step), mark, loop)]


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
    members = (*state, *texts, *scalars, *loop_member_bytes(preset))
    return ARCHIVE_OVERHEAD + sum(deflate_bound(size) + MEMBER_OVERHEAD for size in members)


def loop_member_bytes(preset: Preset) -> list[int]:
    """The data bytes of a checkpoint's loop members at most (render/sim/checkpoint.py): the
    frames taken, crossfade's early maps (all of them, at most), closest's window."""
    mode, count = preset.loop
    if mode == "none":
        return []
    grid = expected_shapes(preset)["trail"][1:]
    kept = count * max(preset.species_count, 2) * int(np.prod(grid, dtype=np.int64)) * 4
    return [8, *{"crossfade": [kept], "closest": [16, 16]}.get(mode, [])]


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
    each at most `each` bytes, and its frame journal at most `journal` bytes (0: none), into
    `folder`, whose disk has `free` bytes."""

    name: str
    steps: tuple[int, ...]
    each: int
    folder: Path
    free: int
    journal: int = 0

    @property
    def total(self) -> int:
        """The most bytes all of them take, the journal included."""
        return len(self.steps) * self.each + self.journal

    def note(self) -> str:
        """One line for stderr: how many, when, how large at most."""
        count, first, last = len(self.steps), self.steps[0], self.steps[-1]
        when = f"step {first}" if count == 1 else f"steps {first} to {last}"
        journal = f" and a frame journal of at most {megabytes(self.journal)}" if self.journal else ""
        return (
            f"{count} checkpoint{'s' * (count > 1)} ({when}), each at most {megabytes(self.each)}{journal}, "
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
            "journal_max_bytes": self.journal,
        }

    def problem(self) -> str | None:
        """Why these checkpoints may not be written: more than MAX_CHECKPOINTS, or more bytes
        than the disk has free. None when they fit."""
        journal = f", a frame journal up to {megabytes(self.journal)}" if self.journal else ""
        count = len(self.steps)
        sizes = f"each up to {megabytes(self.each)}{journal}, {megabytes(self.total)} in all"
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


def checkpoint_plan(
    presets, folder: Path, start: int = 0, journal: Callable[[int], int] | None = None
) -> CheckpointPlan | None:
    """The checkpoints a render (a batch of one) will write into `folder` after step `start`,
    checked before it starts: RenderError (nothing written) when they are too many or would not
    fit on the disk. None when it writes none. journal(last_step): the most bytes of the frame
    journal a render whose last checkpoint is at that step keeps (render/out/journal.py)."""
    exports = volume_exports(presets, start)  # RenderError where one schedules too many
    preset = checkpointed(presets)
    steps = ()
    if preset is not None:
        steps = tuple(sorted(s for s in preset.checkpoint.steps(preset.end_step) if s > start))
    plan = None
    if steps:
        journal_bytes = journal(steps[-1]) if journal is not None else 0
        plan = CheckpointPlan(
            preset.name, steps, checkpoint_bytes(preset), Path(folder), free_bytes(folder), journal_bytes
        )
        problem = plan.problem()
        if problem:
            raise RenderError(problem)
    if exports:
        free = plan.free if plan is not None else free_bytes(folder)
        _check_export_room(presets, exports, plan.total if plan is not None else 0, Path(folder), free)
    return plan


# ---------------------------------------------------------------------------------------------
# Volume exports (output.volume): how many, at most how many bytes, whether they fit

MESH_VERTEX_BYTES = 40  # an OBJ vertex line, 'v x y z' at 4 decimals
MESH_FACE_BYTES = 36  # an OBJ face line, 'f a b c'
STL_TRIANGLE_BYTES = 50


def export_shape(preset: Preset) -> tuple[int, int, int]:
    """The shape of a preset's exported volume: a 3D preset's [D, H, W]; a 2D preset's
    space-time stack at most [frames, H, W] (its GIF's frames, never larger than the canvas)."""
    if preset.dims == 3:
        return preset.canvas.depth, preset.canvas.height, preset.canvas.width
    return preset.frames, preset.canvas.height, preset.canvas.width


def volume_export_bytes(preset: Preset) -> int:
    """The most bytes one step's volume files take (output.volume.formats): the .npz's float32
    volume and levels deflated at their worst with its texts, the bare .npy, and a mesh at its
    worst (marching cubes: 5 triangles a cube, 3 vertices a voxel of the padded volume)."""
    volume = preset.output.volume
    if volume is None:
        return 0
    depth, height, width = export_shape(preset)
    voxels = depth * height * width
    cubes = (depth + 1) * (height + 1) * (width + 1)
    corners = (depth + 2) * (height + 2) * (width + 2)
    text = embedded_text(preset)
    sizes = {
        "npz": ARCHIVE_OVERHEAD
        + sum(
            deflate_bound(size) + MEMBER_OVERHEAD for size in (4 * voxels, voxels, 4 * len(text), 64, 8, 8)
        ),
        "npy": 4 * voxels + 128,
        "obj": len(text.encode("utf-8")) * 2
        + 64
        + 3 * corners * MESH_VERTEX_BYTES
        + 5 * cubes * MESH_FACE_BYTES,
        "stl": 84 + 5 * cubes * STL_TRIANGLE_BYTES,
    }
    return sum(sizes[fmt] for fmt in volume.formats)


def export_steps(preset: Preset, start: int = 0) -> tuple[int, ...]:
    """The steps after `start` at which a render writes its volume files: a 3D preset's
    output.volume steps, a 2D preset's space-time stack once at its last step."""
    volume = preset.output.volume
    if volume is None:
        return ()
    steps = volume.steps(preset.end_step) if preset.dims == 3 else {preset.end_step}
    return tuple(sorted(s for s in steps if s > start))


def volume_exports(presets, start: int = 0) -> list[tuple[Preset, int, int]]:
    """(preset, count, bytes each) of every preset of a batch that exports volumes after `start`;
    RenderError where one schedules more than MAX_VOLUMES."""
    exports = []
    for preset in presets:
        count = len(export_steps(preset, start))
        if not count:
            continue
        each = volume_export_bytes(preset)
        if count > MAX_VOLUMES:
            raise RenderError(
                f"{preset.name}: output.volume: schedules {count} volumes (each up to {megabytes(each)}); "
                f"a render writes at most {MAX_VOLUMES}: choose a larger output.volume.every or fewer "
                "output.volume.at steps"
            )
        exports.append((preset, count, each))
    return exports


def _check_export_room(presets, exports, checkpoints: int, folder: Path, free: int) -> None:
    """RenderError where the volume exports (with the render's checkpoints and journal, on the
    same disk) need more bytes than the disk has free."""
    total = sum(count * each for _, count, each in exports)
    if total + checkpoints <= free:
        return
    preset, count, each = exports[0]
    with_checkpoints = f", with its checkpoints {megabytes(total + checkpoints)}" if checkpoints else ""
    raise RenderError(
        f"{preset.name}: output.volume: {count} volume export{'s' * (count > 1)} (each up to "
        f"{megabytes(each)}, {megabytes(total)} in all{with_checkpoints}) do not fit in the "
        f"{megabytes(free)} free on the disk of {folder}: write fewer (output.volume.every, .at, "
        ".formats: a mesh is counted at its worst) or render to another --out"
    )
