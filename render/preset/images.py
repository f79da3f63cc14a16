"""Images read here: a preset's image files checked, decoded to grey and resized onto its canvas.

This is where the preset stage reads images, so that loading a preset builds no world:
render/preset/sections.py reads an image's header (image_size), render/preset/load.py checks a
preset's images on its canvas (image_problems), render/preset/carried.py and provenance.py read
the images an output carries; render/world/maps.py makes the world's maps from preset_pixels.

An image is a regular file whose header (read first, nothing decoded) gives at most
allowed_pixels(canvas) pixels. It is decoded by Pillow and converted to 8-bit greyscale ("L":
Pillow's integer formula; alpha is dropped, the first frame of an animation is used; 16-bit and
float grey by their range, grey_pixels), then resized to the canvas by an
exact area average in integers (a box filter: each canvas cell is the mean of the source pixels
it covers, weighted by the covered area, rounded half up), so a resized image is the same on
every machine and every Pillow version. Decoded and resized images are kept in small bounded
caches (remember), keyed by the file's path, modification time and size.

Two rules of the preset's images live here because the preset's checks need them: which pixels
of a walls image are wall (wall_pixels), and which image places a species' agents (spawn_image).
"""

from __future__ import annotations

import os
import warnings

from ..base import lazy
from ..base.inputs import file_problem

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")
Image = lazy.module("PIL.Image")

MAX_IMAGE_PIXELS = 1 << 26  # 8192 x 8192: no image has more pixels, on any canvas
IMAGE_CANVAS_RATIO = 16  # an image may have 16 times the pixels of its canvas ...
IMAGE_PIXELS_ANY_CANVAS = 1 << 22  # ... or 2048 x 2048, whichever is more (and at most MAX_IMAGE_PIXELS)
WIDE_MODES = ("I;16", "I;16L", "I;16B", "I;16N")  # 16 bits of grey: 0..65535
FLOAT_MODE = "F"  # 32-bit float grey: 0..1

_DECODED: dict[tuple, np.ndarray] = {}  # (path, mtime_ns, size) -> greyscale pixels
_RESIZED: dict[tuple, np.ndarray] = {}  # (path, mtime_ns, size, width, height) -> canvas pixels
_CACHE_LIMIT = 16


def remember(cache: dict, key: tuple, value):
    """Keep value in a bounded cache (the oldest entry goes past _CACHE_LIMIT); returns it."""
    if len(cache) >= _CACHE_LIMIT:
        cache.pop(next(iter(cache)))
    cache[key] = value
    return value


def _file_key(path: str) -> tuple:
    """The cache key of an image file; ValueError with a clear message when it is no regular
    file (nothing is opened: a FIFO would block)."""
    problem = file_problem(path)
    if problem == "no such file":
        raise ValueError(f"no such image file: {path}")
    if problem and problem.startswith("is a folder"):
        raise ValueError(f"{path} is a folder, not an image file")
    if problem:
        raise ValueError(f"{path} {problem}, not an image file")
    stat = os.stat(path)
    return (path, stat.st_mtime_ns, stat.st_size)


def allowed_pixels(width: int, height: int) -> int:
    """The most pixels an image on a width x height canvas may have (docs/presets.md, "Limits")."""
    return min(MAX_IMAGE_PIXELS, max(IMAGE_PIXELS_ANY_CANVAS, IMAGE_CANVAS_RATIO * width * height))


