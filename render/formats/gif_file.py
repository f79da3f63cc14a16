"""GIF89a bytes of index frames: the file's layout, one frame's compressed block, and the exact
reductions a byte budget chooses among (render/formats/gif_budget.py).

Every frame's block (graphic control extension, image descriptor, optional local colour table,
LZW data) depends on that frame, its palette and the delay only, so frames compress independently
(render/formats/gif_pool.py compresses them in worker processes) and the file is their blocks in order.
This module imports neither torch nor a writer: the pool's workers import it alone.

The reductions keep every shown colour an entry of the preset's palette:

- levels L (256, 128, 64, 32, 16): index i becomes i // (256 / L), shown with the palette's entry
  at the middle of its group of 256 / L indices (a table of L entries);
- area downscale by an integer factor d: each d x d block of the index frame becomes the rounded
  mean of its indices (per species digit with several species, whose index is a number in base K);
  the right and bottom remainders (fewer than d pixels) are cropped;
- frame stride s: every s-th frame, counted back from the last (so the final frame is always
  shown), each shown s times as long.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from ..base import lazy

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")
GifImagePlugin = lazy.module("PIL.GifImagePlugin")
Image = lazy.module("PIL.Image")

LEVELS = (256, 128, 64, 32, 16)
PRODUCT_LEVELS = {1: 256, 2: 16, 3: 6, 4: 4}  # K: levels per species in a GIF's palette, K^S <= 256


@dataclass(frozen=True)
class Reduction:
    """How a GIF is reduced from its index frames: palette levels, area downscale factor and
    frame stride (256, 1, 1: not at all)."""

    levels: int = 256
    factor: int = 1
    stride: int = 1

    def describe(self) -> str:
        parts = [f"{self.levels} levels"]
        if self.factor > 1:
            parts.append(f"1/{self.factor} size")
        if self.stride > 1:
            parts.append(f"every {self.stride} frames")
        return ", ".join(parts)


@dataclass(frozen=True)
class Digits:
    """How an index frame's values are made: `count` digits in base `base` (one species: one
    digit in base 256; S species: S digits in base K, render/look/colour.py's product palette)."""

    base: int = 256
    count: int = 1


MAX_DELAY_CS = 0xFFFF  # a GIF frame's delay is 16 bits of centiseconds (as is a task's stride)


def max_stride(fps: int) -> int:
    """The most frames one GIF frame may stand for at `fps` (a stride's delay, delay_ms, fits
    in MAX_DELAY_CS centiseconds): 65535 at 100 fps, 655 at 1 fps."""
    return MAX_DELAY_CS // max(1, round(100 / fps))


def delay_ms(fps: int, stride: int = 1) -> int:
    """A frame's delay: whole centiseconds (all GIF delays are), stride times one frame's."""
    return 10 * max(1, round(100 / fps)) * stride


def preview_size(width: int, height: int, scale: float) -> tuple[int, int]:
    """(width, height) of the GIF of a canvas at gif_scale `scale`: each side rounded, at least 1."""
    return max(1, round(width * scale)), max(1, round(height * scale))


def reduced_size(width: int, height: int, factor: int) -> tuple[int, int]:
    """(width, height) of a GIF of `width` x `height` index frames downscaled by `factor`."""
    return max(1, width // factor), max(1, height // factor)


def kept_frames(count: int, stride: int) -> list[int]:
    """The frame numbers a stride keeps: every stride-th, counted back from the last."""
    return list(range((count - 1) % stride, count, stride))


def area_downscale(index: np.ndarray, factor: int, digits: Digits = Digits()) -> np.ndarray:
    """[h // factor, w // factor] uint8: the rounded mean of each factor x factor block, digit by
    digit (integers throughout, so exact on every machine)."""
    if factor == 1:
        return index
    height, width = index.shape
    out_h, out_w = max(1, height // factor), max(1, width // factor)
    block = index[: out_h * factor, : out_w * factor].astype(np.int32)
    area = factor * factor
    total = np.zeros((out_h, out_w), dtype=np.int32)
    for d in range(digits.count):
        digit = (block // digits.base**d) % digits.base
        sums = digit.reshape(out_h, factor, out_w, factor).sum(axis=(1, 3))
        total += (sums + area // 2) // area * digits.base**d
    return total.astype(np.uint8)


def reduce_levels(index: np.ndarray, levels: int) -> np.ndarray:
    """Index i as its group's number i // (256 / levels) (exact: an integer division)."""
    return index if levels == 256 else index // np.uint8(256 // levels)


def level_palette(palette: bytes, levels: int) -> bytes:
    """The table of `levels` entries a reduced frame is shown with: the palette's entry at the
    middle of each group of 256 / levels indices (768 bytes in, 3 * levels out)."""
    if levels == 256:
        return palette
    group = 256 // levels
    table = np.frombuffer(palette, dtype=np.uint8).reshape(256, 3)
    return table[np.arange(levels) * group + group // 2].tobytes()


def weighted_level_palette(palette: bytes, index: np.ndarray, levels: int) -> bytes:
    """The table of `levels` entries for a frame with its own palette (a 3D frame's: reduce_rgb,
    sorted by luma), from the frame's indices `index` before their levels were reduced: each
    group of 256 / levels indices shown as the rounded mean of its entries' colours weighted by
    the pixels that hold each, in integers; a group no pixel holds as its middle entry
    (level_palette). The darkest group, where the background is most of the pixels, stays the
    background's colour instead of turning to the group's middle shade."""
    if levels == 256:
        return palette
    group = 256 // levels
    table = np.frombuffer(palette, dtype=np.uint8).reshape(256, 3).astype(np.int64)
    counts = np.bincount(index.reshape(-1), minlength=256).astype(np.int64).reshape(levels, group)
    sums = (table.reshape(levels, group, 3) * counts[:, :, None]).sum(axis=1)
    totals = counts.sum(axis=1)[:, None]
    mean = (2 * sums + totals) // np.maximum(2 * totals, 1)
    middle = table[np.arange(levels) * group + group // 2]
    return np.where(totals > 0, mean, middle).astype(np.uint8).tobytes()


def frame_block(index: np.ndarray, palette: bytes, local: bool, delay: int) -> bytes:
    """One frame's bytes in a GIF: Pillow's frame encoding of index [h, w] uint8 with `palette`
    (its table included when `local`), no transparency, `delay` milliseconds."""
    image = Image.fromarray(np.ascontiguousarray(index), mode="P")
    image.putpalette(palette)
    return b"".join(GifImagePlugin.getdata(image, duration=delay, include_color_table=local))


def _table_flag(palette: bytes) -> int:
    """The colour table size field of a table of len(palette) // 3 entries (a power of two)."""
    return (len(palette) // 3).bit_length() - 2


def header(width: int, height: int, palette: bytes, loop: int, comment: str) -> bytes:
    """Everything before the first frame: the screen of `width` x `height` with global colour
    table `palette` (a power of two of entries), the loop count and the comment extension."""
    screen = struct.pack("<HHBBB", width, height, 0xF0 | _table_flag(palette), 0, 0)
    data = comment.encode("utf-8")
    blocks = b"".join(bytes([len(data[i : i + 255])]) + data[i : i + 255] for i in range(0, len(data), 255))
    looping = b"!\xff\x0bNETSCAPE2.0\x03\x01" + struct.pack("<H", loop) + b"\x00"
    return b"GIF89a" + screen + palette + looping + b"!\xfe" + blocks + b"\x00"


TRAILER = b";"
