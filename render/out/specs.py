"""A render's outputs, from its preset: their paths, each format's spec (render/formats/), and
the checks that refuse, before anything is simulated, what a format cannot hold: each format's
own limits and a GIF budget below the smallest GIF the preset can make, or one that would leave
too few frames or pixels. Nothing here imports torch.
"""

from __future__ import annotations

from pathlib import Path

from ..base import lazy
from ..base.errors import RenderError
from ..formats.alpha import check_alpha, reads
from ..formats.contract import Shared, Spec
from ..formats.frames_dir import FramesDirSpec
from ..formats.gif_budget import minimum_bytes, reduced_bytes
from ..formats.gif_file import (
    LEVELS,
    PRODUCT_LEVELS,
    Digits,
    Reduction,
    kept_frames,
    preview_size,
    reduced_size,
)
from ..formats.registry import FORMATS
from ..formats.still import StillSpec, check_still, host_available, still_paths, written_formats
from ..formats.targets import TrimmedRun, describe, frame_fit, trimmed_run
from ..preset import Preset
from ..preset.audio import loop_tempo
from ..preset.output_sections import bar_frames
from ..preset.provenance import embedded_text

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")

# the least a GIF budget may leave: frames kept and pixels on the GIF's short side (or all of
# them, where the GIF has fewer)
MIN_GIF_FRAMES = 8
MIN_GIF_SIDE = 64
# what the floor's frames are assumed to take at least, beyond a frame of one colour: a budget's
# choice is made from the frames, unknown before a render, so the refusal assumes half a bit a
# pixel (quickstart's frames take about 3.6 bits a pixel at 16 levels)
FLOOR_BITS_PER_PIXEL = 0.5


def output_stem(preset: Preset) -> str:
    """The name every output file of a preset starts with: <name>-s<seed>."""
    return f"{preset.name}-s{preset.seed}"


def output_paths(preset: Preset, out_dir: Path) -> dict[str, Path]:
    """Each output's path by format (OUT/<name>/<name>-s<seed>.<fmt>), then with output.still
    each still file written by its key ("still.png", "still.tiff", "still.exr":
    OUT/<name>/<name>-s<seed>-still.<fmt>; formats/still.py), then the sidecar's ("json")."""
    folder = Path(out_dir) / preset.name
    paths = {fmt: folder / f"{output_stem(preset)}.{fmt}" for fmt in preset.output.formats}
    paths.update(still_outputs(preset, folder))
    paths["json"] = folder / f"{output_stem(preset)}.json"
    return paths


def still_outputs(preset: Preset, folder: Path) -> dict[str, Path]:
    """The print still's files a render of `preset` writes into `folder`, by key (none without
    output.still; no EXR without a look: formats/still.py, written_formats)."""
    still = preset.output.still
    if still is None:
        return {}
    return still_paths(folder, output_stem(preset), written_formats(preset, still.formats))


def gif_digits(preset: Preset) -> tuple[int, int]:
    """(base, count) of a preset's GIF indices: one digit in base 256, or one per species in
    base PRODUCT_LEVELS[S] (render/formats/gif_file.py)."""
    if preset.species is None:
        return 256, 1
    return PRODUCT_LEVELS[len(preset.species)], len(preset.species)


def gif_size(preset: Preset) -> tuple[int, int]:
    """The GIF's (width, height): the canvas at output.gif_scale."""
    return preview_size(*preset.frame_size, preset.output.gif_scale)


def output_specs(
    preset: Preset,
    paths: dict[str, Path],
    palette: np.ndarray,
    frames_dir: Path | None = None,
    jobs: int = 1,
) -> list[Spec]:
    """The spec of each output of a preset (output.formats, then the frames folder with
    frames_dir); palette [256, 3] uint8: the first frame's, the GIF's global table. Every output
    carries embedded_text(preset), dumped once for all of them. jobs: the GIFs written at once
    (a batch's), which share the cores that compress them."""
    text = embedded_text(preset)
    shared = Shared(text, palette, gif_size(preset), gif_digits(preset), jobs, handed_frames(preset))
    specs = [FORMATS[fmt].make_spec(preset, paths[fmt], shared) for fmt in preset.output.formats]
    still = preset.output.still
    formats = () if still is None else tuple(written_formats(preset, still.formats))
    if formats:  # exr alone without a look writes nothing
        folder = paths[preset.output.formats[0]].parent
        specs.append(StillSpec(folder, output_stem(preset), text, still.scale, still.dpi, formats))
    if frames_dir is not None:
        alpha = preset.output.alpha
        specs.append(FramesDirSpec(Path(frames_dir), output_stem(preset), text, alpha, reads(alpha)))
    return specs


