"""What `physarum render` renders: a preset file by path or name, or the preset a rendered file
carries (`--from FILE`: read within the loader's limits, its image paths confined to what it may
read, docs/safety.md), and the guard that a render never writes over FILE."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from physarum.render.catalog import resolve_preset_path
from physarum.render.encode import read_embedded
from physarum.render.errors import RenderError
from physarum.render.inputs import file_problem, shorten
from physarum.render.preset import Preset, PresetError, build_preset, load_preset, parse_yaml
from physarum.render.provenance import confinement_problems, version_note


def load_for_render(args) -> Preset:
    """The preset `physarum render` renders: the named preset file, or what `--from FILE` carries
    (read within the loader's limits, its image paths confined), with --set, --seed and --scale over it."""
    overrides = {"seed": args.seed}
    if args.scale is not None:  # a flag for output.gif_scale, so outputs carry it
        args.settings = [*args.settings, f"output.gif_scale={args.scale!r}"]
    if args.from_file:
        path = Path(args.from_file)
        problem = file_problem(path)  # before opening it: a FIFO would block
        if problem:
            raise PresetError([f"{path}: {problem}"])
        try:
            text = read_embedded(path)
        except Exception as error:
            raise PresetError(
                [f"{path}: carries no physarum preset ({type(error).__name__}: {shorten(str(error))})"]
            ) from None
        data = parse_yaml(text, f"{path} (its embedded preset)")  # text, within the loader's limits
        note = version_note(text, str(path))
        if note:
            print(f"note: {note}", file=sys.stderr)
        # embedded image paths are relative to the working directory (portable_dump), confined
        named = {setting.partition("=")[0].strip() for setting in args.settings}  # the user's own
        problems = confinement_problems(data, str(path), Path.cwd(), named) if isinstance(data, dict) else []
        if problems:
            raise PresetError(problems)
        return build_preset(data, str(path), args.settings, overrides, base=Path.cwd())
    return load_preset(resolve_preset_path(args.preset), args.settings, overrides)


def refuse_writing_over(source: Path, outputs: list[Path]) -> None:
    """render --from FILE never writes over FILE itself."""
    for path in outputs:
        if path.resolve() == source.resolve() or (path.exists() and os.path.samefile(path, source)):
            raise RenderError(
                f"render --from {source}: this render would write over {source} itself; "
                "give another output folder with --out"
            )