def _opened(path: str):
    """The image file opened by Pillow, which reads only its header; ValueError naming the problem."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the size is checked here
            return Image.open(path)
    except Image.UnidentifiedImageError:
        raise ValueError(
            f"{path} is not an image file Pillow can read (PNG, JPEG, GIF, BMP, TIFF, WebP, ...)"
        ) from None
    except Image.DecompressionBombError:
        raise ValueError(
            f"{path} has more than {MAX_IMAGE_PIXELS} pixels, the most an image may have"
        ) from None
    except (OSError, SyntaxError, ValueError) as error:
        raise ValueError(f"{path}: the image cannot be decoded ({type(error).__name__}: {error})") from None


def image_size(path: str, most: int = MAX_IMAGE_PIXELS) -> tuple[int, int]:
    """(width, height) of an image file from its header, without decoding it; ValueError when it
    is no image, is empty, has more than `most` pixels or pixels of a kind that is not read."""
    _file_key(path)
    with _opened(path) as image:
        return _checked_header(path, image, most)


def _checked_header(path: str, image, most: int) -> tuple[int, int]:
    width, height = image.size
    _check_pixels(path, width, height, most)
    if image.mode.startswith("I") and image.mode not in WIDE_MODES:
        raise ValueError(
            f"{path} has 32-bit integer pixels (mode {image.mode}), which are not read: "
            "save it with 8 or 16 bits of grey, or as 32-bit float in 0..1"
        )
    return width, height


def _check_pixels(path: str, width: int, height: int, most: int) -> None:
    if width == 0 or height == 0:
        raise ValueError(f"{path} is an empty image ({width}x{height} pixels)")
    if width * height > most:
        allowed = (
            "the most an image may have" if most == MAX_IMAGE_PIXELS else "the most allowed on this canvas"
        )
        raise ValueError(
            f"{path} is {width}x{height} = {width * height} pixels; {allowed} is {most} "
            f"({IMAGE_CANVAS_RATIO} times the canvas's pixels or {IMAGE_PIXELS_ANY_CANVAS}, whichever "
            f"is more, at most {MAX_IMAGE_PIXELS}): shrink the image"
        )


def read_grey(path: str, most: int = MAX_IMAGE_PIXELS) -> np.ndarray:
    """[H, W] uint8 greyscale pixels of an image file; ValueError naming the problem. The size
    is checked on the header (at most `most` pixels) before anything is decoded."""
    key = _file_key(path)
    if key in _DECODED:
        grey = _DECODED[key]
        _check_pixels(path, grey.shape[1], grey.shape[0], most)
        return grey
    try:
        with _opened(path) as image:
            _checked_header(path, image, most)
            image.load()
            grey = grey_pixels(path, image)
    except ValueError:
        raise
    except (OSError, SyntaxError, Image.DecompressionBombError, MemoryError) as error:
        raise ValueError(f"{path}: the image cannot be decoded ({type(error).__name__}: {error})") from None
    if grey.size == 0:
        raise ValueError(f"{path} is an empty image (0 pixels)")
    return remember(_DECODED, key, grey)


def grey_pixels(path: str, image) -> np.ndarray:
    """[H, W] uint8 grey of a decoded image. 8-bit images, colour or grey, are converted by
    Pillow's "L" formula (alpha dropped). 16-bit grey v becomes round-half-up(v * 255 / 65535),
    in integers (so v * 257 gives back v exactly); 32-bit float grey in 0..1 becomes
    round-half-up(v * 255) in float64; float values outside 0..1 are refused."""
    if image.mode in WIDE_MODES:
        wide = np.asarray(image).astype(np.int64)
        return ((2 * 255 * wide + 65535) // (2 * 65535)).astype(np.uint8)
    if image.mode == FLOAT_MODE:
        values = np.asarray(image).astype(np.float64)
        if not np.isfinite(values).all() or values.min() < 0 or values.max() > 1:
            low, high = np.nanmin(values), np.nanmax(values)
            raise ValueError(
                f"{path} has float pixels from {low:g} to {high:g}"
                f"{' and not-a-number ones' if np.isnan(values).any() else ''}; float images are read "
                "as 0 (black) to 1 (white): scale it into 0..1 or save it with 8 or 16 bits"
            )
        return np.floor(values * 255 + 0.5).astype(np.uint8)
    return np.asarray(image.convert("L"), dtype=np.uint8).copy()


def _box_weights(source: int, target: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(source index, weight, start of each target's run) of an exact area resize on one axis.

    Target cell i covers [i * source, (i + 1) * source) and source cell r covers
    [r * target, (r + 1) * target), in units of 1 / target source cells: the integer overlap is
    r's weight in i, and every target's weights add up to `source`."""
    rows, weights, starts = [], [], []
    for i in range(target):
        lo, hi = i * source, (i + 1) * source
        starts.append(len(rows))
        for r in range(lo // target, (hi - 1) // target + 1):
            overlap = min(hi, (r + 1) * target) - max(lo, r * target)
            if overlap > 0:
                rows.append(r)
                weights.append(overlap)
    return np.array(rows), np.array(weights, dtype=np.int64), np.array(starts)


def box_resize(grey: np.ndarray, width: int, height: int) -> np.ndarray:
    """[height, width] uint8: the exact area average of `grey`, rounded half up, in integers."""
    source_h, source_w = grey.shape
    if (source_w, source_h) == (width, height):
        return grey
    rows, row_w, row_starts = _box_weights(source_h, height)
    columns, column_w, column_starts = _box_weights(source_w, width)
    pixels = grey.astype(np.int64)
    tall = np.add.reduceat(pixels[rows] * row_w[:, None], row_starts, axis=0)  # [height, source_w]
    total = np.add.reduceat(tall[:, columns] * column_w[None, :], column_starts, axis=1)
    divisor = source_h * source_w  # every cell's weights add up to this
    return ((2 * total + divisor) // (2 * divisor)).astype(np.uint8)


def canvas_image(path: str, width: int, height: int, carried=None) -> np.ndarray:
    """[height, width] uint8: an image file in greyscale, resized to the canvas. `carried` maps
    paths to the images `render --from` uses instead of files (render/preset/carried.py: width, height,
    cache_key, pixels()); their size is checked against the canvas before they are decoded."""
    image = (carried or {}).get(path)
    if image is not None:
        key = (*image.cache_key, width, height)
        if key not in _RESIZED:
            _check_pixels(path, image.width, image.height, allowed_pixels(width, height))
            remember(_RESIZED, key, box_resize(image.pixels(), width, height))
        return _RESIZED[key]
    key = (*_file_key(path), width, height)
    if key in _RESIZED:
        return _RESIZED[key]
    return remember(_RESIZED, key, box_resize(read_grey(path, allowed_pixels(width, height)), width, height))


def preset_pixels(preset, path: str) -> np.ndarray:
    """[H, W] uint8: one of a preset's images on its canvas (the carried one where it has one)."""
    return canvas_image(path, preset.canvas.width, preset.canvas.height, preset.carried)


def source_pixels(preset, path: str) -> np.ndarray:
    """[h, w] uint8: one of a preset's images as read, before resizing (the carried one where it
    has one): what its outputs carry."""
    image = preset.carried.get(path)
    return image.pixels() if image is not None else read_grey(path)


def wall_pixels(pixels: np.ndarray, walls) -> np.ndarray:
    """[H, W] bool: which pixels of a walls image (world.walls) are wall: brightness >= threshold,
    or < threshold with invert."""
    return (pixels >= walls.threshold) != walls.invert


def spawn_image(preset, s: int) -> str | None:
    """The image that places species s's agents (spawn: image); None for the other spawns, and
    where the image is missing (a problem the preset's relations report)."""
    agents = preset.species_agents(s)
    if agents.spawn != "image" or agents.image is None:
        return None
    return agents.image


# ---------------------------------------------------------------------------------------------
# A preset's images


def image_problems(preset) -> list[str]:
    """What a preset's images mean on its canvas that cannot work (the files themselves were
    checked when the preset was read): walls everywhere, agent images without a bright cell.
    Every image is decoded here first, on this canvas, within allowed_pixels."""
    problems = []
    for where, path in preset_images(preset):
        try:
            preset_pixels(preset, path)
        except ValueError as error:
            problems.append(f"{where}: {error}")
    if problems:
        return problems
    try:
        walls = preset.world.walls if preset.world else None
        if walls is not None and bool(wall_pixels(preset_pixels(preset, walls.path), walls).all()):
            side = "below" if walls.invert else "at or above"
            problems.append(
                f"world.walls: every cell is a wall (brightness {side} {walls.threshold} "
                f"everywhere in {walls.path}, invert: {str(walls.invert).lower()}); "
                f"leave free cells for the agents"
            )
        for s in range(preset.species_count):
            image = spawn_image(preset, s)
            if image is not None and not bool(preset_pixels(preset, image).any()):
                where = (
                    "agents.image"
                    if preset.species is None or preset.species[s].agents.image is None
                    else f"species.{s}.agents.image"
                )
                problems.append(
                    f"{where}: the image is black everywhere on the {preset.canvas.width}x"
                    f"{preset.canvas.height} canvas: no cell to place agents on "
                    f"(got {preset.species_agents(s).image})"
                )
    except ValueError as error:  # a file changed since it was read
        problems.append(str(error))
    return problems


def preset_images(preset) -> list[tuple[str, str]]:
    """(key path, file) of every image a preset names."""
    world = preset.world
    found = [
        ("world.walls.path", world and world.walls and world.walls.path),
        ("world.trail_image.path", world and world.trail_image and world.trail_image.path),
        ("world.food.image.path", world and world.food and world.food.image and world.food.image.path),
        ("agents.image", preset.agents.image),
    ]
    found += [
        (f"species.{s}.agents.image", species.agents.image) for s, species in enumerate(preset.species or [])
    ]
    return [(where, path) for where, path in found if path]
