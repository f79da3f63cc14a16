"""A GIF byte budget: the best reduction (render/formats/gif_file.py) whose GIF fits, chosen from the frames
alone, so that the choice is the same on every machine whatever its cores or speed.

The candidates, best first (docs/outputs.md, "GIF byte budgets", says why this order): for each
area downscale factor 1, 2, 3, ... (while the GIF keeps MIN_SIDE pixels on its short side; only 1
for a smaller GIF), levels 256, 128, 64, 32 at every frame, then the same at every second
frame, then 16 levels at every frame and at every second (levels stay 256 with several species:
their index is a product of digits, render/look/colour.py); past the last factor, strides 3, 4, ... at
its fewest levels. Every candidate's size is estimated from a fixed sample of the
frames (SAMPLE of them, spread evenly, chosen by the frame count only): the mean compressed block
of the sample times the frames kept, plus the header. The first candidate whose estimate is at
most MARGIN of the budget is written; if the file misses the budget, the estimates that follow
are scaled by the miss (actual / estimate) and the first that then fits is written, from the
kept frames, without simulating again.

What that costs after the last frame is bounded and said (the sidecar's `gif_budget`: seconds,
estimates, frames compressed). The first candidate (every frame, every level, full size: the
unbudgeted GIF) is compressed while the frames arrive, each frame's block kept (`first`) until
they pass the budget, so a GIF that fits needs no compression at its end: its estimate is read
from the kept blocks and the file is those blocks. Once they pass it (a search will follow), with
SPECULATE_WORKERS workers or more (cores to spare beside the render), each sample frame (of the
frame count the spec expects, where it knows one) is also compressed as it arrives at the first
SPECULATE_KEYS candidates' (levels, factor) after it, and only their sizes kept (`known`). The
estimates still missing are computed a few at a time in one batch of tasks over the pool
(`ahead`), not one after another. None of this changes a byte: every estimate and block is what
the candidate's tasks make (estimate_task), whenever they run.
"""

from __future__ import annotations

import math
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from ..base import lazy
from .gif_file import (
    LEVELS,
    TRAILER,
    Digits,
    Reduction,
    delay_ms,
    frame_block,
    header,
    kept_frames,
    level_palette,
    max_stride,
    reduced_size,
)
from .gif_pool import KEEP_LEVEL, CompressPool, FrameTask

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")

SPECULATE_KEYS = 14  # (levels, factor) pairs a sample frame is compressed at as it arrives (see above)
SPECULATE_WORKERS = 4  # ... where a GIF has at least this many workers (spare cores beside the render)
SAMPLE = 12  # frames compressed per estimate: the estimates of quickstart's GIFs are within 3 %
MARGIN = 0.97  # an estimate must leave this much of the budget, so that a miss is rare
MIN_SIDE = 32  # area downscales stop before the GIF's short side falls below this


