"""README pictures of presets: a thumbnail of each rendered preset's PNG still.

    python3 scripts/preset_figures.py RENDERS_DIR [NAME ...]
    python3 scripts/preset_figures.py --sheet OUT.png NAME ...   # a labelled contact sheet

RENDERS_DIR holds `physarum render --out RENDERS_DIR` results (NAME/NAME-sSEED.png); each
thumbnail is written to benchmarks/figures/preset-NAME.png, 256 pixels on its long side.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

FIGURES = Path(__file__).resolve().parent.parent / "benchmarks" / "figures"
LONG_SIDE = 256


def thumbnail(still: Path, out: Path) -> None:
    image = Image.open(still).convert("RGB")
    scale = LONG_SIDE / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    image.resize(size, Image.Resampling.LANCZOS).save(out, optimize=True)


def main(folder: str, names: list[str]) -> None:
    root = Path(folder)
    names = names or sorted(p.name for p in root.iterdir() if p.is_dir())
    for name in names:
        stills = sorted((root / name).glob(f"{name}-s*.png"))
        if not stills:
            print(f"{name}: no PNG still in {root / name}", file=sys.stderr)
            continue
        out = FIGURES / f"preset-{name}.png"
        thumbnail(stills[0], out)
        print(out)


def sheet(out: Path, names: list[str], columns: int = 4, tile: int = 256, gap: int = 8) -> None:
    """The thumbnails of `names` in a grid on a dark ground, each labelled with its name."""
    label = 30
    rows = (len(names) + columns - 1) // columns
    width = min(columns, len(names)) * (tile + gap) + gap
    canvas = Image.new("RGB", (width, rows * (tile + label + gap) + gap), (17, 17, 17))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=16)
    for i, name in enumerate(names):
        image = Image.open(FIGURES / f"preset-{name}.png").convert("RGB")
        image.thumbnail((tile, tile))
        x = gap + (i % columns) * (tile + gap)
        y = gap + (i // columns) * (tile + label + gap)
        canvas.paste(image, (x + (tile - image.width) // 2, y + (tile - image.height) // 2))
        draw.text((x + tile // 2, y + tile + label // 2), name, fill=(220, 220, 220), font=font, anchor="mm")
    canvas.save(out, optimize=True)


if __name__ == "__main__":
    if sys.argv[1] == "--sheet":
        sheet(Path(sys.argv[2]), sys.argv[3:], columns=3)
    else:
        main(sys.argv[1], sys.argv[2:])
