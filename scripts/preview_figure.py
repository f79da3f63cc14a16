"""docs/figures/previews.png: every curated preset's full render beside its preview, in a grid.

    python scripts/preview_figure.py PREVIEWS_DIR [OUT.png] [--columns 4]

PREVIEWS_DIR holds `physarum render NAME --preview --out PREVIEWS_DIR` results
(previews/NAME/NAME-sSEED.gif) of every curated preset (presets/*.yaml); the full render is its
thumbnail docs/figures/preset-NAME.png, or NAME.png (scripts/preset_figures.py RENDERS_DIR makes
them from full renders). Each pair is the full render's still (left) and the preview's last
frame (right), both fitted into tiles of one size (Lanczos), labelled with the name and the
preview's canvas (a window's frame tiled over the full canvas first, so that both show the
pattern at the same scale: a window wraps, so its tiles join); `columns` pairs a row. A preset
without a preview or a thumbnail is left out and named on stderr (exit status 2 if none is left).

    python scripts/preview_figure.py stats OUT.json [--full] [--backend B] [--seed S] [NAME ...]

measures the structure of every curated preset's preview (or with --full, of its full render:
on the GPU host) and writes it as JSON: `structure` below, at FRACTIONS of the run's steps;
--seed S measures it with the preset's seed replaced by S (the row then names its seed).
tests/test_preview_structure.py holds the full renders' numbers and checks the previews' against
them.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont, ImageSequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))
from preset_figures import FIGURES, smallest_png  # noqa: E402  (a script beside this one)

OUT = ROOT / "docs" / "figures" / "previews.png"


def still_frame(gif: Path) -> Image.Image:
    """The GIF's frame that the render's PNG still shows, composited as shown (RGB): the last
    frame, or with ping-pong (its sidecar says so) the turning frame F - 1 of 2F - 2."""
    sidecar = gif.with_suffix(".json")
    mode = json.loads(sidecar.read_text()).get("loop", {}).get("mode") if sidecar.is_file() else None
    with Image.open(gif) as image:
        frames = [frame.convert("RGB") for frame in ImageSequence.Iterator(image)]
    return frames[len(frames) // 2 if mode == "ping-pong" else -1]


WINDOW = re.compile(
    r"(\d+)x(\d+) -> \d+x\d+, [^()]*distances (?:kept \(a window\)|/ [\d.]+ \(a window of (\d+)x(\d+)\))"
)


def window_of(gif: Path) -> tuple[int, int] | None:
    """(width, height) of the canvas whose texture a window preview shows a piece of (its
    sidecar's description says 'distances kept (a window)': the full canvas, or 'distances / 2
    (a window of 512x512)': that canvas), else None."""
    sidecar = gif.with_suffix(".json")
    text = json.loads(sidecar.read_text()).get("preset_yaml", "") if sidecar.is_file() else ""
    found = WINDOW.search(" ".join(text.split()))
    if not found:
        return None
    return (int(found[3]), int(found[4])) if found[3] else (int(found[1]), int(found[2]))


def to_scale(frame: Image.Image, full: tuple[int, int]) -> Image.Image:
    """A window's frame tiled over its full canvas (a window wraps, so its tiles join): the
    pattern at the full render's scale, as large as the full canvas."""
    tiled = Image.new("RGB", full)
    for y in range(0, full[1], frame.height):
        for x in range(0, full[0], frame.width):
            tiled.paste(frame, (x, y))
    return tiled


def pair_images(folder: Path, name: str) -> tuple[Image.Image, Image.Image, bool]:
    """(the full render's thumbnail, the preview's last frame, whether it is a window's) of a
    curated preset; a window's frame tiled to the full render's scale (to_scale)."""
    gifs = sorted((folder / "previews" / name).glob(f"{name}-s*.gif"))
    thumb = next((t for t in (FIGURES / f"preset-{name}.png", FIGURES / f"{name}.png") if t.is_file()), None)
    if not gifs or thumb is None:
        raise FileNotFoundError(
            f"{name}: no preview GIF under {folder / 'previews' / name} or no {FIGURES}/preset-{name}.png"
        )
    frame, full = still_frame(gifs[0]), window_of(gifs[0])
    return Image.open(thumb).convert("RGB"), (to_scale(frame, full) if full else frame), full is not None


def preview_size(folder: Path, name: str) -> str:
    """WxH of the preview's canvas (its sidecar's preset), or of its GIF."""
    gif = sorted((folder / "previews" / name).glob(f"{name}-s*.gif"))[0]
    sidecar = gif.with_suffix(".json")
    text = (
        " ".join(json.loads(sidecar.read_text()).get("preset_yaml", "").split()) if sidecar.is_file() else ""
    )
    found = re.search(r"-> (\d+x\d+(?:x\d+)?)", text)
    if found:
        return found[1]
    with Image.open(gif) as image:
        return f"{image.width}x{image.height}"


def figure(
    folder: Path, names: list[str], out: Path, columns: int = 4, tile: int = 150, gap: int = 6
) -> None:
    """The grid of pairs, `columns` pairs a row, on a dark ground; a PNG (256 colours if smaller)."""
    label, pair_gap = 20, 3 * gap
    rows = (len(names) + columns - 1) // columns
    pair_width = 2 * tile + gap
    width = columns * pair_width + (columns - 1) * pair_gap + 2 * gap
    canvas = Image.new("RGB", (width, rows * (tile + label + gap) + gap), (17, 17, 17))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=13)
    for i, name in enumerate(names):
        full, preview, window = pair_images(folder, name)
        size = preview_size(folder, name)
        x0 = gap + (i % columns) * (pair_width + pair_gap)
        y = gap + (i // columns) * (tile + label + gap)
        text = f"{name}: full | preview {size}" + (" window, tiled" if window else "")
        for column, image in enumerate((full, preview)):
            image = image.copy()
            image.thumbnail((tile, tile), Image.Resampling.LANCZOS)
            x = x0 + column * (tile + gap)
            canvas.paste(image, (x + (tile - image.width) // 2, y + label + (tile - image.height) // 2))
        draw.text((x0, y + label // 2), text, fill=(220, 220, 220), font=font, anchor="lm")
    out.parent.mkdir(parents=True, exist_ok=True)
    smallest_png(canvas, out)


FRACTIONS = (0.25, 0.5, 1.0)  # where in the run (of its end step, warmup included) it is measured
LIT_LEVEL = 0.25  # a cell is lit above this share of the trail's 99th percentile


def structure(trail) -> dict:
    """The structure of one trail map (2D [H, W], or 3D [Z, Y, X]; species summed before), as
    numbers that do not depend on the canvas's size or the deposit's scale:

    - wavelength: the dominant wavelength of the trail (render/tools/stats.py: the ring of most
      power in its spectrum) as a fraction of the short side; in 3D the median over z slices;
    - lit: the share of cells above LIT_LEVEL of the trail's 99th percentile (its maximum where
      that is 0): how much of the picture is drawn;
    - r50, r90: the radius from the canvas's centre holding 50% and 90% of the trail, as a
      fraction of the short side: where an expanding (or contracting) front is;
    - reach: the radius holding 90% of the lit cells, as a fraction of the short side: how far
      the drawn shape reaches (bloom's petals, which hold little of its trail)."""
    import torch

    from physarum.render.tools.stats import SpectrumRings

    trail = torch.as_tensor(trail).to(torch.float64)
    short = min(trail.shape[-2:])
    slices = trail if trail.dim() == 3 else trail[None]
    rings = SpectrumRings(slices.shape[-2], slices.shape[-1], slices.device)
    waves = rings.dominant(slices) / short
    waves = waves[~torch.isnan(waves)]
    wavelength = float(waves.median()) if waves.numel() else math.nan
    flat = trail.reshape(-1)
    level = float(torch.quantile(flat[:: max(1, flat.numel() // 4_000_000)], 0.99))
    level = level if level > 0 else float(flat.max())
    lit = float((flat > LIT_LEVEL * level).to(torch.float64).mean()) if level > 0 else 0.0
    axes = [
        (torch.arange(n, dtype=torch.float64, device=trail.device) + 0.5 - n / 2) / short for n in trail.shape
    ]
    grids = torch.meshgrid(*axes, indexing="ij")
    radius = torch.sqrt(sum(g * g for g in grids)).reshape(-1)
    order = torch.argsort(radius)
    mass = torch.cumsum(flat[order], 0)
    total = float(mass[-1]) if mass.numel() else 0.0
    fronts = {}
    for share in (50, 90):
        wanted = torch.tensor([total * share / 100], dtype=torch.float64, device=trail.device)
        at = int(torch.searchsorted(mass, wanted)[0])
        fronts[f"r{share}"] = float(radius[order[min(at, len(order) - 1)]]) if total > 0 else math.nan
    lit_radius = radius[flat > LIT_LEVEL * level] if level > 0 else radius[:0]
    reach = (
        float(torch.quantile(lit_radius[:: max(1, lit_radius.numel() // 4_000_000)], 0.9))
        if lit_radius.numel()
        else math.nan
    )
    return {"wavelength": wavelength, "lit": lit, **fronts, "reach": reach}


def measure(preset, backend: str = "torch", device: str = "cpu") -> dict:
    """The preset's structure (`structure`) at each of FRACTIONS of its end step, its
    simulation alone (no colour, no files), keyed by the fraction; and the seconds it took."""
    import torch

    from physarum.render.sim.simulation import make_simulation

    start = time.perf_counter()
    simulation = make_simulation(preset, backend, torch.device(device))
    rows, done = {}, 0
    for fraction in FRACTIONS:
        step = max(1, round(fraction * preset.end_step))
        simulation.advance(step - done)
        done = step
        trail = simulation.trail
        trail = trail.sum(dim=0) if preset.dims == 2 else trail[0]
        rows[str(fraction)] = structure(trail)
    if device != "cpu":
        torch.cuda.synchronize()
    return {"steps": preset.end_step, "seconds": round(time.perf_counter() - start, 2), "at": rows}


def preview_of(preset):
    """The preset `physarum render --preview` renders (render/cli/arguments.py: reduction)."""
    from physarum.render.cli.arguments import reduction

    return reduction(argparse.Namespace(preview=True, reduce=None), preset)[0]


def seed_number(text: str) -> int:
    """A --seed: a whole number 0 to 2**32 - 1 (a preset's seed), else argparse's usage error."""
    if not text.isdigit() or int(text) > 2**32 - 1:
        raise argparse.ArgumentTypeError(f"{text!r} is no seed: a whole number 0 to {2**32 - 1}")
    return int(text)


def stats(argv: list[str]) -> int:
    """The `stats` command (the module's doc): JSON of each preset's structure."""
    import torch

    from physarum.render.preset.catalog import preset_files
    from physarum.render.preset.load import load_preset

    parser = argparse.ArgumentParser(prog="preview_figure.py stats")
    parser.add_argument("out", type=Path)
    parser.add_argument("names", nargs="*")
    parser.add_argument("--full", action="store_true", help="the full renders (else the previews)")
    parser.add_argument("--backend", default="torch")
    parser.add_argument("--reduce", type=int, default=None, help="the preset reduced by K instead")
    parser.add_argument("--seed", type=seed_number, default=None, help="the preset's seed replaced by S")
    args = parser.parse_intermixed_args(argv)  # names before or after the options
    device = "cuda" if torch.cuda.is_available() else "cpu"
    results = json.loads(args.out.read_text()) if args.out.is_file() else {}
    paths = {path.stem: path for path in preset_files()}
    unknown = [name for name in args.names if name not in paths]
    if unknown:
        parser.error(f"no curated preset {', '.join(unknown)}: one of {', '.join(sorted(paths))}")
    for name in args.names or list(paths):
        path = paths[name]
        preset = load_preset(path, [] if args.seed is None else [f"seed={args.seed}"])
        if args.reduce:
            from fractions import Fraction

            from physarum.render.preset.reduce import reduce_preset

            preset = reduce_preset(preset, Fraction(1, args.reduce), "reduce")[0]
        elif not args.full:
            preset = preview_of(preset)
        try:
            row = measure(preset, args.backend, device)
        except Exception as error:  # a backend that cannot run it: the reference then
            print(f"{name}: {args.backend}: {error!r}; torch instead", flush=True)
            row = measure(preset, "torch", device)
        row["canvas"] = [preset.canvas.width, preset.canvas.height] + (
            [preset.canvas.depth] if preset.dims == 3 else []
        )
        if args.seed is not None:
            row["seed"] = preset.seed
        results[name] = row
        print(name, json.dumps(row), flush=True)
        args.out.write_text(json.dumps(results, indent=1) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["stats"]:
        return stats(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=Path, help="the --preview --out folder")
    parser.add_argument("out", type=Path, nargs="?", default=OUT)
    parser.add_argument("--columns", type=int, default=4)
    args = parser.parse_args(argv)
    names = []
    for name in sorted(p.stem for p in (ROOT / "presets").glob("*.yaml")):
        try:
            pair_images(args.folder, name)
            names.append(name)
        except FileNotFoundError as error:
            print(f"left out: {error}", file=sys.stderr)
    if not names:
        return 2
    figure(args.folder, names, args.out, args.columns)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
