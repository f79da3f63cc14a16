"""The curated presets and example sweeps, found by name."""

from __future__ import annotations

from pathlib import Path

PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"
SWEEPS_DIR = Path(__file__).resolve().parent.parent / "sweeps"


def _path_or_named(name: str, folder: Path) -> Path:
    """A path as given, or the file `folder/<name>.yaml` when only a name is given."""
    path = Path(name)
    if path.exists() or path.suffix in (".yaml", ".yml"):
        return path
    named = folder / f"{name}.yaml"
    return named if named.exists() else path


def resolve_preset_path(name: str) -> Path:
    """A path as given, or a curated preset's file when only its name is given."""
    return _path_or_named(name, PRESETS_DIR)


def resolve_sweep_path(name: str) -> Path:
    """A path as given, or an example sweep's file when only its name is given."""
    return _path_or_named(name, SWEEPS_DIR)
