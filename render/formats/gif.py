"""GIF: an animated GIF89a of index frames with the exact palette (no re-quantization), the
preset in its comment; optionally fitted to a byte budget (render/formats/gif_budget.py)."""

from __future__ import annotations

import contextlib
from collections import deque
from dataclasses import dataclass, replace
from pathlib import Path
from typing import ClassVar

from ..base import lazy
from ..base.errors import RenderError
from ..base.files import PartialFile, commit_together
from . import gif_file
from .contract import Format, Frame, Shared
from .gif_budget import (
    SPECULATE_KEYS,
    SPECULATE_WORKERS,
    Blocks,
    Budgeter,
    FrameStore,
    estimate_keys,
    estimate_task,
    sample_frames,
)
from .gif_file import Digits, Reduction, delay_ms
from .gif_pool import CompressPool, FrameTask, pool_size, start_ahead

# start-up: loaded at first use (base/lazy.py)
Image = lazy.module("PIL.Image")

GIF_MAX_SIDE = 65535  # a GIF's logical screen is 16 bits a side
MAX_BUDGET_FRAMES = 65535  # a budgeted GIF's frames (its strides and delays are 16-bit: check)


@dataclass(frozen=True)
class GifSpec:
    """A GIF89a of index frames, its global colour table `palette` (768 bytes: the first
    frame's palette), `loop` repeats (0: forever) and the preset text as its comment.

    max_bytes: its byte budget (None: none; render/formats/gif_budget.py chooses how to fit it),
    with `frames` the frame count (0: not known before the render; it only chooses which frames'
    estimates are made as they arrive) and `digits` (base, count) how its indices are made
    (render/formats/gif_file.py); processes: the worker processes that compress its frames (1: in
    the writer's process); own_palettes: each frame has its own palette (a 3D preset's), so a
    budget's reduced levels are shown by their pixels' colours (gif_file.weighted_level_palette)."""

    path: Path
    width: int
    height: int
    fps: int
    loop: int
    comment: str
    palette: bytes
    max_bytes: int | None = None
    frames: int = 0
    digits: tuple[int, int] = (256, 1)
    processes: int = 1
    own_palettes: bool = False

    format: ClassVar[str] = "gif"
    reads: ClassVar[str] = "preview"

    def open(self) -> GifWriter:
        return GifWriter(self)


class GifWriter(PartialFile):
    """Streams index frames into a GIF89a: one global colour table for the first palette and
    a local table on every frame shown with another; no re-quantization, no frame merging.
    Reads a frame's preview and palette.

    Frames are compressed in spec.processes worker processes (render/formats/gif_pool.py) and
    written in order: the same bytes as one process. With spec.max_bytes the frames are kept
    (compressed, in a temporary file) and the file is written when they are all in, at the best
    reduction that fits (render/formats/gif_budget.py); `report` then says what was chosen and why.
    A budgeted GIF's frames are kept and its first candidate's blocks made by the workers as the
    frames arrive (gif_budget.Blocks), so this thread compresses nothing and a GIF that fits
    is written at its end without compressing again; once those blocks pass the budget, the
    sample frames' estimates are made as they arrive too (gif_budget.SPECULATE_KEYS)."""

    def __init__(self, spec: GifSpec):
        super().__init__(spec.path)
        self.spec = spec
        self.global_palette = spec.palette
        self.duration_ms = delay_ms(spec.fps)
        self.file = self.open("wb")
        self.store = FrameStore() if spec.max_bytes is not None else None
        self.report: dict | None = None
        # the workers a render started before torch's import (start_workers), else started now:
        # they have imported what they need by the first frame, also where a budgeted GIF
        # compresses only once every frame is in
        self.pool = CompressPool(spec.processes)
        head = gif_file.header(spec.width, spec.height, spec.palette, spec.loop, spec.comment)
        if self.store is None:
            self.file.write(head)
            self.first = None
        else:
            self.first = Blocks(head, spec.max_bytes)  # the first candidate's blocks (gif_budget)
            # what each answer awaited is: a frame kept (its number, palette, shape) or one
            # sample frame's size at an estimate's (levels, factor)
            self.pending: deque[tuple] = deque()
            self.count = 0  # frames written so far
            self.digits = Digits(*spec.digits)
            # the sample of the frame count the spec expects, the estimates a search asks first
            self.sample = set(sample_frames(spec.frames)) if spec.frames > 0 else set()
            keys = estimate_keys(spec.width, spec.height, max(1, spec.frames), self.digits, spec.fps)
            self.early = keys[: SPECULATE_KEYS + 1]  # the first candidate's, then SPECULATE_KEYS
            self.known: dict[tuple[int, int], dict[int, int]] = {}  # sizes by (levels, factor), frame

    def write(self, frame: Frame) -> None:
        palette = frame.palette.tobytes()
        local = palette != self.global_palette
        # the caller reuses its buffers: hence the copy
        task = FrameTask(frame.preview.copy(), palette, Reduction(), Digits(), local, self.duration_ms)
        if self.store is None:
            for block in self.pool.submit(task):
                self.file.write(block)
            return
        number, self.count = self.count, self.count + 1
        answers = []
        self.pending.append(("keep", number, palette, frame.preview.shape))
        answers += self.pool.submit(replace(task, keep=True, block=not self.first.dropped))
        # a search will follow: its estimates now, where several workers make them beside the
        # frame loop (in this process they would hold the interpreter lock beside the render's
        # thread, and on two cores they take the simulation's, for estimates it may not need)
        if number in self.sample and self.first.dropped and self.pool.size >= SPECULATE_WORKERS:
            for reduction in self.early:
                self.pending.append(("size", number, (reduction.levels, reduction.factor)))
                early = estimate_task(self.spec, self.digits, reduction, task.index, palette)
                answers += self.pool.submit(early)
        for answer in answers:
            self._answer(answer)

    def _answer(self, answer) -> None:
        """A budgeted GIF's answer, in the order asked: a frame kept (its first block too, where
        made), or a sample frame's block at an estimate's (levels, factor), of which its size."""
        kind, number, *what = self.pending.popleft()
        if kind == "size":
            self.known.setdefault(what[0], {})[number] = len(answer)
            return
        block, packed = answer
        palette, shape = what
        self.store.append_packed(packed, shape, palette)
        if block:
            if number in self.sample:
                self.known.setdefault((256, 1), {})[number] = len(block)
            self.first.add(block)

    def complete(self) -> list[PartialFile]:
        if self.store is None:
            for block in self.pool.drain():
                self.file.write(block)
            self.file.write(gif_file.TRAILER)
        else:
            for answer in self.pool.drain():
                self._answer(answer)
            budgeter = Budgeter(self.store, self.spec, self.digits, self.pool, self.first, self.known)
            try:
                self.report = budgeter.write(self.file).report()
            except OverflowError as error:  # an OSError names the file, so the job fails alone
                raise OSError(0, str(error), str(self.spec.path)) from None
            self.store.close()
            self.first.close()
        self.pool.close()
        self.file.close()
        return [self]

    def commit(self) -> None:
        commit_together(self.complete())

    def abort(self) -> None:
        self.pool.kill()
        if self.store is not None:
            self.store.close()
            self.first.close()
        with contextlib.suppress(OSError):  # its buffer cannot be flushed (a full disk): thrown away
            self.file.close()
        super().abort()


