"""A preset by name or path with settings over it, and a preset changed by settings: every
section it has kept.

A preset's dump (what outputs embed, Preset.portable_dump) leaves out the sections that say how
a render keeps its state or writes extras (checkpoint, output.fields, output.volume): a render
--from a shared file must not take them. A preset changed here is the user's own, so they are
put back: changing the decay of a preset with checkpoints gives a preset with checkpoints, as
`physarum render FILE --set model.decay=...` does.
"""

from __future__ import annotations

from pathlib import Path

from ..preset.catalog import resolve_preset_path

# The sections Preset.portable_dump leaves out, as dotted paths: put back by `change`.
KEPT_SECTIONS = ("checkpoint", "output.fields", "output.volume")


def load(name_or_path: str, settings: list[str] = ()):
    """A curated preset by name, or a preset file, validated with --set `settings` over it;
    PresetError listing every problem."""
    from ..preset import load_preset  # start-up: the preset schema, when used

    return load_preset(resolve_preset_path(name_or_path), list(settings))


def full_dump(preset) -> dict:
    """The preset's portable dump with KEPT_SECTIONS put back: what build_preset reads as the
    same preset."""
    data = preset.portable_dump()
    for dotted in KEPT_SECTIONS:
        *parents, last = dotted.split(".")
        owner = preset
        for part in parents:
            owner = getattr(owner, part)
        section = getattr(owner, last)
        if section is None:
            continue
        node = data
        for part in parents:
            node = node.setdefault(part, {})
        node[last] = section.model_dump(mode="json", exclude_none=True)
    return data


def change(preset, settings: list[str]):
    """The preset with --set `settings` over it, validated again, keeping every section it has
    and the images it carries (a preset read by render --from reads those, not files)."""
    from ..preset import build_preset  # start-up: the preset schema, when used

    return build_preset(
        full_dump(preset), preset.name, list(settings), base=Path.cwd(), carried=preset.carried
    )
