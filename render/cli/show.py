"""What the `physarum` command shows besides a render's files: the curated presets and example
sweeps listed, a curated preset's YAML, the status line a render starts with, and the line that
says what a GIF budget chose. Nothing here imports torch, nor builds the preset schema (pydantic)
but for a curated preset `listed` cannot read plainly: the light commands answer at once.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from physarum.render.base.errors import PresetError, ordinal, printable
from physarum.render.preset.catalog import PRESETS, Listed, listed, preset_files, read_shipped, sweep_files

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

    from physarum.render.preset import Preset, load_preset  # start-up: the same

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


def preset_text(name: str) -> str:
    """The YAML file of the curated preset `name`, as shipped (comments kept), to copy and edit;
    not validated here (the tests validate every curated preset). PresetError naming the curated
    presets where `name` is none of them."""
    path = PRESETS.resolve(name)
    if path.parent != PRESETS.folder():  # a path: this command prints the curated ones only
        names = ", ".join(PRESETS.names())
        raise PresetError([f"{name}: not a curated preset; curated presets: {names}"])
    return path.read_text(encoding="utf-8")


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


def print_budget(sidecar: Path, gif_size: tuple[int, int]) -> None:
    """Print budget_line on stderr where the render's sidecar holds a gif_budget report."""
    try:
        report = json.loads(sidecar.read_text(encoding="utf-8")).get("gif_budget")
    except (OSError, ValueError):
        return
    if isinstance(report, dict):
        print(printable(budget_line(report, gif_size)), file=sys.stderr)
