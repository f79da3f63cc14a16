"""What `physarum render` renders: a preset file by path or name, or the preset a rendered file
carries (`--from FILE`: read within the loader's limits, with the images the file carries, or
those under the folder `--images DIR` names, docs/safety.md; its soundtrack, features and sound
file, only as FILE carries it, messages naming the sound file), and the guard that a render never
writes over FILE.

A shared file decides only what it renders: the sections that say how a render keeps its state
or writes extras (LOCAL_SECTIONS: checkpoints, raw fields, volume exports) are never taken from
it, only from the user's own flags and --set. A file whose sidecar records other encoder builds than this
install's gets a note that its MP4 and WebP may differ (provenance.builds_note)."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from ..base.errors import RenderError, printable
from ..base.files import parse_json
from ..base.inputs import excerpt, file_problem, read_text, shorten
from ..formats.registry import SIDECAR_BYTES, read_embedded
from ..out.specs import output_paths, output_stem
from ..preset import Preset, PresetError, build_preset, carried, load_preset, parse_yaml
from ..preset.catalog import resolve_preset_path
from ..preset.provenance import (
    builds_note,
    check_readable,
    confinement_problems,
    image_paths,
    is_shipped,
    version_note,
)

# The sections of a preset that say how a render keeps its state or writes extras, not what it
# renders (outputs never embed them): never taken from a shared file, as dotted paths.
LOCAL_SECTIONS = ("checkpoint", "output.fields", "output.volume")


def load_for_render(args) -> Preset:
    """The preset `physarum render` renders: the named preset file, or what `--from FILE` carries
    (read within the loader's limits, with its carried images or those under --images DIR), with
    --set, --seed and --scale over it. Refused (one message, nothing written) where its outputs
    would embed a text `--from` could not read back (provenance.check_readable), or where a
    --from render would write over FILE (refuse_writing_over_input)."""
    overrides = {"seed": args.seed}
    if args.scale is not None:  # a flag for output.gif_scale, so outputs carry it
        args.settings = [*args.settings, f"output.gif_scale={args.scale!r}"]
    folder = getattr(args, "images", None)
    if args.from_file:
        source = Path(args.from_file)
        preset = _load_from(source, args.settings, overrides, folder)
        frames_dir = getattr(args, "frames_dir", None)
        refuse_writing_over_input(source, preset, Path(args.out), Path(frames_dir) if frames_dir else None)
    elif folder is not None:
        raise PresetError(
            [f"--images {folder}: names the folder of a --from FILE's images; give --from FILE"]
        )
    else:
        preset = load_preset(resolve_preset_path(args.preset), args.settings, overrides)
    check_readable(preset)  # what a render writes, --from reads back: refused before anything is written
    return preset


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
    notes = [version_note(carried.split(text)[0], str(path)) if isinstance(text, str) else None]
    notes.append(_sidecar_builds_note(path))
    preset = carried_preset(text, str(path), settings, overrides, folder, notes)
    for note in filter(None, notes):
        print(f"note: {note}", file=sys.stderr)
    return preset


def carried_preset(
    text, source: str, settings: list[str], overrides: dict, folder: str | None, notes: list | None = None
) -> Preset:
    """The preset of an embedded text a stranger's file carries (a rendered file's, a
    checkpoint's), read within the loader's limits, without its LOCAL_SECTIONS, with --set and
    the overrides over it: its images are those the text carries, or with `folder` (--images
    DIR) those under it (confined); no other local file is read. `source` names the file in
    messages; `notes`, where given, gets a printable line naming the sections left out."""
    preset_text, block = carried.split(text) if isinstance(text, str) else (text, None)
    data = parse_yaml(preset_text, f"{source} (its embedded preset)")  # within the loader's limits
    dropped = drop_local_sections(data)
    if dropped and notes is not None:
        notes.append(
            printable(
                f"{source}: its preset's {' and '.join(dropped)} are not taken from a shared file "
                "(they say how a render keeps its state or writes extras, not what it renders); "
                "ask for them with your own flags (--checkpoint-every, --checkpoint-at, --fields-at, "
                "--set output.volume...)"
            )
        )
    named = {setting.partition("=")[0].strip() for setting in settings}  # the user's own
    images = _images(data, block, source, folder, named) if isinstance(data, dict) else {}
    return build_preset(data, source, settings, overrides, base=Path.cwd(), carried=images)


def drop_local_sections(data) -> list[str]:
    """Remove LOCAL_SECTIONS from raw preset data (in place); the dotted paths it removed."""
    dropped = []
    for dotted in LOCAL_SECTIONS:
        *parents, last = dotted.split(".")
        node = data
        for part in parents:
            node = node.get(part) if isinstance(node, dict) else None
        if isinstance(node, dict) and last in node:
            del node[last]
            dropped.append(dotted)
    return dropped


def _sidecar_builds_note(path: Path) -> str | None:
    """provenance.builds_note for the sidecar beside a --from FILE (FILE itself when it is one:
    <stem>.json for <stem>.<format>); None where there is none or it cannot be read (a note only:
    what the render reads is FILE)."""
    sidecar = path if path.suffix.lower() == ".json" else path.with_suffix(".json")
    if file_problem(sidecar):
        return None
    try:
        recorded = parse_json(read_text(sidecar, SIDECAR_BYTES)).get("encoders")
    except Exception:  # not JSON, too deep, too large, not a mapping: a stranger's file, no note
        return None
    return builds_note(recorded, str(sidecar))


SOUND_KEY = "audio.path"  # the one path of a preset that names a sound file, not an image


def _images(data: dict, block: str | None, source: str, folder: str | None, named: set[str]) -> dict:
    """The images and soundtrack the render of a carried preset reads, by the path the preset
    names: images under `folder` (--images, confined) or those the file carries, its soundtrack
    (features, and the sound file with audio.carry) only as the file carries it; PresetError where
    a path can be neither, naming an image or the sound file as it is. The shipped images and
    sounds are read where the file carries none (they are no private file)."""
    wanted = image_paths(data, named)
    sounds = [(key, value) for key, value in wanted if key == SOUND_KEY]
    images = [(key, value) for key, value in wanted if key != SOUND_KEY]
    found = {} if folder is None else _folder_images(images, data, source, Path(folder), named | {SOUND_KEY})
    asked = sounds if folder is not None else wanted
    if not asked:
        return found
    try:
        block_entries = carried.read_block(block) if block is not None else {}
    except ValueError as error:
        what = " and ".join(
            name for name, given in (("images", images and folder is None), ("soundtrack", sounds)) if given
        )
        raise PresetError([f"{source}: its carried {what} cannot be read: {error}"]) from None
    _refuse_missing(images if folder is None else [], sounds, block_entries, block, source)
    return {**found, **{value: block_entries[value] for _, value in asked if value in block_entries}}


def _refuse_missing(images, sounds, entries: dict, block: str | None, source: str) -> None:
    """PresetError where an image or the sound file the preset names is neither carried nor shipped."""
    missing = [key for key, value in images if value not in entries and not is_shipped(value)]
    if missing:
        which = "carries none" if block is None else "does not carry them"
        raise PresetError(
            [
                f"{source}: names images ({', '.join(missing)}) but {which} (files of output version 2 "
                "and earlier carry no images): give the folder they lie in with --images DIR "
                "(their paths are read relative to it)"
            ]
        )
    for key, value in sounds:
        if value not in entries and not is_shipped(value):
            raise PresetError(
                [
                    printable(
                        f"{source}: names the sound file {excerpt(value)} ({key}) but carries neither "
                        "it nor its soundtrack's features (a file read back is followed without its "
                        "sound file only where it carries them): give the sound file with "
                        f"--set {key}=FILE"
                    )
                ]
            )


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
    """render --from FILE never writes over FILE itself: RenderError where one of `outputs` is FILE."""
    for path in outputs:
        if path.resolve() == source.resolve() or (path.exists() and os.path.samefile(path, source)):
            raise RenderError(
                f"render --from {source}: this render would write over {source} itself; "
                "give another output folder with --out"
            )


def refuse_writing_over_input(source: Path, preset: Preset, out: Path, frames_dir: Path | None) -> None:
    """render --from FILE never writes over FILE: RenderError (one message, before anything is
    written) where FILE is one of the files this render of `preset` may write: its outputs,
    sidecar and stats (under `out`), a frame of --frames-dir, a raw field, a volume export (a 3D
    preset's volumes, a 2D preset's space-time stack: any suffix, since a file of no format's
    suffix is read as a PNG), a checkpoint or a print still (output.still)."""
    outputs = output_paths(preset, out)
    refuse_writing_over(source, [*outputs.values(), outputs["json"].with_suffix(".stats.csv")])
    stem, folder = re.escape(output_stem(preset)), outputs["json"].parent
    kinds = [(frames_dir, rf"{stem}-\d{{5,}}\.png", "a frame of --frames-dir", "--frames-dir")]
    if preset.output.fields is not None:
        kinds.append((folder, rf"{stem}-fields-\d+(-species\d+)?\.(npz|png)", "a raw field", "--out"))
    if preset.output.volume is not None:
        label = r"volume-\d+" if preset.dims == 3 else "spacetime"
        kinds.append((folder, rf"{stem}-{label}\.(npz|npy|obj|stl)", "a volume export", "--out"))
    if preset.checkpoint is not None:
        kinds.append((folder, rf"{stem}-checkpoint-\d+\.npz", "a checkpoint", "--out"))
    if preset.output.still is not None:
        kinds.append((folder, rf"{stem}-still\.(png|tiff|exr)", "a print still", "--out"))
    real = source.resolve()
    for where, pattern, what, instead in kinds:
        if where is not None and _same_folder(real.parent, where) and re.fullmatch(pattern, real.name):
            raise RenderError(
                printable(
                    f"render --from {source}: this render would write over {source} itself ({what} "
                    f"of the same name); give {instead} another folder, or copy the file elsewhere first"
                )
            )


def _same_folder(folder: Path, other: Path) -> bool:
    """Whether two folders are one (links resolved; `other` may not exist yet)."""
    try:
        return folder == other.resolve() or (other.exists() and os.path.samefile(folder, other))
    except OSError:
        return False
