"""The contact sheet of a sweep: contact.png, every job's last frame in a grid, labelled with its
name and parameter values. The frames are read from the sweep's folder or its store (object
storage: base/storage.py), and the sheet is written there whole. A transparent still (an RGBA
PNG of output.alpha) is shown over a grey checkerboard, composited in integers (straight or
premultiplied, as the job's preset says), so the sheet's bytes repeat; an opaque one as it is."""

from __future__ import annotations

import io
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from ..base import lazy
from ..base.storage import LocalStore, Store
from .labels import format_value
from .manifest import local_path

TILE = 160  # contact-sheet tile side for the picture, pixels
TILE_SMALL = 96  # ... for sweeps of more than MANY_JOBS jobs, so the sheet stays a sane size
MANY_JOBS = 256
MAX_COLUMNS = 8
LABEL_FONT_SIZE = 11
BACKGROUND = (16, 16, 20)
TEXT = (225, 225, 230)
FAILED = (200, 70, 70)
CHECKER = 8  # the checkerboard's square side behind a transparent still, pixels of the sheet
CHECKER_COLOURS = ((204, 204, 204), (255, 255, 255))  # #cccccc at the tile's top left, #ffffff

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")


MAX_STILL_BYTES = 256 << 20  # a still read from a store is read up to this size


def _store(sweep_dir: Path | Store) -> Store:
    return sweep_dir if isinstance(sweep_dir, Store) else LocalStore(Path(sweep_dir))


def _open(store: Store, rel: str):
    """A file of the sweep to decode: opened in place on a local disk, read whole from a store."""
    if store.local:
        return store.open_read(rel)
    return io.BytesIO(store.read_bytes(rel, MAX_STILL_BYTES))


def alpha_mode(record: dict) -> str | None:
    """The job's output.alpha ("straight" or "premultiplied") from its recorded preset; None for an
    opaque job or a record that does not say."""
    preset = record.get("preset")
    output = preset.get("output") if isinstance(preset, dict) else None
    alpha = output.get("alpha") if isinstance(output, dict) else None
    return alpha if alpha in ("straight", "premultiplied") else None


def _last_frame(store: Store, record: dict) -> Image.Image | None:
    """The job's last frame: its PNG still (RGBA where it has an alpha channel, "RGBa" where the
    job's alpha is premultiplied), else the GIF's last frame; RGB otherwise."""
    outputs = record.get("outputs") or {}
    if record.get("status") != "done":
        return None
    try:
        if local_path(outputs.get("png")):
            with _open(store, outputs["png"]) as file, Image.open(file) as image:
                if image.mode != "RGBA":
                    return image.convert("RGB")
                image.load()
                if alpha_mode(record) == "premultiplied":  # resized as the premultiplied bytes it is
                    return Image.frombytes("RGBa", image.size, image.tobytes())
                return image.copy()
        if local_path(outputs.get("gif")):
            with _open(store, outputs["gif"]) as file, Image.open(file) as image:
                image.seek(image.n_frames - 1)
                return image.convert("RGB")
    except (OSError, ValueError):
        return None
    return None


def _tile(store: Store, record: dict, side: int) -> Image.Image | None:
    frame = _last_frame(store, record)
    if frame is None:
        return None
    tile = _fit(frame, side)
    return tile if tile.mode == "RGB" else _over_checker(tile)


def _fit(image: Image.Image, side: int) -> Image.Image:
    scale = side / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.NEAREST if scale >= 1 else Image.LANCZOS)


def checkerboard(width: int, height: int) -> np.ndarray:
    """[H, W, 3] uint8: squares of CHECKER pixels in CHECKER_COLOURS, the first at the top left."""
    y, x = np.indices((height, width))
    return np.asarray(CHECKER_COLOURS, dtype=np.uint8)[(y // CHECKER + x // CHECKER) % 2]


def _over_checker(tile: Image.Image) -> Image.Image:
    """An RGBA (straight) or RGBa (premultiplied) tile over the checkerboard, in integers rounded to
    the nearest: straight (C * A + B * (255 - A) + 127) // 255, premultiplied
    C + (B * (255 - A) + 127) // 255."""
    pixels = np.asarray(tile).astype(np.uint32)
    colour, alpha = pixels[..., :3], pixels[..., 3:]
    back = checkerboard(tile.width, tile.height).astype(np.uint32) * (255 - alpha)
    if tile.mode == "RGBa":
        out = np.minimum(colour + (back + 127) // 255, 255)
    else:
        out = (colour * alpha + back + 127) // 255
    return Image.fromarray(out.astype(np.uint8), "RGB")


def _clip(text: str, font, width: int) -> str:
    while text and font.getlength(text) > width:
        text = text[:-2] + "\u2026" if len(text) > 2 else ""
    return text


def contact_sheet(sweep_dir: Path | Store, records: list[dict]) -> Image.Image:
    """Every job's last frame in a grid, each labelled with its name and parameter values."""
    store = _store(sweep_dir)
    side = TILE if len(records) <= MANY_JOBS else TILE_SMALL
    font = ImageFont.load_default(size=LABEL_FONT_SIZE)
    line = LABEL_FONT_SIZE + 3
    lines = 1 + max((len(r.get("params", {})) for r in records), default=0)
    pad = 6
    cell_w, cell_h = side + 2 * pad, side + 2 * pad + lines * line
    columns = max(1, min(MAX_COLUMNS, math.ceil(math.sqrt(len(records)))))
    rows = max(1, math.ceil(len(records) / columns))
    sheet = Image.new("RGB", (columns * cell_w, rows * cell_h), BACKGROUND)
    draw = ImageDraw.Draw(sheet)
    # Decoding and shrinking the stills is most of the sheet's work (docs/benchmarks.md), and
    # Pillow releases the interpreter lock for both: threads do them side by side.
    with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 1)) as pool:
        tiles = pool.map(lambda record: _tile(store, record, side), records)
    for number, (record, tile) in enumerate(zip(records, tiles)):
        x, y = (number % columns) * cell_w + pad, (number // columns) * cell_h + pad
        if tile is None:
            draw.rectangle([x, y, x + side - 1, y + side - 1], outline=FAILED)
            draw.text((x + 6, y + 6), record.get("status", "?"), fill=FAILED, font=font)
        else:
            sheet.paste(tile, (x + (side - tile.width) // 2, y + (side - tile.height) // 2))
        labels = [str(record.get("name", record["id"]))] + [
            f"{k}={format_value(v)}" for k, v in record.get("params", {}).items()
        ]
        for row, text in enumerate(labels):
            draw.text((x, y + side + 2 + row * line), _clip(text, font, side), fill=TEXT, font=font)
    return sheet


def write_contact_sheet(sweep_dir: Path | Store, records: list[dict]):
    """Write contact.png in the sweep's folder or store (whole or not at all); returns its path
    (or URL)."""
    store = _store(sweep_dir)
    image = contact_sheet(store, records)
    data = io.BytesIO()
    image.save(data, format="PNG", optimize=False)
    store.write_bytes("contact.png", data.getvalue())
    return store.location / "contact.png"
