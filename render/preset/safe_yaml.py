"""The one YAML loader of presets, sweeps, `--set` values and the texts `render --from` reads."""

from __future__ import annotations

import yaml

from physarum.render.errors import PresetError


def parse_yaml(text: str, source: str) -> dict:
    try:
        data = yaml.safe_load(text)
    except yaml.constructor.ConstructorError as error:
        where = f" at line {error.problem_mark.line + 1}" if error.problem_mark else ""
        raise PresetError(
            [
                f"{source}: YAML tag not allowed{where}: {error.problem}; presets are "
                "plain data (mappings, lists, numbers, strings)"
            ]
        ) from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise PresetError([f"{source}: malformed YAML{where}: {problem}"]) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise PresetError([f"{source}: a preset is a mapping of keys to values, got {type(data).__name__}"])
    return data
