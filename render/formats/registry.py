"""The registry of output formats: every module of render/formats/ that declares a FORMAT is one,
found here, in the order of their positions. Every list of formats (the preset schema, the
runner, the tests, the docs' table) is read from FORMATS: adding a format is one module (its
name, limits, spec and writer) and its tests.
"""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

from .. import formats as _package
from ..base.files import parse_json
from ..base.inputs import read_text as read_input
from . import png
from .contract import Format, Spec, Writer
from .still import read_tiff_text


def _found() -> dict[str, Format]:
    """Each format module's FORMAT by name, in position order."""
    formats = []
    for info in pkgutil.iter_modules(_package.__path__):
        module = importlib.import_module(f"{_package.__name__}.{info.name}")
        declared = getattr(module, "FORMAT", None)
        if isinstance(declared, Format):
            formats.append(declared)
    formats.sort(key=lambda fmt: fmt.position)
    return {fmt.name: fmt for fmt in formats}


SIDECAR_BYTES = 40 << 20  # the most of a JSON sidecar read for the text it carries

FORMATS: dict[str, Format] = _found()
ALL_FORMATS: tuple[str, ...] = tuple(FORMATS)  # what output.formats may list
DEFAULT_FORMATS: tuple[str, ...] = tuple(name for name, fmt in FORMATS.items() if fmt.default)


def open_writer(spec: Spec) -> Writer:
    """The writer of a spec, its file opened under a temporary name."""
    return spec.open()


def read_embedded(path: Path, limit: int = SIDECAR_BYTES) -> str:
    """The text a rendered file carries (any format's file, a frames folder's PNG, or a JSON
    sidecar): the preset and, after it, its carried images (render/preset/carried.py). A sidecar
    is read only up to `limit` bytes; a file of no format's suffix is read as a PNG."""
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if suffix == "json":
        return parse_json(read_input(path, limit))["preset_yaml"]
    if suffix in (
        "tiff",
        "tif",
    ):  # a still's TIFF (output.still, physarum still): no format of output.formats
        return read_tiff_text(path, limit)
    fmt = FORMATS.get(suffix)
    return (fmt.read_text if fmt is not None else png.read_text)(path)
