"""The live page's controls: which keys of a preset it shows, each with the bounds the preset
schema gives it (read from the schema's own types: one source of truth), and whether a change of
it applies at the next step (a schedulable key: the record holds it as a `hold` schedule) or only
by a restart (every other key: a new performance from step 0).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any, get_args

import annotated_types

from ..preset.look_section import CURVES, Look
from ..preset.output_sections import Levels, Palette
from ..preset.palettes import PALETTES
from ..preset.schedule import Bounds, Follow, Wave, is_scheduled
from ..preset.schema import Preset
from ..preset.sections import Model

MODEL_KEYS = ("sensor_angle", "sensor_distance", "turn_angle", "step_size", "deposit", "diffuse", "decay")
DISTANCE_KEYS = ("sensor_distance", "step_size")
# the look's keys a schedule may hold (preset/look_section.py): live; the others restart
LOOK_LIVE = ("exposure", "bloom", "bloom_threshold", "vignette", "grain")
LOOK_RESTART = ("curve", "black", "bloom_radius", "dither")
MAX_SEED = 2**32 - 1


@dataclass(frozen=True)
class Control:
    """One key the page shows: its dotted key, its group, its kind (number, choice, flag), its
    bounds (lo, hi; open: the bound itself is not allowed), its choices, its value now, whether a
    change applies live (else by a restart), and why not where it cannot change at all."""

    key: str
    group: str
    kind: str = "number"
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    choices: tuple[str, ...] = ()
    value: Any = None
    live: bool = True
    fixed: str = ""  # why the page cannot change it (a schedule of the preset's own)

    def data(self) -> dict:
        return asdict(self)


def bounds(section: type, key: str) -> tuple[float | None, float | None, bool, bool]:
    """(lo, hi, lo_open, hi_open) of a numeric key of a schema section: from a scheduled()
    type's Bounds or the field's ge/gt/le/lt constraints."""
    field = section.model_fields[key]
    found: dict[str, float] = {}
    for meta in getattr(field.rebuild_annotation(), "__metadata__", ()):
        if isinstance(meta, Bounds):
            found.update(meta)
    for meta in field.metadata:
        for name in ("ge", "gt", "le", "lt"):
            if isinstance(meta, getattr(annotated_types, name.capitalize())):
                found[name] = getattr(meta, name)
    lo = found.get("ge", found.get("gt"))
    hi = found.get("le", found.get("lt"))
    return lo, hi, "gt" in found, "lt" in found


def number(section: type, key: str, full_key: str, group: str, value, live: bool, **narrow) -> Control:
    lo, hi, lo_open, hi_open = bounds(section, key)
    if "hi" in narrow and (hi is None or narrow["hi"] < hi):
        hi, hi_open = narrow["hi"], narrow.get("hi_open", hi_open)
    fixed = ""
    if isinstance(value, Follow | Wave):
        fixed = (
            f"follows the soundtrack's {value.audio}"
            if isinstance(value, Follow)
            else f"follows a {value.wave} wave"
        )
        value = float(value.range[0])
    elif is_scheduled(value):
        if value.ease != "hold":
            fixed = f"follows the preset's own {value.ease} schedule"
        value = float(list(value.keys.values())[-1])
    return Control(full_key, group, "number", lo, hi, lo_open, hi_open, (), value, live, fixed)


def model_controls(preset: Preset, model, prefix: str, group: str) -> list[Control]:
    """The model keys of `model` (the top level's, or a species' whole model) as controls; a
    distance's slider ends below half the short side (the preset's own rule), in its units."""
    half = 0.5 if model.units == "short_side" else min(preset.short_side / 2, 255)
    controls = []
    for key in MODEL_KEYS:
        narrow = {"hi": half, "hi_open": True} if key in DISTANCE_KEYS else {}
        value = getattr(model, key)
        controls.append(number(Model, key, f"{prefix}{key}", group, value, True, **narrow))
    return controls


def controls(preset: Preset) -> list[Control]:
    """Every control of the page for `preset` (a 2D preset, as the live loop runs it)."""
    out = model_controls(preset, preset.model, "model.", "model")
    for s, species in enumerate(preset.species or []):
        name = f"species {s}" + (f" ({species.name})" if species.name else "")
        out += model_controls(preset, preset.species_model(s), f"species.{s}.model.", name)
    look = preset.look or Look()
    live = preset.look is not None  # no look section yet: adding one recolours from the start
    for key in LOOK_LIVE:
        out.append(number(Look, key, f"look.{key}", "look", getattr(look, key), live))
    out.append(Control("look.curve", "look", "choice", choices=CURVES, value=look.curve, live=False))
    out.append(number(Look, "black", "look.black", "look", look.black, False))
    out.append(number(Look, "bloom_radius", "look.bloom_radius", "look", look.bloom_radius, False))
    out.append(Control("look.dither", "look", "flag", value=look.dither, live=False))
    palette = preset.palette
    first = palette.names[0] if isinstance(palette.names[0], str) else ""
    out.append(
        Control("palette.names", "palette", "choice", choices=tuple(PALETTES), value=first, live=False)
    )
    out.append(
        Control(
            "palette.space", "palette", "choice", choices=space_choices(), value=palette.space, live=False
        )
    )
    out.append(number(Palette, "gamma", "palette.gamma", "palette", palette.gamma, False))
    out.append(number(Palette, "every", "palette.every", "palette", palette.every, False))
    out.append(
        number(Palette, "blend", "palette.blend", "palette", palette.blend, False, hi=palette.every - 1)
    )
    out.append(
        number(Levels, "quantile", "palette.levels.quantile", "palette", palette.levels.quantile, False)
    )
    out.append(Control("seed", "run", "number", 0, MAX_SEED, value=preset.seed, live=False))
    return out


def space_choices() -> tuple[str, ...]:
    return get_args(Palette.model_fields["space"].annotation)


def by_key(preset: Preset) -> dict[str, Control]:
    return {control.key: control for control in controls(preset)}
