"""physarum's Python API: load a preset, change it, render it to files or to frames in memory,
run a sweep, all with the command's validation and messages (PresetError, RenderError).

Thin over the stages of render/: nothing here imports torch until a simulation is made.
docs/api.md has examples.

`physarum.render` is both the stage package physarum.render (render/) and the call that renders
a preset: the package's module is made callable here (its class, a ModuleType whose __call__ is
render_files), because importing any physarum.render.X binds the package to that name.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import physarum.render as _stages
from physarum.render import __version__
from physarum.render.base.errors import PresetError, RenderError

if TYPE_CHECKING:
    from physarum.render.preset import Preset

# Importing physarum (as every physarum.X import does first: kernels, worker processes) loads
# only render/__init__ and base/errors; each call imports the stages it needs (`# start-up:`).

__all__ = ["Preset", "PresetError", "RenderError", "__version__", "change", "frames", "images", "load"]
__all__ += ["render", "render_files", "sweep"]


def _settings(settings: dict | None) -> list[str]:
    """{"model.decay": 0.2} as --set settings (values written as YAML, as --set reads them)."""
    import json

    return [f"{key}={json.dumps(value)}" for key, value in (settings or {}).items()]


def __getattr__(name: str):
    """physarum.Preset, imported when first asked for."""
    if name == "Preset":
        from physarum.render.preset import Preset  # start-up: the preset stage, when used

        return Preset
    raise AttributeError(f"module 'physarum' has no attribute {name!r}")


def load(name_or_path: str | Path, settings: dict | None = None) -> Preset:
    """A curated preset by name, or a preset file, validated, with `settings` over it: dotted
    keys as `--set` takes them, e.g. load("quickstart", {"run.steps": 100}). PresetError lists
    every problem at once."""
    from physarum.render.preset import load_preset  # start-up: the preset stage, when used
    from physarum.render.preset.catalog import resolve_preset_path  # start-up: the same

    return load_preset(resolve_preset_path(str(name_or_path)), _settings(settings))


def change(preset: Preset, settings: dict) -> Preset:
    """The preset with `settings` (dotted keys, as `--set`) over it, validated again."""
    from physarum.render.preset import build_preset  # start-up: the preset stage, when used

    return build_preset(preset.portable_dump(), preset.name, _settings(settings))


def render_files(
    preset: Preset,
    out: str | Path = "outputs",
    formats: list[str] | None = None,
    backend: str = "auto",
    device: str | None = None,
    quiet: bool = True,
):
    """Render to files under `out` (as `physarum render`: OUT/<name>/<name>-s<seed>.<format>);
    the RenderResult: its `outputs` (paths by format, and the sidecar's as "json"), backend,
    device and timings. formats: output.formats for this render (default: the preset's)."""
    from physarum.render.run.runner import render as run  # start-up: torch, for a render only

    if formats is not None:
        preset = change(preset, {"output.formats": list(formats)})
    return run(preset, backend=backend, device=device, out_dir=Path(out), quiet=quiet)


class _RenderPackage(types.ModuleType):
    """physarum.render: the stage package, callable as render_files."""

    def __call__(self, preset: Preset, out: str | Path = "outputs", **options):
        return render_files(preset, out, **options)


_stages.__class__ = _RenderPackage
render = _stages


def images(preset: Preset, backend: str = "auto", device: str | None = None) -> Iterator:
    """Each frame as a PIL image (RGB), in order, as it is coloured: the render runs on a worker
    thread ahead of your loop by a few frames at most (memory stays flat for any run length) and
    writes no file. Breaking out of the loop (or closing the iterator) stops the render at its
    next frame: no thread, file or lock is left. The frames are those of the preset's files (a
    ping-pong loop's replayed frames included); its checkpoints, fields and volume exports are
    files, which a stream leaves out."""
    from PIL import Image

    for frame in frames(preset, backend, device):
        yield Image.fromarray(frame, "RGB")


def frames(preset: Preset, backend: str = "auto", device: str | None = None) -> Iterator:
    """Each frame as a numpy array [height, width, 3] uint8 (a copy of its own), in order, as
    it is coloured (as images(): streamed from a worker thread, no file written, a broken loop
    stops the render)."""
    from physarum.render.run.stream import FrameStream  # start-up: torch, for a render only

    with FrameStream(preset, backend, device) as stream:
        for frame in stream:
            yield frame.rgb


def sweep(name_or_path: str | Path, out: str | Path = "outputs", dry_run: bool = False, **options):
    """Run a sweep (an example sweep by name, or a file) as `physarum sweep`; with dry_run, the
    lines `--dry-run` prints. options: those of SweepOptions (backend, devices, max_batch...)."""
    from physarum.render import sweep as sweeps  # start-up: the sweep stage (torch for a run, not a dry run)
    from physarum.render.preset.catalog import resolve_sweep_path  # start-up: the catalog

    loaded = sweeps.load_sweep(resolve_sweep_path(str(name_or_path)))
    max_batch = options.pop("max_batch", sweeps.DEFAULT_MAX_BATCH)
    if dry_run:
        return sweeps.dry_run_lines(loaded, Path(out), max_batch)
    return sweeps.run_sweep(
        loaded, sweeps.SweepOptions(out_dir=Path(out), max_batch=max_batch, quiet=True, **options)
    )