def candidates(width: int, height: int, frames: int, digits: Digits, fps: int = 100) -> list[Reduction]:
    """Every reduction a budget may choose, best first (the module's docstring says the order),
    its strides at most the frames and gif_file.max_stride(fps) (a GIF delay is 16 bits)."""
    levels = LEVELS if digits.count == 1 else (256,)
    mild, strong = levels[:4], levels[4:]  # 256 .. 32 levels; 16
    frames = min(frames, max_stride(fps))
    strides = [s for s in (1, 2) if s <= frames]
    short = min(width, height)
    factors = [1] + [d for d in range(2, short + 1) if short // d >= MIN_SIDE]
    order = []
    for d in factors:
        order += [Reduction(lv, d, s) for s in strides for lv in mild]
        order += [Reduction(lv, d, s) for lv in strong for s in strides]
    order += [Reduction(levels[-1], factors[-1], s) for s in range(3, frames + 1)]
    return order


def estimate_keys(width: int, height: int, frames: int, digits: Digits, fps: int) -> list[Reduction]:
    """Each (levels, factor) of the candidates, in order, as the first candidate that has it
    (the reduction its estimate is computed with)."""
    seen, keys = set(), []
    for reduction in candidates(width, height, frames, digits, fps):
        if (reduction.levels, reduction.factor) not in seen:
            seen.add((reduction.levels, reduction.factor))
            keys.append(reduction)
    return keys


def estimate_task(spec, digits: Digits, reduction: Reduction, index, palette: bytes, shape=None) -> FrameTask:
    """The task whose block an estimate of `reduction` counts for one frame (index: the frame,
    or with `shape` zlib-compressed as a FrameStore keeps it; palette: its 768 bytes)."""
    global_table = level_palette(spec.palette, reduction.levels)
    delay = delay_ms(spec.fps, reduction.stride)
    weighted = spec.own_palettes and reduction.levels < 256  # a table of its pixels' colours
    local = weighted or level_palette(palette, reduction.levels) != global_table
    return FrameTask(index, palette, reduction, digits, local, delay, shape, weighted)


def sample_frames(count: int) -> list[int]:
    """The frames an estimate compresses: SAMPLE of `count`, spread evenly (by count alone)."""
    m = min(SAMPLE, count)
    return [(2 * j + 1) * count // (2 * m) for j in range(m)]


class FrameStore:
    """A render's index frames and palettes kept for the GIF, zlib-compressed (level 1: fast, and
    index frames shrink many times) in a temporary file, so that the GIF is written once the
    budget's choice is made, and again if it misses, without simulating again."""

    def __init__(self):
        self.file = tempfile.TemporaryFile()
        self.spans: list[tuple[int, int]] = []
        self.palettes: list[bytes] = []
        self.palette_of: list[int] = []
        self.numbers: dict[bytes, int] = {}  # a palette's place in self.palettes
        self.shape: tuple[int, int] | None = None

    def append(self, index: np.ndarray, palette: np.ndarray) -> None:
        data = zlib.compress(np.ascontiguousarray(index).tobytes(), KEEP_LEVEL)
        self.append_packed(data, index.shape, palette.tobytes())

    def append_packed(self, data: bytes, shape: tuple[int, int], table: bytes) -> None:
        """Keep a frame already zlib-compressed (by a compression worker: gif_pool KEEP) of
        `shape`, and its 768-byte palette."""
        self.spans.append((self.file.tell(), len(data)))
        self.file.write(data)
        self.shape = shape
        number = self.numbers.get(table)
        if number is None:
            number = self.numbers[table] = len(self.palettes)
            self.palettes.append(table)
        self.palette_of.append(number)

    def __len__(self) -> int:
        return len(self.spans)

    def frame(self, number: int) -> tuple[np.ndarray, bytes]:
        """(index frame [h, w] uint8, 768-byte palette) of frame `number`."""
        packed, palette = self.packed(number)
        return np.frombuffer(zlib.decompress(packed), dtype=np.uint8).reshape(self.shape), palette

    def packed(self, number: int) -> tuple[bytes, bytes]:
        """(index frame zlib-compressed, of shape self.shape; 768-byte palette) of frame `number`:
        what a compression worker decompresses itself (gif_pool.FrameTask)."""
        offset, length = self.spans[number]
        self.file.seek(offset)
        packed = self.file.read(length)
        self.file.seek(0, 2)
        return packed, self.palettes[self.palette_of[number]]

    def close(self) -> None:
        self.file.close()


class Blocks:
    """Every frame's block of the first candidate (Reduction(): the unbudgeted GIF's), compressed
    while the frames arrive and kept in a temporary file while their GIF stays within `budget`
    bytes (header and trailer included): past it the first candidate cannot be written within the
    budget, and the blocks are dropped (`dropped`) and no more are made."""

    def __init__(self, head: bytes, budget: int):
        self.file = tempfile.TemporaryFile()
        self.lengths: list[int] = []
        self.bytes = len(head) + len(TRAILER)
        self.budget = budget
        self.dropped = False

    def add(self, block: bytes) -> None:
        if self.dropped:
            return
        self.bytes += len(block)
        if self.bytes > self.budget:
            self.dropped, self.lengths = True, []
            self.file.close()
            return
        self.file.write(block)
        self.lengths.append(len(block))

    def whole(self, frames: int) -> bool:
        """Whether every one of `frames` frames has its block here."""
        return not self.dropped and len(self.lengths) == frames

    def copy_to(self, file) -> None:
        self.file.seek(0)
        while chunk := self.file.read(1 << 22):
            file.write(chunk)

    def close(self) -> None:
        self.file.close()


@dataclass
class GifPlan:
    """What a budgeted GIF was written with, for the sidecar: the reduction, its estimate, the
    file's size, and the candidates passed over on the way (with why)."""

    budget: int
    reduction: Reduction
    estimate: int
    size: int = 0
    passed: list[str] = field(default_factory=list)
    cost: dict = field(default_factory=dict)  # the choice's cost after the frames (Budgeter.cost)

    def report(self) -> dict:
        r = self.reduction
        return {
            "max_bytes": self.budget,
            "levels": r.levels,
            "downscale": r.factor,
            "stride": r.stride,
            "estimate_bytes": self.estimate,
            "bytes": self.size,
            "chosen": r.describe(),
            "why": self.passed or ["the first candidate fits"],
            "cost": self.cost,
        }


class Budgeter:
    """Chooses and writes a budgeted GIF from a FrameStore (the module's docstring)."""

    def __init__(
        self,
        store: FrameStore,
        spec,
        digits: Digits,
        pool: CompressPool,
        first: Blocks | None = None,
        known: dict[tuple[int, int], dict[int, int]] | None = None,
    ):
        """first: the first candidate's blocks made as the frames arrived; known: block sizes
        made as they arrived, by (levels, factor) and frame number (GifWriter)."""
        self.store, self.spec, self.digits, self.pool = store, spec, digits, pool
        self.known = {key: dict(sizes) for key, sizes in (known or {}).items()}
        self.sample = sample_frames(len(store))
        self.blocks: dict[tuple[int, int], float] = {}  # (levels, factor): mean block bytes
        self.first = first if first is not None and first.whole(len(store)) else None
        if self.first is not None:  # the first candidate's estimate, from its kept blocks
            sizes = [self.first.lengths[number] for number in self.sample]
            self.blocks[(256, 1)] = sum(sizes) / len(sizes)
        # estimates computed at once: enough sample tasks to keep every worker busy twice over
        self.ahead = 1 if pool.size <= 1 else max(1, math.ceil(2 * pool.size / max(1, len(self.sample))))
        self.estimates = self.compressed = 0
        self.seconds = 0.0

    def cost(self) -> dict:
        """What the choice cost after the last frame: its seconds, the estimates computed from
        the sample, the frames compressed (estimates and files), and whether the first
        candidate's blocks were made while the frames arrived."""
        return {
            "seconds": round(self.seconds, 3),
            "estimates": self.estimates,
            "frames_compressed": self.compressed,
            "first_from_render": self.first is not None,
        }

    def head(self, reduction: Reduction) -> bytes:
        width, height = reduced_size(self.spec.width, self.spec.height, reduction.factor)
        palette = level_palette(self.spec.palette, reduction.levels)
        return header(width, height, palette, self.spec.loop, self.spec.comment)

    def estimate(self, reduction: Reduction, order: list[Reduction] = ()) -> int:
        """Bytes a GIF at `reduction` is estimated to take (from the sample). order: the
        candidates from `reduction` on; the next `ahead` of their estimates not yet known are
        computed with it, in one batch."""
        key = (reduction.levels, reduction.factor)
        if key not in self.blocks:
            batch, known = [reduction], {*self.blocks, key}
            for later in order:
                if len(batch) >= self.ahead:
                    break
                if (later.levels, later.factor) not in known:
                    batch.append(later)
                    known.add((later.levels, later.factor))
            wanted = [
                (r, number)
                for r in batch
                for number in self.sample
                if number not in self.known.get((r.levels, r.factor), {})
            ]
            tasks = [task for r, number in wanted for task in self.tasks(r, [number])]
            for (r, number), block in zip(wanted, self.pool.map(tasks)):
                self.known.setdefault((r.levels, r.factor), {})[number] = len(block)
            for r in batch:
                sizes = [self.known[(r.levels, r.factor)][number] for number in self.sample]
                self.blocks[(r.levels, r.factor)] = sum(sizes) / len(sizes)
            self.estimates += len(batch)
            self.compressed += len(tasks)
        kept = len(kept_frames(len(self.store), reduction.stride))
        return len(self.head(reduction)) + round(self.blocks[key] * kept) + len(TRAILER)

    def tasks(self, reduction: Reduction, numbers: list[int]) -> Iterator[FrameTask]:
        for number in numbers:
            packed, palette = self.store.packed(number)
            yield estimate_task(self.spec, self.digits, reduction, packed, palette, self.store.shape)

    def write(self, file) -> GifPlan:
        """Write the best GIF that fits into `file` (open for writing, empty); its plan."""
        began = time.perf_counter()
        budget, scale, plan = self.spec.max_bytes, 1.0, None
        order = candidates(self.spec.width, self.spec.height, len(self.store), self.digits, self.spec.fps)
        passed: list[str] = []
        for place, reduction in enumerate(order):
            estimate = self.estimate(reduction, order[place + 1 :])
            if estimate * scale > budget * MARGIN and reduction != order[-1]:
                passed.append(f"{reduction.describe()}: estimated {round(estimate * scale)} bytes")
                continue
            file.seek(0)
            file.truncate()
            size = self._write_file(file, reduction)
            plan = GifPlan(budget, reduction, estimate, size, list(passed))
            if size <= budget:
                self.seconds += time.perf_counter() - began
                plan.cost = self.cost()
                return plan
            passed.append(f"{reduction.describe()}: written, {size} bytes (estimated {estimate})")
            scale = max(scale, size / estimate)
        raise OverflowError(
            f"no GIF of these frames fits output.gif_max_bytes = {budget}: the smallest candidate "
            f"({order[-1].describe()}) takes {plan.size} bytes"
        )

    def _write_file(self, file, reduction: Reduction) -> int:
        file.write(self.head(reduction))
        if reduction == Reduction() and self.first is not None:  # made while the frames arrived
            self.first.copy_to(file)
            file.write(TRAILER)
            file.flush()
            return file.tell()
        numbers = kept_frames(len(self.store), reduction.stride)
        self.compressed += len(numbers)
        for block in self.pool.map(self.tasks(reduction, numbers)):
            file.write(block)
        file.write(TRAILER)
        file.flush()
        return file.tell()


def minimum_bytes(
    width: int,
    height: int,
    palettes: list[bytes],
    digits: Digits,
    loop: int,
    comment: str,
    local: bool = False,
) -> int:
    """A lower bound on any budgeted GIF of these frames (palettes: each frame's 768-byte
    palette, known before rendering): the smallest candidate's header, and each kept frame as a
    frame of one colour (LZW's smallest), with its local table where its palette differs, or
    every frame with its own where `local` (a 3D preset: each volume frame's own palette,
    render/look/volume.py reduce_rgb, made only when it is rendered)."""
    last = candidates(width, height, len(palettes), digits)[-1]
    return reduced_bytes(width, height, palettes, loop, comment, last, local)


def reduced_bytes(
    width: int,
    height: int,
    palettes: list[bytes],
    loop: int,
    comment: str,
    reduction: Reduction,
    local: bool = False,
) -> int:
    """A lower bound on the bytes of any GIF of these frames (palettes: each frame's 768-byte
    palette) at `reduction` or a milder one: its header, and each kept frame as a frame of one
    colour (LZW's smallest), with its local table where its palette differs, or every frame
    with its own where `local` (minimum_bytes)."""
    size = reduced_size(width, height, reduction.factor)
    first = level_palette(palettes[0], reduction.levels)
    total = len(header(*size, first, loop, comment)) + len(TRAILER)
    constant = np.zeros((size[1], size[0]), dtype=np.uint8)
    delay = delay_ms(100, reduction.stride)
    for number in kept_frames(len(palettes), reduction.stride):
        table = level_palette(palettes[number], reduction.levels)
        total += len(frame_block(constant, table, local or table != first, delay))
    return total
