"""The curated presets and example sweeps that ship with physarum: listed, and found by name.

They are data packages, physarum.presets (presets/, with the images/ its world presets name by
relative path) and physarum.sweeps (sweeps/), read through importlib.resources: one lookup
serves a checkout (an editable install, or a link tree such as .pyroot) and a wheel installed
anywhere, from any working folder. Their folders are resolved through links, so a preset's
image paths are real files: rendered from the repository root, outputs embed
`presets/images/...` relative to it, as they always have; rendered from an installed package,
the installed image's absolute path (Preset.portable_dump); either way the outputs carry the
images themselves (render/preset/carried.py).

A name (`veins`, `angles`) means a shipped file; anything else is a path, taken as given. A
file in the working folder of that name wins over the shipped one of the same name.

Nothing here builds the preset schema (pydantic): `physarum presets` lists the curated presets
from their YAML as written (`listed`), and the commands that list or find files start at once.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from ..base.errors import PresetError, RenderError, did_you_mean
from ..base.inputs import read_text
from .safe_yaml import parse_yaml
from .units import density_count

SUFFIXES = (".yaml", ".yml")
LISTED_KEYS = ("name", "description", "canvas", "agents")  # what `physarum presets` shows
_KEY = re.compile(r"([A-Za-z_][\w-]*) *:(?:[ \t\r\n]|$)")  # a plain top-level key and its colon


@dataclass(frozen=True)
class Shelf:
    """One kind of shipped file: the data package that holds it, and what a message calls one."""

    package: str
    noun: str

    def folder(self) -> Path:
        """The package's real folder (links resolved); it must be installed as files, not a zip,
        because presets name their images by path."""
        try:
            root = resources.files(self.package)
        except ModuleNotFoundError:
            raise RenderError(
                f"{self.package} is not installed: install physarum again "
                "(pip install . or pip install -e .) to ship its presets and sweeps"
            ) from None
        if not isinstance(root, Path):
            raise RenderError(f"{self.package} is installed as {root}; it must be installed as files")
        return root.resolve()

    def files(self) -> list[Path]:
        """Every shipped file, sorted by name."""
        return sorted(self.folder().glob("*.yaml"))

    def names(self) -> list[str]:
        return [path.stem for path in self.files()]

    def resolve(self, name: str) -> Path:
        """The path as given where it is a file or ends in .yaml/.yml (loading reports a missing
        file), else the shipped file of that name, else the path where something else is there
        (a folder, a FIFO, a device: loading names what it is). PresetError, with the closest
        name and the list, where there is nothing."""
        path = Path(name)
        if path.is_file() or path.suffix in SUFFIXES:
            return path
        names = self.names()
        if name in names:
            return self.folder() / f"{name}.yaml"
        if os.path.lexists(path):
            return path
        raise PresetError(
            [
                f"{name}: no such file, and no {self.noun} of that name; "
                f"{did_you_mean(name, names)}{self.noun}s: {', '.join(names)}"
            ]
        )


PRESETS = Shelf("physarum.presets", "curated preset")
SWEEPS = Shelf("physarum.sweeps", "example sweep")


def preset_files() -> list[Path]:
    """The curated presets' files, sorted by name."""
    return PRESETS.files()


def sweep_files() -> list[Path]:
    """The example sweeps' files, sorted by name."""
    return SWEEPS.files()


def resolve_preset_path(name: str) -> Path:
    """A preset file's path as given, or a curated preset's file when only its name is given."""
    return PRESETS.resolve(name)


def resolve_sweep_path(name: str) -> Path:
    """A sweep file's path as given, or an example sweep's file when only its name is given."""
    return SWEEPS.resolve(name)


def read_shipped(path: Path) -> dict:
    """The mapping of a shipped YAML file (or any preset or sweep file), read by the safe loader
    and not validated; PresetError naming the file where it cannot be read or parsed."""
    try:
        text = read_text(path)
    except ValueError as error:
        raise PresetError([f"{path}: {error}"]) from None
    return parse_yaml(text, str(path))


