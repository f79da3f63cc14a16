"""A render's outputs, from its preset: their paths, each format's spec (render/formats/), and
the checks that refuse, before anything is simulated, what a format cannot hold: each format's
own limits and a GIF budget below the smallest GIF the preset can make.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from physarum.render.base.errors import RenderError
from physarum.render.formats.contract import Shared, Spec
from physarum.render.formats.frames_dir import FramesDirSpec
from physarum.render.formats.gif_budget import minimum_bytes
from physarum.render.formats.gif_file import Digits
from physarum.render.formats.registry import FORMATS
from physarum.render.look.colour import PRODUCT_LEVELS, make_colourist, preview_size
from physarum.render.look.loops import shown_frames
from physarum.render.preset import Preset
from physarum.render.preset.provenance import embedded_text


def output_stem(preset: Preset) -> str:
    """The name every output file of a preset starts with: <name>-s<seed>."""
    return f"{preset.name}-s{preset.seed}"


def output_paths(preset: Preset, out_dir: Path) -> dict[str, Path]:
    """Each output's path by format, and the sidecar's ("json"): OUT/<name>/<name>-s<seed>.<fmt>."""
    folder = Path(out_dir) / preset.name
    return {fmt: folder / f"{output_stem(preset)}.{fmt}" for fmt in (*preset.output.formats, "json")}


def gif_digits(preset: Preset) -> tuple[int, int]:
    """(base, count) of a preset's GIF indices: one digit in base 256, or one per species in
    base PRODUCT_LEVELS[S] (render/look/colour.py)."""
    if preset.species is None:
        return 256, 1
    return PRODUCT_LEVELS[len(preset.species)], len(preset.species)


def gif_size(preset: Preset) -> tuple[int, int]:
    """The GIF's (width, height): the canvas at output.gif_scale."""
    return preview_size(preset.canvas.width, preset.canvas.height, preset.output.gif_scale)


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
    shared = Shared(text, palette, gif_size(preset), gif_digits(preset), jobs)
    specs = [FORMATS[fmt].make_spec(preset, paths[fmt], shared) for fmt in preset.output.formats]
    if frames_dir is not None:
        specs.append(FramesDirSpec(Path(frames_dir), output_stem(preset), text))
    return specs


def check_outputs(preset: Preset) -> list[str]:
    """Refuse (RenderError) what a format of the preset cannot hold; return notes on what was
    adjusted. Each format's own check, then a GIF budget against the smallest GIF."""
    notes = [note for fmt in preset.output.formats for note in FORMATS[fmt].check(preset)]
    if "gif" in preset.output.formats and preset.output.gif_max_bytes is not None:
        check_gif_budget(preset)
    return notes


def check_gif_budget(preset: Preset) -> None:
    """Refuse, before rendering, a GIF budget below what any GIF of the preset takes
    (gif_budget.minimum_bytes: known from its size, frames, palettes and embedded text), with a
    loop the fewest frames it can show (loops.shown_frames)."""
    out = preset.output
    colourist = make_colourist(preset)
    palettes = [colourist.table(number).tobytes() for number in range(shown_frames(preset))]
    least = minimum_bytes(
        *gif_size(preset), palettes, Digits(*gif_digits(preset)), out.loop, embedded_text(preset)
    )
    if out.gif_max_bytes < least:
        raise RenderError(
            f"{preset.name}: output.gif_max_bytes (--gif-max-bytes) is {out.gif_max_bytes} bytes; "
            f"no GIF of this preset fits in fewer than {least} bytes (header, embedded preset and "
            f"the smallest frames); allow at least {least}, or leave gif out of output.formats"
        )
