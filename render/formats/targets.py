"""Platform targets (output.target, `render --target NAME`): one table of where a video goes and
what each place takes (its frame size or largest side, aspect, frame rate, duration and file
size), and how the MP4 is fitted to it: cropped or padded to the aspect (output.target_fit),
scaled to the size by exact nearest-neighbour indexing, looped in whole loops up to the shortest
duration or trimmed to the longest, its bit rate capped (x264's VBV) to stay under the file
size. The render refuses before work what cannot meet a target (too fast a frame rate, too few
bits a pixel for the budget) and says why. The GIF's named budgets are gif_targets.py's
(GIF_TARGETS), listed beside these by `physarum render --help`.

The limits are the platforms' published ones as the author knew them in 2026 (READ), from the
help pages each entry names: not fetched, and platforms change them; where a platform gives
several (app, web, ads), the smallest is taken. Not a format (no FORMAT): the MP4 reads it.
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass

from ..base import lazy
from ..base.errors import RenderError

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")

READ = "2026 (from knowledge of the pages named, not fetched)"
HEADROOM = 0.9  # the share of a byte budget the video's bit rate may fill (the container, audio)
MIN_BITS_PER_PIXEL = 0.02  # below this an H.264 picture falls apart: refused instead
MAX_RATE = 50_000_000  # bit/s: H.264 High level 4.2's most (1080p at 60 fps), a ceiling for any budget
FITS = ("pad", "crop")  # output.target_fit: pad (the whole picture, bars of the background) or crop


@dataclass(frozen=True)
class Target:
    """A place a video goes: size (width, height) of its frames, or None (the picture's own
    aspect within max_side pixels a side, never enlarged); the highest frame rate; the shortest
    and longest durations (seconds); the largest file (bytes); pages: where the limits are
    published."""

    size: tuple[int, int] | None
    max_side: int
    fps: int
    seconds: tuple[float, float]
    max_bytes: int
    pages: str


TARGETS = {
    "instagram-reel": Target(
        (1080, 1920),
        1920,
        60,
        (3, 180),
        4_000_000_000,
        "Instagram Help Center, 'Reels'; Meta Business Help Center, 'Instagram Reels ads specifications'",
    ),
    "instagram-post": Target(
        (1080, 1350),
        1350,
        60,
        (3, 60),
        250_000_000,
        "Meta Business Help Center, 'Instagram feed video ads specifications' (4:5, 250 MB)",
    ),
    "tiktok": Target(
        (1080, 1920),
        1920,
        60,
        (3, 600),
        287_600_000,
        "TikTok Help Center, 'Uploading videos' (287.6 MB in the iOS app, the smallest it names)",
    ),
    "youtube-shorts": Target(
        (1080, 1920),
        1920,
        60,
        (1, 180),
        256_000_000_000,
        "YouTube Help, 'Upload YouTube Shorts' and 'Recommended upload encoding settings'",
    ),
    "x": Target(
        None,
        1920,
        60,
        (0.5, 140),
        512_000_000,
        "X Help Center, 'How to share and watch videos on X' (140 s and 512 MB without Premium)",
    ),
    "mastodon": Target(
        None,
        1920,
        60,
        (0, 3600),
        99_000_000,
        "Mastodon documentation, 'MediaAttachment' and the server's media limits (99 MB by default; "
        "servers may set less)",
    ),
    "discord": Target(
        None,
        1280,
        60,
        (0, 3600),
        10_000_000,
        "Discord Support, 'File upload size limit' (10 MB without Nitro since 2025)",
    ),
}


@dataclass(frozen=True)
class FrameFit:
    """How each frame becomes a target's: crop = (x, y, w, h) of the picture kept, or pad =
    (left, top, width, height) of the padded picture; then nearest-neighbour to size; frames:
    the count written (a trim below the frames shown); repeats: whole passes written (a loop up
    to the shortest duration); background: the pad's RGB; rate: x264's maxrate in bit/s."""

    size: tuple[int, int]
    crop: tuple[int, int, int, int] | None
    pad: tuple[int, int, int, int] | None
    frames: int
    repeats: int
    background: tuple[int, int, int]
    rate: int

    def options(self) -> dict[str, str]:
        """The codec options that cap the bit rate (a one-second VBV buffer)."""
        return {"maxrate": str(self.rate), "bufsize": str(self.rate)}

    def picture(self, rgb: np.ndarray) -> np.ndarray:
        """One frame [H, W, 3] cropped or padded to the aspect, then to size (exact indexing)."""
        if self.crop is not None:
            x, y, w, h = self.crop
            rgb = rgb[y : y + h, x : x + w]
        if self.pad is not None:
            left, top, w, h = self.pad
            canvas = np.empty((h, w, 3), dtype=np.uint8)
            canvas[:] = self.background
            canvas[top : top + rgb.shape[0], left : left + rgb.shape[1]] = rgb
            rgb = canvas
        width, height = self.size
        rows = (np.arange(height) * rgb.shape[0]) // height
        cols = (np.arange(width) * rgb.shape[1]) // width
        return rgb[rows[:, None], cols[None, :]]


class FittedFrames:
    """A writer's side of a FrameFit: take() each frame's picture (None past a trim), kept
    deflated where the frames repeat, and replay() the repeats at the end."""

    def __init__(self, fit: FrameFit):
        self.fit, self.taken, self.kept = fit, 0, []

    def take(self, rgb: np.ndarray) -> np.ndarray | None:
        if self.taken >= self.fit.frames:
            return None
        self.taken += 1
        picture = np.ascontiguousarray(self.fit.picture(rgb))
        if self.fit.repeats > 1:
            self.kept.append(zlib.compress(picture.data, 1))
        return picture

    def replay(self):
        width, height = self.fit.size
        for _ in range(self.fit.repeats - 1):
            for data in self.kept:
                yield np.frombuffer(zlib.decompress(data), dtype=np.uint8).reshape(height, width, 3)


def even(value: int) -> int:
    return max(2, value - value % 2)


def target_size(target: Target, width: int, height: int, fit: str) -> tuple[int, int]:
    """The video's (width, height): the target's, or the picture's aspect within max_side
    (never enlarged), sides even (4:2:0)."""
    if target.size is not None:
        return target.size
    scale = min(1.0, target.max_side / max(width, height))
    return even(round(width * scale)), even(round(height * scale))


def frame_fit(preset, name: str, shown: int, background: tuple[int, int, int]) -> FrameFit:
    """A preset's FrameFit for target `name`: its frames (width x height), `shown` frames shown
    (after the loop), output.target_fit, output.fps; refuses (RenderError) what cannot meet the
    target, before a render."""
    target, (width, height) = TARGETS[name], preset.frame_size
    fps, how = preset.output.fps, preset.output.target_fit or "pad"
    if fps > target.fps:
        raise RenderError(
            f"{preset.name}: --target {name} takes at most {target.fps} fps, output.fps is {fps}; "
            f"set output.fps to {target.fps} or less"
        )
    out_w, out_h = target_size(target, width, height, how)
    crop = pad = None
    if out_w * height != out_h * width:  # another aspect: crop to it, or pad to it
        if how == "crop":
            w, h = (
                (width, width * out_h // out_w)
                if width * out_h < out_w * height
                else (height * out_w // out_h, height)
            )
            w, h = min(w, width), min(h, height)
            crop = ((width - w) // 2, (height - h) // 2, w, h)
        else:
            w, h = (
                (width, -(-width * out_h // out_w))
                if width * out_h > out_w * height
                else (-(-height * out_w // out_h), height)
            )
            pad = ((w - width) // 2, (h - height) // 2, w, h)
    shortest, longest = target.seconds
    frames = min(shown, math.floor(longest * fps))
    repeats = max(1, math.ceil(shortest * fps / frames)) if frames else 1
    seconds = frames * repeats / fps
    rate = min(MAX_RATE, int(target.max_bytes * 8 * HEADROOM / seconds))
    bits = rate / (out_w * out_h * fps)
    if bits < MIN_BITS_PER_PIXEL:
        most = target.max_bytes * 8 * HEADROOM / (MIN_BITS_PER_PIXEL * out_w * out_h * fps)
        raise RenderError(
            f"{preset.name}: --target {name} allows {target.max_bytes / 1e6:g} MB; {seconds:g} s of "
            f"{out_w}x{out_h} at {fps} fps would have {bits:.3f} bits a pixel (at least "
            f"{MIN_BITS_PER_PIXEL} keeps a picture): show at most {most:.1f} s (fewer frames or a "
            "lower output.fps)"
        )
    return FrameFit((out_w, out_h), crop, pad, frames, repeats, background, rate)


def describe(preset, name: str, fit: FrameFit, shown: int) -> str:
    """The note a targeted render gives (and its sidecar keeps)."""
    width, height = preset.frame_size
    how = "cropped" if fit.crop else "padded" if fit.pad else "scaled"
    length = (
        f"trimmed to {fit.frames} of {shown} frames"
        if fit.frames < shown
        else f"looped {fit.repeats} times"
        if fit.repeats > 1
        else f"{shown} frames"
    )
    return (
        f"mp4 --target {name}: {width}x{height} {how} to {fit.size[0]}x{fit.size[1]}, {length}, "
        f"at most {fit.rate / 1e6:.3g} Mbit/s for {TARGETS[name].max_bytes / 1e6:g} MB "
        f"(limits as read in {READ}: {TARGETS[name].pages})"
    )
