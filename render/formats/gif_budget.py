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
"""

from __future__ import annotations

import tempfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field

from physarum.render.base import lazy
from physarum.render.formats.gif_file import (
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
from physarum.render.formats.gif_pool import CompressPool, FrameTask

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")

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
        self.shape: tuple[int, int] | None = None

    def append(self, index: np.ndarray, palette: np.ndarray) -> None:
        data = zlib.compress(np.ascontiguousarray(index).tobytes(), 1)
        self.spans.append((self.file.tell(), len(data)))
        self.file.write(data)
        self.shape = index.shape
        table = palette.tobytes()
        if table not in self.palettes:
            self.palettes.append(table)
        self.palette_of.append(self.palettes.index(table))

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


@dataclass
class GifPlan:
    """What a budgeted GIF was written with, for the sidecar: the reduction, its estimate, the
    file's size, and the candidates passed over on the way (with why)."""

    budget: int
    reduction: Reduction
    estimate: int
    size: int = 0
    passed: list[str] = field(default_factory=list)

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
        }


class Budgeter:
    """Chooses and writes a budgeted GIF from a FrameStore (the module's docstring)."""

    def __init__(self, store: FrameStore, spec, digits: Digits, pool: CompressPool):
        self.store, self.spec, self.digits, self.pool = store, spec, digits, pool
        self.sample = sample_frames(len(store))
        self.blocks: dict[tuple[int, int], float] = {}  # (levels, factor): mean block bytes

    def head(self, reduction: Reduction) -> bytes:
        width, height = reduced_size(self.spec.width, self.spec.height, reduction.factor)
        palette = level_palette(self.spec.palette, reduction.levels)
        return header(width, height, palette, self.spec.loop, self.spec.comment)

    def estimate(self, reduction: Reduction) -> int:
        """Bytes a GIF at `reduction` is estimated to take (from the sample)."""
        key = (reduction.levels, reduction.factor)
        if key not in self.blocks:
            sizes = [len(block) for block in self.pool.map(self.tasks(reduction, self.sample))]
            self.blocks[key] = sum(sizes) / len(sizes)
        kept = len(kept_frames(len(self.store), reduction.stride))
        return len(self.head(reduction)) + round(self.blocks[key] * kept) + len(TRAILER)

    def tasks(self, reduction: Reduction, numbers: list[int]) -> Iterator[FrameTask]:
        global_table = level_palette(self.spec.palette, reduction.levels)
        delay = delay_ms(self.spec.fps, reduction.stride)
        weighted = self.spec.own_palettes and reduction.levels < 256  # a table of its pixels' colours
        for number in numbers:
            packed, palette = self.store.packed(number)
            local = weighted or level_palette(palette, reduction.levels) != global_table
            yield FrameTask(packed, palette, reduction, self.digits, local, delay, self.store.shape, weighted)

    def write(self, file) -> GifPlan:
        """Write the best GIF that fits into `file` (open for writing, empty); its plan."""
        budget, scale, plan = self.spec.max_bytes, 1.0, None
        order = candidates(self.spec.width, self.spec.height, len(self.store), self.digits, self.spec.fps)
        passed: list[str] = []
        for reduction in order:
            estimate = self.estimate(reduction)
            if estimate * scale > budget * MARGIN and reduction != order[-1]:
                passed.append(f"{reduction.describe()}: estimated {round(estimate * scale)} bytes")
                continue
            file.seek(0)
            file.truncate()
            size = self._write_file(file, reduction)
            plan = GifPlan(budget, reduction, estimate, size, list(passed))
            if size <= budget:
                return plan
            passed.append(f"{reduction.describe()}: written, {size} bytes (estimated {estimate})")
            scale = max(scale, size / estimate)
        raise OverflowError(
            f"no GIF of these frames fits output.gif_max_bytes = {budget}: the smallest candidate "
            f"({order[-1].describe()}) takes {plan.size} bytes"
        )

    def _write_file(self, file, reduction: Reduction) -> int:
        file.write(self.head(reduction))
        numbers = kept_frames(len(self.store), reduction.stride)
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
