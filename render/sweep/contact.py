"""The contact sheet of a sweep: contact.png, every job's last frame in a grid, labelled with its
name and parameter values. The frames are read from the sweep's folder or its store (object
storage: base/storage.py), and the sheet is written there whole."""

from __future__ import annotations

import io
import math
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

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


MAX_STILL_BYTES = 256 << 20  # a still read from a store is read up to this size


def _store(sweep_dir: Path | Store) -> Store:
    return sweep_dir if isinstance(sweep_dir, Store) else LocalStore(Path(sweep_dir))


def _open(store: Store, rel: str):
    """A file of the sweep to decode: opened in place on a local disk, read whole from a store."""
    if store.local:
        return store.open_read(rel)
    return io.BytesIO(store.read_bytes(rel, MAX_STILL_BYTES))


def _last_frame(store: Store, record: dict) -> Image.Image | None:
    """The job's last frame: its PNG still, else the GIF's last frame."""
    outputs = record.get("outputs") or {}
    if record.get("status") != "done":
        return None
    try:
        if local_path(outputs.get("png")):
            with _open(store, outputs["png"]) as file, Image.open(file) as image:
                return image.convert("RGB")
        if local_path(outputs.get("gif")):
            with _open(store, outputs["gif"]) as file, Image.open(file) as image:
                image.seek(image.n_frames - 1)
                return image.convert("RGB")
    except (OSError, ValueError):
        return None
    return None


def _tile(store: Store, record: dict, side: int) -> Image.Image | None:
    frame = _last_frame(store, record)
    return None if frame is None else _fit(frame, side)


def _fit(image: Image.Image, side: int) -> Image.Image:
    scale = side / max(image.size)
    size = (max(1, round(image.width * scale)), max(1, round(image.height * scale)))
    return image.resize(size, Image.NEAREST if scale >= 1 else Image.LANCZOS)


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