def check_outputs(preset: Preset) -> list[str]:
    """Refuse (RenderError) what a format of the preset cannot hold; return notes on what was
    adjusted. Each format's own check, output.alpha's (formats/alpha.py), then a GIF budget
    against the smallest GIF."""
    notes = [note for fmt in preset.output.formats for note in FORMATS[fmt].check(preset)]
    notes += check_alpha(preset)
    notes += check_loop_bars(preset)
    notes += check_target(preset)
    notes += check_still(preset, host_available())
    if "gif" in preset.output.formats and preset.output.gif_max_bytes is not None:
        check_gif_budget(preset)
    return notes


def check_gif_budget(preset: Preset) -> None:
    """Refuse, before rendering, a GIF budget below what any GIF of the preset takes
    (gif_budget.minimum_bytes: known from its size, frames, palettes and embedded text), with a
    loop the fewest frames it can show (loops.shown_frames); then one that would leave fewer
    than MIN_GIF_FRAMES frames or a short side under MIN_GIF_SIDE pixels (floor_reduction),
    naming the smallest budget that keeps them: gif_budget.reduced_bytes of the floor and
    FLOOR_BITS_PER_PIXEL of its frames' pixels. A 3D preset's frames each carry a local colour
    table (their own palettes, made as they render): both bounds count one a frame."""
    from ..look.colour import make_colourist  # start-up: torch, for a render only
    from ..look.loops import shown_frames  # start-up: torch, for a render only

    out = preset.output
    colourist = make_colourist(preset)
    palettes = [colourist.table(number).tobytes() for number in range(shown_frames(preset))]
    digits, comment = Digits(*gif_digits(preset)), embedded_text(preset)
    local = preset.dims == 3  # every volume frame has its own palette: a local table each
    least = minimum_bytes(*gif_size(preset), palettes, digits, out.loop, comment, local)
    if out.gif_max_bytes < least:
        raise RenderError(
            f"{preset.name}: output.gif_max_bytes (--gif-max-bytes) is {out.gif_max_bytes} bytes; "
            f"no GIF of this preset fits in fewer than {least} bytes (header, embedded preset and "
            f"the smallest frames); allow at least {least}, or leave gif out of output.formats"
        )
    floor = floor_reduction(*gif_size(preset), len(palettes), digits)
    width, height = reduced_size(*gif_size(preset), floor.factor)
    kept = len(kept_frames(len(palettes), floor.stride))
    needed = reduced_bytes(*gif_size(preset), palettes, out.loop, comment, floor, local)
    needed += kept * int(width * height * FLOOR_BITS_PER_PIXEL / 8)
    needed = -(-needed // 100) * 100  # up to a round number: the budget's own digits are embedded
    if out.gif_max_bytes < needed:
        frames = min(MIN_GIF_FRAMES, len(palettes))
        side = min(MIN_GIF_SIDE, *gif_size(preset))
        raise RenderError(
            f"{preset.name}: output.gif_max_bytes (--gif-max-bytes) is {out.gif_max_bytes} bytes, "
            f"too small for a GIF of {frames} frames and {side} pixels on its short side (a budget "
            f"keeps at least {MIN_GIF_FRAMES} frames and {MIN_GIF_SIDE} pixels, or all the GIF "
            f"has); allow at least {needed} bytes, or leave gif out of output.formats"
        )


def floor_reduction(width: int, height: int, frames: int, digits: Digits) -> Reduction:
    """The most reduced GIF a budget may leave: the fewest levels a budget chooses
    (gif_budget.candidates), the largest area downscale that keeps min(MIN_GIF_SIDE, short side)
    pixels on the short side, the largest stride that keeps min(MIN_GIF_FRAMES, frames) frames."""
    short = min(width, height)
    side = min(MIN_GIF_SIDE, short)
    factor = max(d for d in range(1, short + 1) if short // d >= side)
    keep = min(MIN_GIF_FRAMES, frames)
    stride = max(s for s in range(1, frames + 1) if len(kept_frames(frames, s)) >= keep)
    return Reduction(LEVELS[-1] if digits.count == 1 else 256, factor, stride)


def check_loop_bars(preset: Preset) -> list[str]:
    """With output.loop_bars and output.bpm: refuse a render whose outputs do not show the bars'
    whole frames (bar_frames: the exact length rounded to the nearest frame), naming the run.steps
    that would; note the rounding. A ping-pong loop shows 2F - 2 frames; closest is refused (the
    length of the loop it finds is known only as it runs)."""
    out = preset.output
    if out.loop_bars is None:
        return []
    from ..look.loops import shown_frames  # start-up: torch, for a render only

    bpm, whose = loop_tempo(preset)
    frames, exact = bar_frames(out.loop_bars, bpm, out.fps)
    mode = preset.loop[0]
    bars = f"{out.loop_bars} bars at {float(bpm):g} BPM{whose} and {out.fps} fps"
    if mode == "closest":
        raise RenderError(
            f"{preset.name}: output.loop_bars needs a loop of a known length; closest finds its own "
            "(use crossfade, ping-pong or none)"
        )
    shown = shown_frames(preset)
    total = 2 * shown - 2 if mode == "ping-pong" else shown
    if total != frames:
        spf, warm = preset.run.steps_per_frame, preset.run.warmup
        if mode == "ping-pong":
            hint = (
                "; a ping-pong loop shows an even count (2F - 2): choose other bars, bpm or fps"
                if frames % 2
                else f"; run.steps: {(frames + 2) // 2 * spf} shows them"
            )
        elif mode == "crossfade":
            hint = f"; run.steps: {(frames + preset.loop[1]) * spf} shows them (with its blend)"
        else:
            hint = f"; run.steps: {frames * spf} shows them"
        raise RenderError(
            f"{preset.name}: {bars} are {frames} frames (exactly {float(exact):.4g}), the render "
            f"shows {total}{hint}" + (f" (warmup {warm} not counted)" if warm else "")
        )
    if exact == frames:
        return [f"loop: {bars} = {frames} frames exactly"]
    drift = (frames - exact) / out.fps * 1000
    return [
        f"loop: {bars} = {float(exact):.4f} frames, rounded to {frames} "
        f"({float(drift):+.2f} ms a loop against the beat)"
    ]


def handed_frames(preset: Preset) -> int:
    """The frames a video output is handed: those shown (loops.shown_frames), and a ping-pong
    loop's replays (2F - 2)."""
    from ..look.loops import shown_frames  # start-up: torch, for a render only

    shown = shown_frames(preset)
    return max(1, 2 * shown - 2) if preset.loop[0] == "ping-pong" else shown


def render_trim(preset: Preset, beside: tuple[str, ...] = (), sinks=()) -> TrimmedRun | None:
    """How a platform target's trim bounds a render of `preset` (formats/targets.py trimmed_run,
    its MP4 handed handed_frames); beside and sinks as trimmed_run's. The one way the runner,
    the estimate and the live page ask it."""
    return trimmed_run(preset, handed_frames(preset), beside, sinks)


def check_target(preset: Preset) -> list[str]:
    """With output.target: refuse (RenderError) what cannot meet the platform's limits
    (targets.frame_fit) or a render without an MP4; note how the MP4 is fitted."""
    name = preset.output.target
    if name is None:
        return []
    if "mp4" not in preset.output.formats:
        raise RenderError(f"{preset.name}: --target {name} fits the MP4; add mp4 to output.formats")
    if preset.loop[0] == "closest":
        raise RenderError(
            f"{preset.name}: --target {name} needs the frames' count before the render; closest finds "
            "its loop's length as it runs (use crossfade, ping-pong or none)"
        )
    shown = handed_frames(preset)
    return [describe(preset, name, frame_fit(preset, name, shown, (0, 0, 0)), shown)]
