"""Platform targets (output.target, `render --target NAME`, `render --gif-target NAME`): the one
table of where a file goes and what each place takes (PLATFORMS: a video's frame size or largest
side, aspect, frame rate, durations, codec and file size; a GIF's byte budget; when the limits
were read), and how the MP4 is fitted to it: cropped or padded to the aspect
(output.target_fit), scaled to the size by exact nearest-neighbour indexing, looped in whole
loops up to the shortest duration or trimmed to the longest, its bit rate capped (x264's VBV) to
stay under the file size; where the MP4 is trimmed and nothing else reads past its kept frames,
the render simulates only the frames they come from (trimmed_run). The render refuses before
work what cannot meet a target (too fast a frame rate, another codec, too few bits a pixel for
the budget) and says why. `--target NAME`
sets the platform's GIF budget too, where it has one (render/cli/arguments.py); TARGETS (the
rows with a video) and GIF_TARGETS (the rows with a GIF budget: gif_targets.py re-exports it) are
views of the table.

The limits are the platforms' published ones as the author knew them (READ), from the help
pages each entry names: not fetched, and platforms change them; where a platform gives several
(app, web, ads), the smallest is taken. Sizes in decimal megabytes (the smaller reading of
"MB"). Not a format (no FORMAT): the MP4 reads it. This module imports nothing heavy at its top:
`physarum --help` lists the table without the preset schema.
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
CODECS = {
    None: "h264",
    "browser": "h264",
    "browser-sharp": "h264",
    "browser-fast": "h264",
    "master": "h264 4:4:4",
    "hevc": "hevc",
    "av1": "av1",
}


@dataclass(frozen=True)
class Platform:
    """A place a file goes. Its video (None where it takes none: max_side None): size (width,
    height) of its frames, or None (the picture's own aspect within max_side pixels a side,
    never enlarged); the highest frame rate; the shortest and longest durations (seconds); the
    codec its page names (an MP4 of another output.mp4 is refused); the largest file (bytes).
    gif_bytes: its GIF budget (None: no GIF). read: when the limits were read; pages: where they
    are published."""

    max_side: int | None
    size: tuple[int, int] | None = None
    fps: int | None = None
    seconds: tuple[float, float] | None = None
    codec: str | None = None
    max_bytes: int | None = None
    gif_bytes: int | None = None
    read: str = READ
    pages: str = ""

    @property
    def aspect(self) -> str:
        """The frame's aspect as the table says it: 9:16, or 'the picture's'."""
        if self.size is None:
            return "the picture's"
        width, height = self.size
        common = math.gcd(width, height)
        return f"{width // common}:{height // common}"


Target = Platform  # the name the MP4's fitting has used


def video(size, max_side: int, seconds, max_bytes: int, pages: str, gif_bytes: int | None = None) -> Platform:
    """A platform's row with a video: H.264 at up to 60 fps (every page names both)."""
    return Platform(max_side, size, 60, seconds, "h264", max_bytes, gif_bytes, READ, pages)


def gif_only(gif_bytes: int, pages: str) -> Platform:
    """A row with a GIF budget alone."""
    return Platform(None, gif_bytes=gif_bytes, pages=pages)


