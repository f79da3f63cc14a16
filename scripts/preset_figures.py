"""README pictures of presets: a thumbnail of each rendered preset's PNG still.

    python3 scripts/preset_figures.py RENDERS_DIR [NAME ...]
    python3 scripts/preset_figures.py --sheet OUT.png NAME ...   # a labelled contact sheet
    python3 scripts/preset_figures.py --strip OUT.png SIDECAR.json FRAMES_DIR [N]   # frames of a run
    python3 scripts/preset_figures.py --previews OUT.png PREVIEWS_DIR NAME ...   # preview vs full

RENDERS_DIR holds `physarum render --out RENDERS_DIR` results (NAME/NAME-sSEED.png); each
thumbnail is written to benchmarks/figures/preset-NAME.png, 256 pixels on its long side.
--previews sets, for each NAME, the full render's thumbnail (benchmarks/figures/preset-NAME.png)
beside the last frame of its `physarum render NAME --preview --out PREVIEWS_DIR` GIF, both the
fitted into tiles of one size (docs/presets.md, "Previews"), a PNG of at most 256 colours when that is smaller.
--strip puts N (6) frames of a render's `--frames-dir FRAMES_DIR` side by side, evenly over the
frames that are not loop blends, each labelled with its step and the values its scheduled
parameters have there (from the render's sidecar JSON); it needs the physarum package.
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


def last_frame(gif: Path) -> Image.Image:
    """The last frame of a GIF, as RGB."""
    image = Image.open(gif)
    image.seek(image.n_frames - 1)
    return image.convert("RGB")


def smallest_png(image: Image.Image, out: Path) -> None:
    """`image` as a PNG: of at most 256 colours where that file is smaller."""
    image.save(out, optimize=True)
    full = out.stat().st_size
    image.quantize(256, dither=Image.Dither.NONE).save(out, optimize=True)
    if out.stat().st_size > full:
        image.save(out, optimize=True)


def previews(out: Path, folder: Path, names: list[str], tile: int = 200, gap: int = 8) -> None:
    """Rows of (the full render's thumbnail, the preview's last frame), each row labelled with
    the preset's name and the preview's size; each fitted into a tile (Lanczos)."""
    label = 24
    canvas = Image.new("RGB", (2 * tile + 3 * gap, len(names) * (tile + label + gap) + gap), (17, 17, 17))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=14)
    for row, name in enumerate(names):
        full = Image.open(FIGURES / f"preset-{name}.png").convert("RGB")
        gif = sorted((folder / "previews" / name).glob(f"{name}-s*.gif"))[0]
        preview = last_frame(gif)
        shown = preview.size
        y = gap + row * (tile + label + gap)
        for column, image in enumerate((full, preview)):
            image = image.copy()
            image.thumbnail((tile, tile), Image.Resampling.LANCZOS)
            x = gap + column * (tile + gap)
            canvas.paste(image, (x + (tile - image.width) // 2, y + label + (tile - image.height) // 2))
        text = f"{name}: full render | preview ({shown[0]}x{shown[1]})"
        draw.text((gap, y + label // 2), text, fill=(220, 220, 220), font=font, anchor="lm")
    smallest_png(canvas, out)


def strip(out: Path, sidecar: Path, frames_dir: Path, count: int = 6, gap: int = 4) -> None:
    """`count` frames of a render side by side, labelled with the step each shows and the values
    of the scheduled parameters there; a PNG of at most 256 colours when that is smaller."""
    import json

    from physarum.render.preset.schedule import Schedule, value_at

    data = json.loads(sidecar.read_text())
    run = data["preset"]["run"]
    warmup, steps, every = run.get("warmup", 0), run["steps"], run["steps_per_frame"]
    loop = data.get("loop") or {}
    files = sorted(frames_dir.glob("*.png"))
    # shown frame k is simulated frame first + k; a crossfade's last `blended` frames are blends
    first, pure = loop.get("first_frame", 0), len(files) - loop.get("blended", 0)
    picks = [round(i * (pure - 1) / (count - 1)) for i in range(count)]
    schedules = {
        key.rsplit(".", 1)[-1].replace("_", " "): Schedule(keys=dict(s["keyframes"]), ease=s["ease"])
        for key, s in data.get("schedules", {}).items()
    }
    label = 26
    tiles = [Image.open(files[k]).convert("RGB") for k in picks]
    width, height = tiles[0].size
    canvas = Image.new("RGB", (count * width + (count - 1) * gap, height + label), (17, 17, 17))
    draw = ImageDraw.Draw(canvas)
    font = ImageFont.load_default(size=14)
    for i, (k, tile) in enumerate(zip(picks, tiles)):
        step = warmup + min((first + k + 1) * every, steps)
        values = ", ".join(
            f"{name} {round(float(value_at(s, step, warmup + steps)), 1):g}" for name, s in schedules.items()
        )
        x = i * (width + gap)
        canvas.paste(tile, (x, 0))
        text = f"step {step}" + (f": {values}" if values else "")
        draw.text((x + width // 2, height + label // 2), text, fill=(220, 220, 220), font=font, anchor="mm")
    canvas.save(out, optimize=True)
    small = out.with_suffix(".q.png")
    canvas.quantize(256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE).save(small, optimize=True)
    if small.stat().st_size < out.stat().st_size:
        small.replace(out)
    else:
        small.unlink()
    print(out, out.stat().st_size, "bytes")


if __name__ == "__main__":
    if sys.argv[1] == "--sheet":
        sheet(Path(sys.argv[2]), sys.argv[3:], columns=3)
    elif sys.argv[1] == "--previews":
        previews(Path(sys.argv[2]), Path(sys.argv[3]), sys.argv[4:])
    elif sys.argv[1] == "--strip":
        strip(Path(sys.argv[2]), Path(sys.argv[3]), Path(sys.argv[4]), *map(int, sys.argv[5:6]))
    else:
        main(sys.argv[1], sys.argv[2:])
