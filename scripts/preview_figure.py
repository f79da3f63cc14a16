"""docs/figures/previews.png: every curated preset's full render beside its preview, in a grid.

    python scripts/preview_figure.py PREVIEWS_DIR [OUT.png] [--columns 4]

PREVIEWS_DIR holds `physarum render NAME --preview --out PREVIEWS_DIR` results
(previews/NAME/NAME-sSEED.gif) of every curated preset (presets/*.yaml); the full render is its
thumbnail benchmarks/figures/preset-NAME.png, or NAME.png (scripts/preset_figures.py RENDERS_DIR
makes them from full renders). Each pair is the full render's still (left) and the preview's last frame
(right), both fitted into tiles of one size (Lanczos), labelled with the name and the preview's
size; `columns` pairs a row. A preset without a preview or a thumbnail is left out and named on
stderr (exit status 2 if none is left).
"""

from __future__ import annotations

import argparse
import json
import sys
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


def pair_images(folder: Path, name: str) -> tuple[Image.Image, Image.Image]:
    """(the full render's thumbnail, the preview's last frame) of a curated preset."""
    gifs = sorted((folder / "previews" / name).glob(f"{name}-s*.gif"))
    thumb = next((t for t in (FIGURES / f"preset-{name}.png", FIGURES / f"{name}.png") if t.is_file()), None)
    if not gifs or thumb is None:
        raise FileNotFoundError(
            f"{name}: no preview GIF under {folder / 'previews' / name} or no {FIGURES}/preset-{name}.png"
        )
    return Image.open(thumb).convert("RGB"), still_frame(gifs[0])


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
        full, preview = pair_images(folder, name)
        x0 = gap + (i % columns) * (pair_width + pair_gap)
        y = gap + (i // columns) * (tile + label + gap)
        text = f"{name}: full | preview {preview.width}x{preview.height}"
        for column, image in enumerate((full, preview)):
            image = image.copy()
            image.thumbnail((tile, tile), Image.Resampling.LANCZOS)
            x = x0 + column * (tile + gap)
            canvas.paste(image, (x + (tile - image.width) // 2, y + label + (tile - image.height) // 2))
        draw.text((x0, y + label // 2), text, fill=(220, 220, 220), font=font, anchor="lm")
    out.parent.mkdir(parents=True, exist_ok=True)
    smallest_png(canvas, out)


def main(argv: list[str] | None = None) -> int:
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
