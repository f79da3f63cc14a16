"""README pictures of presets: a thumbnail of each rendered preset's PNG still.

    python3 scripts/preset_figures.py RENDERS_DIR [NAME ...]

RENDERS_DIR holds `physarum render --out RENDERS_DIR` results (NAME/NAME-sSEED.png); each
thumbnail is written to benchmarks/figures/preset-NAME.png, 256 pixels on its long side.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PIL import Image

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


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