def named_images(data: dict) -> list[str]:
    """The image paths a preset's mapping names as written (world.walls.path,
    world.trail_image.path, world.food.image.path, agents.image, each species' agents.image),
    then its sound file (audio.path, docs/audio.md), each once, in that order; not validated
    (what is not a string is left out)."""

    def at(node, *keys):
        for key in keys:
            node = node.get(key) if isinstance(node, dict) else None
        return node

    found = [
        at(data, "world", "walls", "path"),
        at(data, "world", "trail_image", "path"),
        at(data, "world", "food", "image", "path"),
        at(data, "agents", "image"),
    ]
    species = data.get("species") if isinstance(data.get("species"), list) else []
    found += [at(own, "agents", "image") for own in species]
    found.append(at(data, "audio", "path"))
    return list(dict.fromkeys(path for path in found if isinstance(path, str) and path.strip()))


@dataclass(frozen=True)
class Listed:
    """A curated preset as `physarum presets` lists it: its name, canvas, agents, description;
    depth None for a 2D canvas."""

    name: str
    width: int
    height: int
    agents: int
    description: str
    depth: int | None = None

    @property
    def size(self) -> str:
        """The canvas as WxH, or WxHxD for a volume."""
        return "x".join(str(side) for side in (self.width, self.height, self.depth) if side is not None)


def listed(path: Path) -> Listed | None:
    """A curated preset's listing read from its YAML as written (its LISTED_KEYS' top-level lines
    by the safe loader; the whole file for agents.density), not validated: None where the file is
    unreadable or a value is not plainly there (missing, or of another type), and the caller
    validates it instead. agents.density gives the count as the schema does (schema.py,
    Preset._density_count: round half to even of density x cells, at least 1).

    Not validating is truthful for the curated presets only: every one is validated by
    tests/test_preset_load.py (test_curated_presets_validate), and tests/test_cli_main.py checks
    that this listing says what the validated presets say, so it shows no broken preset."""
    try:
        data = parse_yaml(_top_level(read_text(path), LISTED_KEYS), str(path))
        if isinstance(data.get("agents"), dict) and "density" in data["agents"]:
            data = read_shipped(path)  # the count depends on model.units: the whole file
    except (PresetError, ValueError):
        return None
    canvas, agents, model = (data.get(k) for k in ("canvas", "agents", "model"))
    if not (isinstance(canvas, dict) and isinstance(agents, dict) and isinstance(model, dict | None)):
        return None
    depth = canvas.get("depth")  # None: a 2D canvas
    sides = [canvas.get("width"), canvas.get("height"), *([] if depth is None else [depth])]
    name, description = data.get("name"), data.get("description", "")
    if not (_numbers(sides, int) and isinstance(name, str) and isinstance(description, str)):
        return None
    count, density = agents.get("count"), agents.get("density")
    units = (model or {}).get("units", "pixels")
    if density is None and _numbers([count], int):
        return Listed(name, sides[0], sides[1], count, description, depth)
    if count is not None or not _numbers([density], int | float) or units not in ("pixels", "short_side"):
        return None
    count = max(1, round(density_count(density, sides, units)))  # as the schema counts
    return Listed(name, sides[0], sides[1], count, description, depth)


def _top_level(text: str, keys: tuple[str, ...]) -> str:
    """The lines of `text` that hold the top-level keys `keys`: each line that starts a plain key
    at column 0, with the indented, blank and comment lines after it. Half a curated file is its
    look and output, and parsing it (pure-Python YAML) was most of the listing's time. Whatever
    this reads otherwise (a key quoted or merged in with `<<`, an alias to a dropped anchor) is a
    value missing or a YAML error, and `listed` has the preset validated instead."""
    lines, keep = [], False
    for line in text.splitlines(keepends=True):
        if line[:1] not in ("", " ", "\t", "\n", "\r", "#"):  # a line at column 0 starts a new block
            key = _KEY.match(line)
            keep = key is not None and key.group(1) in keys
        if keep:
            lines.append(line)
    return "".join(lines)


def _numbers(values: list, kind) -> bool:
    """Whether every value is a positive finite number of `kind` (booleans are not numbers here)."""
    return all(isinstance(v, kind) and not isinstance(v, bool) and 0 < v < math.inf for v in values)