PLATFORMS = {
    "instagram-reel": video(
        (1080, 1920),
        1920,
        (3, 180),
        4_000_000_000,
        "Instagram Help Center, 'Reels'; Meta Business Help Center, 'Instagram Reels ads specifications'",
    ),
    "instagram-post": video(
        (1080, 1350),
        1350,
        (3, 60),
        250_000_000,
        "Meta Business Help Center, 'Instagram feed video ads specifications' (4:5, 250 MB)",
    ),
    "tiktok": video(
        (1080, 1920),
        1920,
        (3, 600),
        287_600_000,
        "TikTok Help Center, 'Uploading videos' (287.6 MB in the iOS app, the smallest it names)",
    ),
    "youtube-shorts": video(
        (1080, 1920),
        1920,
        (1, 180),
        256_000_000_000,
        "YouTube Help, 'Upload YouTube Shorts' and 'Recommended upload encoding settings'",
    ),
    "x": video(
        None,
        1920,
        (0.5, 140),
        512_000_000,
        "X Help Center, 'How to share and watch videos on X' (140 s and 512 MB without Premium); "
        "GIFs up to 15 MB from the web, 5 MB from the apps (X's photo and GIF help page)",
        gif_bytes=15_000_000,
    ),
    "mastodon": video(
        None,
        1920,
        (0, 3600),
        99_000_000,
        "Mastodon documentation, 'MediaAttachment' and the server's media limits (99 MB by default; "
        "servers may set less); a GIF is an image there (16 MB by default), played as a video",
        gif_bytes=16_000_000,
    ),
    "discord": video(
        None,
        1280,
        (0, 3600),
        10_000_000,
        "Discord Support, 'File upload size limit' (10 MB a file without Nitro, GIFs included)",
        gif_bytes=10_000_000,
    ),
    "slack": gif_only(
        5_000_000, "Slack: about 5 MB for a GIF that plays inline (issue 16's figure, not checked)"
    ),
    "telegram": gif_only(5_000_000, "Telegram: about 5 MB (issue 16's figure, not checked)"),
    "phone": gif_only(5_000_000, "X's mobile apps and messaging apps on phones: about 5 MB"),
    "preview": gif_only(2_000_000, "--preview's budget: small and fast to load (no platform)"),
}
TARGETS = {name: row for name, row in PLATFORMS.items() if row.max_side is not None}
# the GIF budgets in the order `--gif-target` has listed them since it came (x first)
GIF_TARGETS = {
    name: PLATFORMS[name].gif_bytes
    for name in ("x", "discord", "slack", "telegram", "phone", "preview", "mastodon")
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
    codec = CODECS[preset.output.mp4]
    if codec != target.codec:
        raise RenderError(
            f"{preset.name}: --target {name} takes {target.codec.upper()} (the codec its page names), "
            f"output.mp4 is {preset.output.mp4} ({codec.upper()}); leave output.mp4 unset or set browser"
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


def simulated_frames(preset, kept: int) -> int:
    """The simulated frames (from the first, after the warmup) that the first `kept` frames
    handed to the outputs come from (render/look/loops.py TrailLoop): a crossfade loop keeps its
    first N trail maps unshown and shows frame N next, so N + kept; a ping-pong loop hands its
    simulated frames first and replays them after, and no loop hands each as simulated: kept.
    At most the preset's frames."""
    mode, count = preset.loop
    return min(preset.frames, kept + (count if mode == "crossfade" else 0))


def read_past_trim(preset) -> list[str]:
    """What a render of `preset` writes besides the MP4 that reads frames or steps past a
    target's trim: its other formats (each shows every frame, the PNG the last), output.still
    (the last frame), output.fields, output.volume and checkpoint (their steps)."""
    sections = {
        "output.still": preset.output.still,
        "output.fields": preset.output.fields,
        "output.volume": preset.output.volume,
        "checkpoint": preset.checkpoint,
    }
    others = [fmt for fmt in preset.output.formats if fmt != "mp4"]
    return others + [name for name, section in sections.items() if section is not None]


@dataclass(frozen=True)
class TrimmedRun:
    """A render whose MP4 a target trims: of the `handed` frames the MP4 keeps the first `kept`,
    which come from the first `needed` simulated frames (simulated_frames); `readers`: what
    else reads past them (read_past_trim, and the run's own: --frames-dir, --stats, ...)."""

    name: str
    handed: int
    kept: int
    needed: int
    readers: tuple[str, ...]

    @property
    def frames(self) -> int | None:
        """The frames this render needs simulated: `needed` where nothing reads past them, else
        None (every frame)."""
        return None if self.readers else self.needed

    def note(self, preset, simulated: int) -> str:
        """What was simulated, for the render's notes and its sidecar: `simulated` frames of the
        preset's (the batch's most, where several simulations run as one)."""
        keeps = f"mp4 --target {self.name} keeps {self.kept} of {self.handed} frames"
        if simulated >= preset.frames:
            why = ", ".join(self.readers) or "the batch's other simulations"
            return (
                f"simulated all {preset.frames} frames: {keeps}, from the first {self.needed} "
                f"simulated, and {why} read past them (an MP4 alone simulates {self.needed})"
            )
        run = preset.run
        step = run.warmup + min(simulated * run.steps_per_frame, run.steps)
        return (
            f"simulated {simulated} of {preset.frames} frames, to step {step} of {preset.end_step}: "
            f"{keeps} and nothing else reads past them"
        )


def trimmed_run(preset, handed: int, beside: tuple[str, ...] = (), sinks=()) -> TrimmedRun | None:
    """With output.target: how its trim of the MP4 bounds the run, the MP4 handed `handed`
    frames (out/specs.py handed_frames); beside: what the render reads besides the preset's
    outputs; sinks: the caller's sinks (out/sinks.py), read past the trim unless each declares
    `reads_frames = False` (a progress count: it reads no array of a frame and is handed the
    frames the render makes, fewer where it trims). None where the kept frames need every
    simulated frame (no trim, a ping-pong loop's replays kept), the preset has no target, or its
    loop is closest (its length found as it runs: a target refuses it)."""
    name = preset.output.target
    if name is None or preset.loop[0] == "closest":
        return None
    kept = frame_fit(preset, name, handed, (0, 0, 0)).frames
    needed = simulated_frames(preset, kept)
    if needed >= preset.frames:  # no trim, or one a ping-pong's replay reaches back past
        return None
    reading = any(getattr(sink, "reads_frames", True) for sink in sinks)
    readers = tuple(read_past_trim(preset)) + tuple(beside) + (("the caller's sinks",) if reading else ())
    return TrimmedRun(name, handed, kept, needed, readers)


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
