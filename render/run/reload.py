"""What `physarum render` renders: a preset file by path or name, or the preset a rendered file
carries (`--from FILE`: read within the loader's limits, with the images the file carries, or
those under the folder `--images DIR` names, docs/safety.md), and the guard that a render never
writes over FILE."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from physarum.render.base.errors import RenderError
from physarum.render.base.inputs import file_problem, shorten
from physarum.render.formats.registry import read_embedded
from physarum.render.preset import Preset, PresetError, build_preset, carried, load_preset, parse_yaml
from physarum.render.preset.catalog import resolve_preset_path
from physarum.render.preset.provenance import confinement_problems, image_paths, is_shipped, version_note


def load_for_render(args) -> Preset:
    """The preset `physarum render` renders: the named preset file, or what `--from FILE` carries
    (read within the loader's limits, with its carried images or those under --images DIR), with
    --set, --seed and --scale over it."""
    overrides = {"seed": args.seed}
    if args.scale is not None:  # a flag for output.gif_scale, so outputs carry it
        args.settings = [*args.settings, f"output.gif_scale={args.scale!r}"]
    folder = getattr(args, "images", None)
    if args.from_file:
        return _load_from(Path(args.from_file), args.settings, overrides, folder)
    if folder is not None:
        raise PresetError(
            [f"--images {folder}: names the folder of a --from FILE's images; give --from FILE"]
        )
    return load_preset(resolve_preset_path(args.preset), args.settings, overrides)


def _load_from(path: Path, settings: list[str], overrides: dict, folder: str | None) -> Preset:
    problem = file_problem(path)  # before opening it: a FIFO would block
    if problem:
        raise PresetError([f"{path}: {problem}"])
    try:
        text = read_embedded(path)
    except Exception as error:
        raise PresetError(
            [f"{path}: carries no physarum preset ({type(error).__name__}: {shorten(str(error))})"]
        ) from None
    note = version_note(carried.split(text)[0], str(path)) if isinstance(text, str) else None
    if note:
        print(f"note: {note}", file=sys.stderr)
    return carried_preset(text, str(path), settings, overrides, folder)


def carried_preset(text, source: str, settings: list[str], overrides: dict, folder: str | None) -> Preset:
    """The preset of an embedded text a stranger's file carries (a rendered file's, a
    checkpoint's), read within the loader's limits, with --set and the overrides over it: its
    images are those the text carries, or with `folder` (--images DIR) those under it (confined);
    no other local file is read. `source` names the file in messages."""
    preset_text, block = carried.split(text) if isinstance(text, str) else (text, None)
    data = parse_yaml(preset_text, f"{source} (its embedded preset)")  # within the loader's limits
    named = {setting.partition("=")[0].strip() for setting in settings}  # the user's own
    images = _images(data, block, source, folder, named) if isinstance(data, dict) else {}
    return build_preset(data, source, settings, overrides, base=Path.cwd(), carried=images)


def _images(data: dict, block: str | None, source: str, folder: str | None, named: set[str]) -> dict:
    """The images the render of a carried preset reads, by the path the preset names: those under
    `folder` (--images, confined) or those the file carries; PresetError where a path can be
    neither. The shipped images are read where the file carries none (they are no private file)."""
    wanted = image_paths(data, named)
    if folder is not None:
        return _folder_images(wanted, data, source, Path(folder), named)
    if not wanted:
        return {}
    try:
        found = carried.read_block(block) if block is not None else {}
    except ValueError as error:
        raise PresetError([f"{source}: its carried images cannot be read: {error}"]) from None
    missing = [key for key, value in wanted if value not in found and not is_shipped(value)]
    if missing:
        which = "carries none" if block is None else "does not carry them"
        raise PresetError(
            [
                f"{source}: names images ({', '.join(missing)}) but {which} (files of output version 2 "
                "and earlier carry no images): give the folder they lie in with --images DIR "
                "(their paths are read relative to it)"
            ]
        )
    return {value: found[value] for _, value in wanted if value in found}


def _folder_images(wanted, data: dict, source: str, folder: Path, named: set[str]) -> dict:
    """The images a carried preset names, read from under --images DIR (confined)."""
    if not folder.is_dir():
        raise PresetError([f"--images {folder}: no such folder; give the folder the file's images lie in"])
    problems = confinement_problems(data, source, folder, named)
    if problems:
        raise PresetError(problems)
    images, problems = {}, []
    for key, value in wanted:
        if is_shipped(value) or value in images:
            continue
        try:
            images[value] = carried.FolderImage.of(value, folder / value)
        except ValueError as error:
            problems.append(f"{source}: {key}: {error}")
    if problems:
        raise PresetError(problems)
    return images


def refuse_writing_over(source: Path, outputs: list[Path]) -> None:
    """render --from FILE never writes over FILE itself."""
    for path in outputs:
        if path.resolve() == source.resolve() or (path.exists() and os.path.samefile(path, source)):
            raise RenderError(
                f"render --from {source}: this render would write over {source} itself; "
                "give another output folder with --out"
            )
