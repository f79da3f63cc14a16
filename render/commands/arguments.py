"""What the API's arguments must be, checked before anything runs: a wrong type of argument is a
TypeError naming the call, the argument and what it takes (the command's parser gives each flag
its type, so the command never meets one). A wrong value of the right type is the command's own
error (PresetError, RenderError), raised by the stage that checks it, the same message
`physarum` prints.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

from ..base.errors import PresetError, printable
from ..base.inputs import excerpt


def _got(value) -> str:
    """'str 'quickstart'', 'list [1, 2]': a value as a message names it (short, printable)."""
    return f"{type(value).__name__} {printable(excerpt(value))}"


def preset_of(value, call: str):
    """`value` where it is a Preset; TypeError otherwise (a name is loaded by physarum.load)."""
    from ..preset import Preset  # start-up: the preset schema, for a call that renders

    if isinstance(value, Preset):
        return value
    hint = ""
    if isinstance(value, (str, os.PathLike)):
        hint = f"; for a preset by name or path, give physarum.load({excerpt(str(value))})"
    raise TypeError(
        f"{call}: preset must be a Preset (from physarum.load or physarum.change), got {_got(value)}{hint}"
    )


def name_or_path_of(value, call: str, what: str = "name_or_path") -> str:
    """A name or path (str or os.PathLike) as text; TypeError otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, os.PathLike):
        return os.fspath(value) if isinstance(os.fspath(value), str) else os.fsdecode(value)
    raise TypeError(f"{call}: {what} must be a name or a path (str or pathlib.Path), got {_got(value)}")


def folder_of(value, call: str, what: str = "out") -> Path:
    """An output folder (str or os.PathLike) as a Path; TypeError otherwise."""
    return Path(name_or_path_of(value, call, what))


def optional_folder_of(value, call: str, what: str) -> Path | None:
    return None if value is None else folder_of(value, call, what)


def settings_of(value, call: str) -> list[str]:
    """A mapping of dotted keys to values ({"model.decay": 0.2}) as --set settings (each value
    written as JSON, which --set reads as YAML). TypeError for another type, a key that is not
    text or a value JSON cannot write; PresetError for a key with '=' (--set would split it)."""
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise TypeError(
            f"{call}: settings must be a mapping of dotted keys to values, e.g. "
            f'{{"model.decay": 0.2}}, got {_got(value)}'
        )
    settings = []
    for key, item in value.items():
        if not isinstance(key, str):
            raise TypeError(
                f"{call}: settings: a key must be text (a dotted key like 'model.decay'), got {_got(key)}"
            )
        if "=" in key or not key.strip():
            raise PresetError([f"settings: {excerpt(key)}: not a dotted key (like 'model.decay')"])
        try:
            text = json.dumps(item, allow_nan=False)
        except (TypeError, ValueError):
            raise TypeError(
                f"{call}: settings[{key!r}]: a value must be a number, text, true/false, None, or a "
                f"list or mapping of them, got {_got(item)}"
            ) from None
        settings.append(f"{key}={text}")
    return settings


def text_of(value, call: str, what: str, allowed: str, optional: bool = False) -> str | None:
    """A text argument (backend, device); None where `optional`; TypeError otherwise."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise TypeError(f"{call}: {what} must be text ({allowed}), got {_got(value)}")
    return value


def formats_of(value, call: str, names: tuple[str, ...] = ("gif", "mp4", "webp", "png")) -> list[str] | None:
    """A list of format names (["gif", "png"]) or None; TypeError for a single text or another
    type, naming `names` (the call's formats: a render's, or a still's png, tiff, exr)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, (list, tuple)):
        raise TypeError(
            f"{call}: formats must be a list of format names, e.g. {[names[0], names[-1]]}, got {_got(value)}"
        )
    for name in value:
        if not isinstance(name, str):
            raise TypeError(f"{call}: formats: each format is a name ({', '.join(names)}), got {_got(name)}")
    return list(value)


def flag_of(value, call: str, what: str) -> bool:
    """A True/False argument; TypeError otherwise (a text 'false' would count as True)."""
    if not isinstance(value, bool):
        raise TypeError(f"{call}: {what} must be True or False, got {_got(value)}")
    return value


def count_of(value, call: str, what: str) -> int:
    """A whole number (not a bool); TypeError otherwise. Its range is the command's to check."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{call}: {what} must be a whole number, got {_got(value)}")
    return value


def options_of(options: Mapping, allowed: tuple[str, ...], call: str) -> None:
    """TypeError naming an option `call` does not take, and those it does."""
    unknown = [name for name in options if name not in allowed]
    if unknown:
        raise TypeError(f"{call}: no option {', '.join(map(repr, unknown))}; it takes {', '.join(allowed)}")