def make_spec(preset, path: Path, shared: Shared) -> GifSpec:
    """The GIF of a validated preset: its (scaled) size, output.fps, loop and gif_max_bytes."""
    out, size = preset.output, shared.gif_size
    return GifSpec(
        path,
        *size,
        out.fps,
        out.loop,
        shared.text,
        shared.palette.tobytes(),
        max_bytes=out.gif_max_bytes,
        # the frames it will hold, where the preset alone says: a loop shows others (look/loops.py)
        frames=preset.frames if preset.loop[0] == "none" else 0,
        digits=shared.digits,
        processes=processes(preset, size, shared.jobs),
        own_palettes=preset.dims == 3,
    )


def check(preset) -> list[str]:
    """A budgeted GIF (output.gif_max_bytes) holds at most MAX_BUDGET_FRAMES frames, twice the
    simulated frames counted for a ping-pong loop: its strides and delays are 16-bit
    (gif_file.MAX_DELAY_CS); RenderError naming the count and the limit, before the render."""
    if "gif" not in preset.output.formats or preset.output.gif_max_bytes is None:
        return []
    mode, _ = preset.loop
    held = preset.frames * (2 if mode == "ping-pong" else 1)
    if held > MAX_BUDGET_FRAMES:
        raise RenderError(
            f"{preset.name}: a GIF within output.gif_max_bytes holds at most {MAX_BUDGET_FRAMES} frames "
            f"(GIF delays are 16-bit), and this one would hold {held}"
            f"{' (a ping-pong loop shows its frames twice)' if mode == 'ping-pong' else ''}; "
            "fewer frames (a larger run.steps_per_frame), no budget, or another format"
        )
    return []


def read_text(path: Path) -> str:
    """The preset a GIF carries: its comment extension."""
    with Image.open(path) as image:
        return image.info["comment"].decode("utf-8")


FORMAT = Format(
    name="gif",
    position=0,
    default=True,
    summary="an animated GIF of palette indices, the exact palette, optionally within a byte budget",
    max_side=GIF_MAX_SIDE,
    max_frames=None,  # none unbudgeted; with a budget MAX_BUDGET_FRAMES (check)
    spec=GifSpec,
    make_spec=make_spec,
    check=check,  # the budget's bytes are checked by the out stage, which knows the look (out/specs.py)
    read_text=read_text,
)


def processes(preset, size: tuple[int, int], jobs: int = 1) -> int:
    """The worker processes that compress a preset's GIF of `size` (width, height) when `jobs`
    GIFs are written at once (gif_pool.pool_size of all its frames' pixels)."""
    return pool_size(jobs, size[0] * size[1] * preset.frames)


def start_workers(preset, size: tuple[int, int]) -> None:
    """Start the workers of a render's GIF of `size` now, where the render writes a GIF alone
    (jobs 1): its writer takes them (gif_pool.start_ahead)."""
    if "gif" in preset.output.formats:
        start_ahead(processes(preset, size))
