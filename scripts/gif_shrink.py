"""Shrink a rendered 3D GIF (an RGB volume frame per frame) with a GIF budget's own reductions,
for a README figure whose render cannot run here (a 512^3 preset needs a GPU):

    python scripts/gif_shrink.py IN.gif OUT.gif LEVELS FACTOR STRIDE

Each frame is decoded to RGB and given its exact palette again (render/look/volume.py
reduce_rgb), then reduced as a budget would (render/formats/gif_file.py): an area downscale by
FACTOR, LEVELS levels shown by their pixels' colours (weighted_level_palette), every STRIDE-th
frame counted back from the last, each shown STRIDE times as long. The comment (the embedded
preset) is kept. Prints the file's bytes, size, frames and levels.
"""

from __future__ import annotations

import sys

import numpy as np
import torch
from PIL import Image, ImageSequence

from physarum.render.formats.gif_file import (
    TRAILER,
    area_downscale,
    frame_block,
    header,
    kept_frames,
    reduce_levels,
    weighted_level_palette,
)
from physarum.render.look.volume import reduce_rgb


def shrink(source: str, out: str, levels: int, factor: int, stride: int) -> str:
    with Image.open(source) as image:
        comment = image.info.get("comment", b"")
        delay = image.info.get("duration", 60) * stride
        rgb = [np.asarray(frame.convert("RGB")).copy() for frame in ImageSequence.Iterator(image)]
    blocks, first = [], None
    for number in kept_frames(len(rgb), stride):
        index, palette = reduce_rgb(torch.from_numpy(rgb[number]))
        table = palette.astype(np.uint8).tobytes().ljust(768, b"\0")
        down = area_downscale(index.numpy(), factor)
        shown = weighted_level_palette(table, down, levels)
        first = first or (down.shape, shown)
        blocks.append(frame_block(reduce_levels(down, levels), shown, True, delay))
    (height, width), table = first
    text = comment.decode("utf-8") if isinstance(comment, bytes) else comment
    data = header(width, height, table, 0, text) + b"".join(blocks) + TRAILER
    with open(out, "wb") as file:
        file.write(data)
    return f"{out}: {len(data)} bytes, {width}x{height}, {len(blocks)} frames, {levels} levels"


if __name__ == "__main__":
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    print(shrink(sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])))
