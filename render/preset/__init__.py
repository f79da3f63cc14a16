"""Presets: the YAML schema (sections, worlds, the whole preset) and loading with layered
overrides, in that order of the data flow:

- sections: canvas, agents, model, run, palette and output, with their bounds;
- worlds: boundary, images, walls, food and species;
- schema: the whole Preset, what the kernels take from it, and the walk through its keys;
- load: YAML read safely, `--set` and flags layered on, every problem reported at once.

The names below are the package's public face; callers import them from here.
"""

from __future__ import annotations

import importlib

# Each public name and the module that defines it. The package imports a module when one of its
# names is first read (PEP 562), so that importing physarum.render.preset.catalog or safe_yaml
# builds no schema (pydantic): `physarum --help` and `physarum presets` start at once (issue 25).
_HOMES = {
    "physarum.render.base.errors": ("PresetError",),
    "physarum.render.preset.load": (
        "apply_setting",
        "build_preset",
        "load_preset",
        "read_preset_file",
        "set_dotted",
    ),
    "physarum.render.preset.output_sections": (
        "ALL_FORMATS",
        "FORMATS",
        "MP4_SETTINGS",
        "Checkpoint",
        "Fields",
        "Levels",
        "Output",
        "Palette",
        "PaletteEntry",
        "check_palette_entry",
    ),
    "physarum.render.preset.safe_yaml": ("parse_yaml",),
    "physarum.render.preset.schema": ("Preset", "key_annotation", "key_problem", "section_at"),
    "physarum.render.preset.sections": (
        "DEFAULT_AGENTS",
        "MAX_AGENTS",
        "NAME_PATTERN",
        "SPAWN_NAMES",
        "Agents",
        "Canvas",
        "Model",
        "ModelOverride",
        "Run",
    ),
    "physarum.render.preset.units": ("REFERENCE_SIDE",),
    "physarum.render.preset.worlds": (
        "DEFAULT_SPECIES_COLOURS",
        "Food",
        "FoodImage",
        "FoodPoint",
        "Species",
        "SpeciesAgents",
        "TrailImage",
        "Walls",
        "World",
    ),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}


def __getattr__(name: str):
    """A public name of the package, imported from its module when first read (then bound here);
    AttributeError for any other name, so that `from physarum.render.preset import carried`
    imports the submodule as usual."""
    if name not in _HOME_OF:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(_HOME_OF[name]), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_AGENTS",
    "DEFAULT_SPECIES_COLOURS",
    "ALL_FORMATS",
    "FORMATS",
    "MAX_AGENTS",
    "MP4_SETTINGS",
    "NAME_PATTERN",
    "REFERENCE_SIDE",
    "SPAWN_NAMES",
    "Agents",
    "Canvas",
    "Checkpoint",
    "Fields",
    "Food",
    "FoodImage",
    "FoodPoint",
    "Levels",
    "Model",
    "ModelOverride",
    "Output",
    "Palette",
    "PaletteEntry",
    "Preset",
    "PresetError",
    "Run",
    "Species",
    "SpeciesAgents",
    "TrailImage",
    "Walls",
    "World",
    "apply_setting",
    "build_preset",
    "check_palette_entry",
    "key_annotation",
    "key_problem",
    "load_preset",
    "parse_yaml",
    "read_preset_file",
    "section_at",
    "set_dotted",
]
