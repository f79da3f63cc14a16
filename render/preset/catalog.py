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
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from physarum.render.base.errors import PresetError, RenderError, did_you_mean

SUFFIXES = (".yaml", ".yml")


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
        file), else the shipped file of that name. PresetError, with the closest name and the
        list, where it is neither."""
        path = Path(name)
        if path.is_file() or path.suffix in SUFFIXES:
            return path
        names = self.names()
        if name in names:
            return self.folder() / f"{name}.yaml"
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
