"""physarum's Python API: load a preset, change it, render it to files or to frames in memory,
run a sweep, all with the command's validation and messages (PresetError, RenderError).

Thin over the stages of render/: nothing here imports torch until a simulation is made.
docs/api.md has examples.

`physarum.render` is both the stage package physarum.render (render/) and the call that renders
a preset: the package's module is made callable here (its class, a ModuleType whose __call__ is
render_files), because importing any physarum.render.X binds the package to that name.
"""

from __future__ import annotations

import json
import sys
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
__all__ += ["curves", "render", "render_files", "still", "sweep"]


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
    from physarum.render.commands import arguments, presets  # start-up: the preset stage, when used

    name = arguments.name_or_path_of(name_or_path, "physarum.load")
    return presets.load(name, arguments.settings_of(settings, "physarum.load"))


def change(preset: Preset, settings: dict) -> Preset:
    """The preset with `settings` (dotted keys, as `--set`) over it, validated again; every
    section it has is kept (checkpoint, output.fields and output.volume too)."""
    from physarum.render.commands import arguments, presets  # start-up: the preset stage, when used

    preset = arguments.preset_of(preset, "physarum.change")
    return presets.change(preset, arguments.settings_of(settings, "physarum.change"))


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
    device and timings. `out` may be an fsspec URL (s3://bucket/prefix): the files are stored
    there (the outputs are their URLs), as `physarum render --out URL` stores them. formats: output.formats for this render (default: the preset's).
    TypeError for an argument of the wrong type; the command's errors for what it refuses."""
    from physarum.render.commands import arguments, presets  # start-up: the preset stage, when used
    from physarum.render.commands import render as rendering  # start-up: torch, for a render only

    call = "physarum.render"
    preset = arguments.preset_of(preset, call)
    formats = arguments.formats_of(formats, call)
    request = rendering.RenderCall(
        out=rendering.destination(arguments.name_or_path_of(out, call, "out")),
        backend=arguments.text_of(backend, call, "backend", "auto, torch or triton"),
        device=arguments.text_of(device, call, "device", "cpu, cuda or cuda:N, or None", optional=True),
        quiet=arguments.flag_of(quiet, call, "quiet"),
    )
    if formats is not None:
        preset = presets.change(preset, [f"output.formats={json.dumps(formats)}"])
    return rendering.run(preset, request, say=_say).result


def still(
    preset: Preset,
    out: str | Path = "outputs",
    step: int | None = None,
    size: int | None = None,
    print_size: str | None = None,
    dpi: int | None = None,
    formats: list[str] | None = None,
    backend: str = "auto",
    device: str | None = None,
    quiet: bool = True,
):
    """One step's frame as a print, as `physarum still` makes it (nothing else rendered): the
    still at `step` (default the last) at `size` (its long side in pixels) or within
    `print_size` ("30x40cm", mm, cm or in) at `dpi`, as 16-bit PNG and TIFF and an EXR of the
    linear light (formats: default all three) under OUT/<name>/. Its result: `paths` by format,
    step, size, backend, device, seconds, notes. What the command refuses is refused here, with
    its message (RenderError); TypeError for an argument of the wrong type."""
    from physarum.render.commands import arguments  # start-up: light, with the call
    from physarum.render.commands import still as stills  # start-up: torch, for a still only

    call = "physarum.still"
    optional = {"step": step, "size": size, "dpi": dpi}
    for what, value in optional.items():
        if value is not None:
            arguments.count_of(value, call, what)
    if print_size is not None:
        arguments.text_of(print_size, call, "print_size", "a print size like '30x40cm'")
    formats = arguments.formats_of(formats, call, stills.STILL_FORMATS)
    request = stills.StillCall(
        out=arguments.folder_of(out, call),
        step=step,
        size=size,
        print_size=print_size,
        dpi=dpi,
        formats=None if formats is None else tuple(formats),
        backend=arguments.text_of(backend, call, "backend", "auto, torch or triton"),
        device=arguments.text_of(device, call, "device", "cpu, cuda or cuda:N, or None", optional=True),
        quiet=arguments.flag_of(quiet, call, "quiet"),
    )
    return stills.run(arguments.preset_of(preset, call), request, say=_say)


def curves(preset: Preset, plot: str | Path | None = None) -> dict[str, list[float]]:
    """The resolved curve of each key the preset's soundtrack or a periodic shape drives
    (docs/audio.md): by dotted key ("model.deposit"), its value at each frame of the run (frame
    f's: what its steps and its look use), the exact values as floats. With `plot` (a .png
    path), also a PNG of them, one panel a key against the track's time (a file in an existing
    folder, written whole). {} for a preset without such keys. RenderError where the plot
    cannot be made (no such keys, no .png name, no folder); TypeError for a wrong type."""
    from physarum.render.commands import arguments  # start-up: light, with the call
    from physarum.render.preset import audio  # start-up: the preset stage, when used

    call = "physarum.curves"
    preset = arguments.preset_of(preset, call)
    if plot is not None:
        try:
            audio.plot_curves(preset, Path(arguments.name_or_path_of(plot, call, "plot")))
        except ValueError as error:
            raise RenderError(f"{call}: plot: {error}") from None
    return {path: [float(v) for v in values] for path, values in audio.frame_values(preset).items()}


def _say(line: str) -> None:
    """A line a render speaks before it starts (quiet=False), on stderr."""
    print(line, file=sys.stderr, flush=True)


class _RenderPackage(types.ModuleType):
    """physarum.render: the stage package, callable as render_files."""

    def __call__(self, preset: Preset, out: str | Path = "outputs", **options):
        from physarum.render.commands import arguments  # start-up: light, with the call

        arguments.options_of(options, ("formats", "backend", "device", "quiet"), "physarum.render")
        return render_files(preset, out, **options)


_stages.__class__ = _RenderPackage
render = _stages


def images(preset: Preset, backend: str = "auto", device: str | None = None) -> Iterator:
    """Each frame as a PIL image (RGB), in order, as it is coloured: the render runs on a worker
    thread ahead of your loop by a few frames at most (memory stays flat for any run length) and
    writes no file. Breaking out of the loop (or closing the iterator) stops the render at its
    next frame: no thread, file or lock is left. The frames are those of the preset's files (a
    ping-pong loop's replayed frames included); its checkpoints, fields and volume exports are
    files, which a stream leaves out. TypeError for an argument of the wrong type, at the call."""
    from PIL import Image

    return (Image.fromarray(frame, "RGB") for frame in _streamed(preset, backend, device, "physarum.images"))


def frames(preset: Preset, backend: str = "auto", device: str | None = None) -> Iterator:
    """Each frame as a numpy array [height, width, 3] uint8 (a copy of its own), in order, as
    it is coloured (as images(): streamed from a worker thread, no file written, a broken loop
    stops the render)."""
    return _streamed(preset, backend, device, "physarum.frames")


def _streamed(preset, backend, device, call: str) -> Iterator:
    """The arguments checked now (not at the first frame), then the frames' generator."""
    from physarum.render.commands import arguments  # start-up: light, with the call

    preset = arguments.preset_of(preset, call)
    backend = arguments.text_of(backend, call, "backend", "auto, torch or triton")
    device = arguments.text_of(device, call, "device", "cpu, cuda or cuda:N, or None", optional=True)
    return _rgb_frames(preset, backend, device)


def _rgb_frames(preset: Preset, backend: str, device: str | None) -> Iterator:
    from physarum.render.run.stream import FrameStream  # start-up: torch, for a render only

    with FrameStream(preset, backend, device) as stream:
        for frame in stream:
            yield frame.rgb


SWEEP_OPTIONS = ("backend", "devices", "ray", "files", "max_attempts", "max_batch", "retry_failed")
SWEEP_OPTIONS += ("per_node", "gallery", "quiet")


def sweep(name_or_path: str | Path, out: str | Path = "outputs", dry_run: bool = False, **options):
    """Run a sweep (an example sweep by name, or a file) as `physarum sweep`: its SweepSummary;
    with dry_run, the lines `--dry-run` prints. options: backend, devices, ray, files ("driver" or
    "workers"), max_attempts, per_node, max_batch, retry_failed, gallery, quiet (the command's
    flags). What the command refuses is refused here, with its message (a 3D preset's job, a
    batch below 1, files other than driver or workers, max_attempts or per_node below 1, any of
    files, max_attempts and per_node without ray)."""
    from physarum.render.commands import arguments  # start-up: light, with the call
    from physarum.render.commands import sweep as sweeping  # start-up: the sweep stage, when used

    call = "physarum.sweep"
    arguments.options_of(options, SWEEP_OPTIONS, call)
    name = arguments.name_or_path_of(name_or_path, call)
    folder = arguments.folder_of(out, call)
    max_batch = options.pop("max_batch", None)
    if max_batch is not None:
        arguments.count_of(max_batch, call, "max_batch")
    files = options.pop("files", None)
    if files is not None:
        arguments.text_of(files, call, "files", "driver or workers")
    max_attempts = options.pop("max_attempts", None)
    if max_attempts is not None:
        arguments.count_of(max_attempts, call, "max_attempts")
    per_node = options.pop("per_node", None)
    if per_node is not None:
        arguments.count_of(per_node, call, "per_node")
    for flag in ("retry_failed", "gallery", "quiet"):
        if flag in options:
            arguments.flag_of(options[flag], call, flag)
    loaded = sweeping.load(name)
    if arguments.flag_of(dry_run, call, "dry_run"):
        return sweeping.dry_run(loaded, folder, max_batch, files, max_attempts, options.get("ray"), per_node)
    return sweeping.run(
        loaded, folder, max_batch, files, max_attempts, per_node, **{"quiet": True, **options}
    )
