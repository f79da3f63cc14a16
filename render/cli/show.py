"""What the `physarum` command shows besides a render's files: the curated presets and example
sweeps listed, a curated preset's YAML, the status line a render starts with, and the line that
says what a GIF budget chose. Nothing here imports torch, nor builds the preset schema (pydantic)
but for a curated preset `listed` cannot read plainly: the light commands answer at once.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from ..base.errors import PresetError, RenderError, ordinal, printable
from ..base.files import commit_together, stage
from ..preset.catalog import (
    PRESETS,
    Listed,
    listed,
    named_images,
    preset_files,
    read_shipped,
    sweep_files,
)

MB = 1_000_000  # budgets are given in decimal units (10MB: 10,000,000 bytes)


def preset_lines() -> list[str]:
    """One line per curated preset: name, canvas, agents and description, read from its YAML as
    written (catalog.listed: the curated presets are validated by the tests, so the listing shows
    no broken preset), or from the validated preset where a value is not plainly written."""
    lines = []
    for path in preset_files():
        entry = listed(path) or _validated(path)
        lines.append(f"{entry.name:<14} {entry.size:>11} {entry.agents:>9} agents  {entry.description}")
    return lines


def _validated(path: Path) -> Listed:
    """A curated preset's listing from the schema: validated, its images' headers read but not
    decoded (load_preset decodes them on the canvas, which loads numpy: the listing would start
    slower). One the schema refuses is loaded by load_preset, for its message."""
    from pydantic import ValidationError  # start-up: the schema, only where `listed` cannot read

    from ..preset import Preset, load_preset  # start-up: the same

    try:
        preset = Preset.model_validate(read_shipped(path), context={"base": path.parent, "carried": {}})
    except ValidationError:
        preset = load_preset(path)
    return Listed(
        preset.name,
        preset.canvas.width,
        preset.canvas.height,
        preset.agents.count,
        preset.description,
        preset.canvas.depth,
    )


def curated_path(name: str) -> Path:
    """The file of the curated preset `name`; PresetError naming the curated presets where
    `name` is none of them (a path too: these commands show the curated ones only)."""
    path = PRESETS.resolve(name)
    if path.parent != PRESETS.folder():
        names = ", ".join(PRESETS.names())
        raise PresetError([f"{name}: not a curated preset; curated presets: {names}"])
    return path


def preset_text(name: str) -> str:
    """The YAML file of the curated preset `name`, as shipped (comments kept), to copy and edit;
    not validated here (the tests validate every curated preset). PresetError naming the curated
    presets where `name` is none of them.

    A preset that names images (relative to its own file: presets/images/...) is printed with a
    first comment line saying so and how to get a copy that validates anywhere (`--copy DIR`).
    The YAML is printed as shipped rather than with its image paths made absolute: such a file
    would validate only on this install, and stop where the package moves or is upgraded."""
    path = curated_path(name)
    text = path.read_text(encoding="utf-8")
    images = named_images(read_shipped(path))
    if not images:
        return text
    return (
        f"# {', '.join(images)}: relative to this file's folder; "
        f"`physarum presets {path.stem} --copy DIR` writes it with its images, to validate anywhere\n"
    ) + text


def copy_preset(name: str, folder: str | Path) -> list[Path]:
    """`physarum presets NAME --copy DIR`: the curated preset's YAML (as shipped, comments
    kept) as DIR/NAME.yaml and each image it names at the same path relative to it (its paths
    are relative to its own file, so `physarum validate DIR/NAME.yaml` and `render` find them
    from any working folder, with no path rewritten). All the files or none: each is written
    under a temporary name and they are moved in place together (files.commit_together).
    RenderError, nothing written, where any of them exists already. The files written."""
    path = curated_path(name)
    folder = Path(folder)
    if os.path.lexists(folder) and not folder.is_dir():
        raise RenderError(f"--copy: {folder} is not a folder; nothing was written")
    sources = {folder / path.name: path}
    for written in named_images(read_shipped(path)):
        relative = Path(written)
        if relative.is_absolute() or ".." in relative.parts:  # none of the curated presets does
            raise RenderError(f"{path.stem}: its image {written} lies outside its folder; copy it by hand")
        sources[folder / relative] = path.parent / relative
    existing = [str(target) for target in sources if os.path.lexists(target)]
    if existing:
        raise RenderError(
            f"--copy: {', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; "
            "nothing was written (remove them, or copy into another folder)"
        )
    made: list[Path] = []  # the folders made here, removed again if the copy fails
    partials = []
    try:
        for target, source in sources.items():
            missing = [p for p in (target.parent, *target.parent.parents) if not p.exists()]
            for parent in reversed(missing):
                parent.mkdir()
                made.append(parent)
            data = source.read_bytes()
            partials.append(stage(target, lambda file, data=data: file.write(data)))
        if any(os.path.lexists(target) for target in sources):  # one appeared meanwhile
            raise RenderError(f"--copy: a file appeared in {folder} while copying; nothing was written")
        commit_together(partials)
    except BaseException:
        for partial in partials:
            partial.abort()
        for parent in reversed(made):
            parent.rmdir()
        raise
    return list(sources)


def sweep_lines() -> list[str]:
    """One line per example sweep: the name `physarum sweep NAME` takes, and its description
    (read as safe YAML only: no job is expanded)."""
    lines = []
    for path in sweep_files():
        description = read_shipped(path).get("description", "")
        lines.append(f"{path.stem:<16} {description}")
    return lines


def status(quiet: bool, what: str) -> None:
    """One short line on stderr saying what a render is doing ("physarum: loading torch..."),
    unless quiet: a render speaks from its first second, before its heavy imports."""
    if not quiet:
        print(f"physarum: {what}...", file=sys.stderr, flush=True)


def megabytes(size: int) -> str:
    """A byte count as a short decimal size: 1.9 MB, 850 KB, 900 bytes."""
    if size >= MB:
        return f"{size / MB:.1f} MB"
    if size >= 1000:
        return f"{size / 1000:.0f} KB"
    return f"{size} bytes"


def budget_line(report: dict, gif_size: tuple[int, int]) -> str:
    """What a GIF budget chose (the sidecar's gif_budget report), in one line: "gif: 1.9 MB
    within the 2.0 MB budget: 128x128, every 2nd frame, 32 levels". gif_size: the GIF's size
    before the budget's downscale."""
    factor = int(report["downscale"])
    width, height = (max(1, side // factor) for side in gif_size)
    stride = int(report["stride"])
    frames = "every frame" if stride == 1 else f"every {ordinal(stride)} frame"
    return (
        f"gif: {megabytes(int(report['bytes']))} within the {megabytes(int(report['max_bytes']))} "
        f"budget: {width}x{height}, {frames}, {report['levels']} levels"
    )


def print_budget(sidecar: Path, gif_size: tuple[int, int], text: str | None = None) -> None:
    """Print budget_line on stderr where the render's sidecar (its `text`, where given: a sidecar
    stored in object storage) holds a gif_budget report."""
    try:
        report = json.loads(sidecar.read_text(encoding="utf-8") if text is None else text).get("gif_budget")
    except (OSError, ValueError):
        return
    if isinstance(report, dict):
        print(printable(budget_line(report, gif_size)), file=sys.stderr)


def print_copy(name: str | None, folder: str) -> int:
    """`physarum presets NAME --copy DIR`: copy_preset, then the files written and the command
    that checks the copy; RenderError where no NAME is given."""
    if name is None:
        raise RenderError(
            "presets --copy DIR: name the curated preset to copy (physarum presets NAME --copy DIR)"
        )
    written = copy_preset(name, folder)
    for path in written:
        print(printable(f"wrote {path}"))
    print(printable(f"check it from anywhere: physarum validate {written[0]}"))
    return 0
