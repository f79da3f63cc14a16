"""Presets: the YAML schema (sections, worlds, the whole preset) and loading with layered
overrides, in that order of the data flow:

- sections: canvas, agents, model, run, palette and output, with their bounds;
- worlds: boundary, images, walls, food and species;
- schema: the whole Preset, what the kernels take from it, and the walk through its keys;
- load: YAML read safely, `--set` and flags layered on, every problem reported at once.

The names below are the package's public face; callers import them from here.
"""

from physarum.render.base.errors import PresetError
from physarum.render.preset.load import (
    apply_setting,
    build_preset,
    load_preset,
    read_preset_file,
    set_dotted,
)
from physarum.render.preset.output_sections import (
    ALL_FORMATS,
    FORMATS,
    MP4_SETTINGS,
    Checkpoint,
    Fields,
    Levels,
    Output,
    Palette,
    PaletteEntry,
    check_palette_entry,
)
from physarum.render.preset.safe_yaml import parse_yaml
from physarum.render.preset.schema import Preset, key_annotation, key_problem, section_at
from physarum.render.preset.sections import (
    DEFAULT_AGENTS,
    MAX_AGENTS,
    NAME_PATTERN,
    REFERENCE_SIDE,
    SPAWN_NAMES,
    Agents,
    Canvas,
    Model,
    ModelOverride,
    Run,
)
from physarum.render.preset.worlds import (
    DEFAULT_SPECIES_COLOURS,
    Food,
    FoodImage,
    FoodPoint,
    Species,
    SpeciesAgents,
    TrailImage,
    Walls,
    World,
)

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
