"""A print still, `physarum still PRESET` (render/cli/main.py) and `physarum.still`
(physarum_api/): the one place that checks, assembles and runs it, so that both faces refuse the
same inputs with the same messages.

A still renders only what it needs: the simulation up to the chosen step (--step N, default the
last: run.steps), then that one frame coloured in 16 bits (render/look/still.py), enlarged to the
chosen size and written as a 16-bit PNG and TIFF with the sRGB profile and DPI, and an EXR of the
linear light (render/formats/still.py); no GIF, MP4 or sidecar. Its picture is exactly the still
a render of the preset with run.steps = N makes (output.still; loops, targets and extra files
left out, which change no step): the preset it embeds is that one, so `render --from` the PNG
renders the animation that ends on it.

The size: --size L (the long side, in pixels) or --print WxH{mm,cm,in} at --dpi D (default 300:
the largest picture of the frame's aspect within the print), never below the frame (a still is
the frame enlarged, each pixel the one under it). Refused before any work (RenderError, one
message): a step outside 1 .. run.steps, a size below the frame's, a still the host's memory or a
file's own limits cannot hold (naming the largest --size, or --dpi, that fits here), and a
preset with no single light (3D, species, heading).
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path

from ..base import lazy
from ..base.errors import RenderError
from ..base.files import commit_together, remove_stale_parts_of
from ..base.interrupts import signals_interrupt
from ..base.storage import is_url, restored
from ..formats.still import (
    STILL_FORMATS,
    check_kind,
    format_fits,
    host_available,
    size_problem,
    still_files,
    still_fits,
    written_formats,
)

# start-up: loaded at first use (base/lazy.py)
np = lazy.module("numpy")

INCHES = {"mm": Fraction(10, 254), "cm": Fraction(100, 254), "in": Fraction(1)}  # a unit's inches
PRINT = re.compile(r"(\d{1,4}(?:\.\d{1,3})?)x(\d{1,4}(?:\.\d{1,3})?)(mm|cm|in)")
DEFAULT_DPI = 300
MAX_DPI = 4800  # output.still.dpi's and output.png_dpi's most
MAX_SIDE = 2**20  # --size's most (memory and the files' limits refuse far less)


@dataclass(frozen=True)
class StillCall:
    """What still is asked for besides the preset: the flags of `physarum still` (or the API's
    arguments). step None: the last (run.steps); size (long side) or print_size ('30x40cm'),
    or neither (the frame's own size); dpi: the files' print resolution (with print_size, the
    pixels a unit; default DEFAULT_DPI there, none otherwise); formats None: all three."""

    out: Path
    step: int | None = None
    size: int | None = None
    print_size: str | None = None
    dpi: int | None = None
    formats: tuple[str, ...] | None = None
    backend: str = "auto"
    device: str | None = None
    quiet: bool = True
    interruptible: bool = False  # SIGTERM and SIGHUP stop it, like Ctrl-C


@dataclass(frozen=True)
class StillPlan:
    """A checked still: the preset it renders (run.steps = step; no loop, target, alpha, still
    key or extra files), its size (width, height), dpi, the files by format, notes."""

    preset: object
    step: int
    size: tuple[int, int]
    dpi: int | None
    paths: dict[str, Path]
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Still:
    """A still's result: its files by format, step, size, backend, device and seconds."""

    paths: dict[str, Path]
    step: int
    size: tuple[int, int]
    backend: str
    device: str
    seconds: float
    notes: list[str]


def half_up(value: Fraction) -> int:
    return int(value + Fraction(1, 2))


def fitted(frame: tuple[int, int], box: tuple[Fraction, Fraction]) -> tuple[int, int]:
    """The largest (width, height) of the frame's aspect within box (sides as Fractions),
    each side rounded half up."""
    width, height = frame
    scale = min(box[0] / width, box[1] / height)
    return max(1, half_up(width * scale)), max(1, half_up(height * scale))


def print_box(text: str, dpi: int) -> tuple[Fraction, Fraction]:
    """A print's size in pixels at dpi, from '30x40cm' (mm, cm, in); RenderError otherwise."""
    match = PRINT.fullmatch(text.strip().lower().replace(" ", ""))
    if match is None:
        raise RenderError(
            f"--print: {text!r} is not a print size; write WIDTHxHEIGHT and a unit: mm, cm or in "
            "(e.g. 30x40cm, 8x10in)"
        )
    unit = INCHES[match.group(3)]
    width, height = (Fraction(match.group(i)) * unit * dpi for i in (1, 2))
    if width < 1 or height < 1:
        raise RenderError(f"--print: {text} at {dpi} dpi is less than a pixel a side")
    return width, height


def covers(frame: tuple[int, int], text: str, dpi: int) -> bool:
    """Whether the print `text` at dpi holds at least the frame's pixels."""
    size = fitted(frame, print_box(text, dpi))
    return size[0] >= frame[0] and size[1] >= frame[1]


def check_step(preset, step: int | None) -> int:
    steps = preset.run.steps
    if step is None:
        return steps
    if isinstance(step, bool) or not isinstance(step, int) or not 1 <= step <= steps:
        raise RenderError(
            f"--step: a step from 1 to {steps} (the preset's run.steps; the last by default), got {step!r}"
        )
    return step


def check_formats(formats) -> tuple[str, ...]:
    if formats is None:
        return STILL_FORMATS
    chosen = tuple(dict.fromkeys(formats))
    wrong = [f for f in chosen if f not in STILL_FORMATS]
    if wrong or not chosen:
        raise RenderError(
            f"--formats: {', '.join(map(repr, wrong)) or 'none given'}; a still's formats are "
            f"{', '.join(STILL_FORMATS)} (a comma list, e.g. png,exr)"
        )
    return chosen


def requested_size(frame: tuple[int, int], call: StillCall) -> tuple[tuple[int, int], int | None]:
    """((width, height), dpi) of the still asked for; RenderError for a size below the frame's
    or out of range (one message naming what is allowed)."""
    width, height = frame
    long = max(width, height)
    if call.size is not None and call.print_size is not None:
        raise RenderError("--size and --print: choose one (the long side in pixels, or a print at --dpi)")
    if call.dpi is not None and (isinstance(call.dpi, bool) or not 1 <= call.dpi <= MAX_DPI):
        raise RenderError(f"--dpi: a whole number from 1 to {MAX_DPI}, got {call.dpi!r}")
    if call.print_size is not None:
        dpi = call.dpi or DEFAULT_DPI
        box = print_box(call.print_size, dpi)
        size = fitted(frame, box)
        if size[0] < width or size[1] < height:
            least = next((d for d in range(dpi + 1, MAX_DPI + 1) if covers(frame, call.print_size, d)), None)
            advice = f"at least --dpi {least} at this size" if least else f"a larger print at --dpi {MAX_DPI}"
            raise RenderError(
                f"--print: {call.print_size} at {dpi} dpi holds {size[0]}x{size[1]} pixels of the frame, "
                f"fewer than its {width}x{height} (a still is the frame enlarged, never reduced): {advice}"
            )
        return size, dpi
    if call.size is None:
        return frame, call.dpi
    if isinstance(call.size, bool) or not isinstance(call.size, int) or not long <= call.size <= MAX_SIDE:
        raise RenderError(
            f"--size: the still's long side in pixels, from the frame's {long} (a still is the frame "
            f"enlarged, never reduced) to {MAX_SIDE}, got {call.size!r}"
        )
    return fitted(frame, (Fraction(call.size),) * 2), call.dpi


def largest_fitting(frame, call: StillCall, formats, available: int) -> str:
    """The advice of a still too large: the largest --size (or --dpi at the print size) that
    fits this host's memory and the files' limits, or that none does."""

    def fits_at(side: int) -> bool:
        return still_fits(*fitted(frame, (Fraction(side),) * 2), formats, available)

    long = max(frame)
    if not fits_at(long):
        return "no still of this frame fits here (not even at its own size)"
    low, high = long, max(long, max(requested_size(frame, call)[0]))
    while high - low > 1:  # fits_at(low), not fits_at(high)
        middle = (low + high) // 2
        low, high = (middle, high) if fits_at(middle) else (low, middle)
    size = fitted(frame, (Fraction(low),) * 2)
    if call.print_size is None:
        return f"at most --size {low} fits here ({size[0]}x{size[1]})"
    dpi = call.dpi or DEFAULT_DPI
    fitting = [d for d in range(1, dpi + 1) if max(fitted(frame, print_box(call.print_size, d))) <= low]
    if not fitting:  # even 1 dpi is more pixels than fit
        least = fitted(frame, print_box(call.print_size, 1))
        return (
            f"not even 1 dpi at {call.print_size} fits here ({least[0]}x{least[1]} pixels): a smaller "
            f"--print, or --size {low} ({size[0]}x{size[1]})"
        )
    return f"at most --dpi {max(fitting)} at {call.print_size} fits here (--size {low}: {size[0]}x{size[1]})"


def check_folder(out) -> None:
    """RenderError where --out is a URL (s3://, memory://, file://...): a still is written to a
    local folder only (it once went into a local folder named 's3:')."""
    url = restored(out)  # a Path collapses s3://b to s3:/b
    if is_url(url):
        raise RenderError(
            f"--out {url}: physarum still writes into a local folder, not a URL; give a folder (and "
            "copy the files), or render with output.still and --out URL (physarum render)"
        )


def still_preset(preset, step: int):
    """The preset a still renders: run.steps = step, and none of what changes no step but would
    write or reorder frames (loop, bars, target, alpha, output.still, checkpoints, fields,
    volumes); its images kept."""
    from ..preset import build_preset  # start-up: the preset schema

    data = preset.portable_dump()  # checkpoint, output.fields and output.volume left out
    data.setdefault("run", {})["steps"] = step
    output = data.setdefault("output", {})
    for key in ("loop_mode", "loop_frames", "loop_bars", "bpm", "target", "target_fit", "alpha", "still"):
        output.pop(key, None)
    return build_preset(data, preset.name, [], base=Path.cwd(), carried=preset.carried)


def check(preset, call: StillCall, available: int | None = None) -> StillPlan:
    """What a still refuses before torch (RenderError, one message each), and its plan.
    available: the host's free memory (default: what it has now)."""
    from ..out.specs import output_stem  # start-up: the preset schema
    from ..preset.provenance import check_readable  # start-up: the preset schema

    check_folder(call.out)
    check_kind(preset, "physarum still")
    step = check_step(preset, call.step)
    formats = check_formats(call.formats)
    frame = tuple(preset.frame_size)
    size, dpi = requested_size(frame, call)
    written = written_formats(preset, formats)
    if not written:
        raise RenderError(
            f"{preset.name}: --formats exr needs a look section (the linear light); add png or tiff"
        )
    available = host_available() if available is None else available
    if not still_fits(*size, written, available):
        problem = size_problem(*size, written, available)
        advice = largest_fitting(frame, call, written, available)
        others = [f for f in written if format_fits(f, *size)]
        if others and still_fits(*size, others, available):  # a file's limit, not the memory
            advice += f", or --formats {','.join(others)} at this size"
        raise RenderError(f"{preset.name}: {problem}: {advice}")
    rendered = still_preset(preset, step)
    check_readable(rendered)
    stem = f"{output_stem(rendered)}-step{step}-{size[0]}x{size[1]}"
    folder = Path(call.out) / rendered.name
    grown = f"enlarged to {size[0]}x{size[1]}" if size != frame else "at its own size"
    notes = [f"still: step {step}, {frame[0]}x{frame[1]} {grown} as {', '.join(written)}"]
    if len(written) < len(formats):
        notes.append("still: no exr (without a look section there is no linear light)")
    return StillPlan(rendered, step, size, dpi, {f: folder / f"{stem}.{f}" for f in written}, notes)


def run(preset, call: StillCall, say: Callable[[str], None] | None = None) -> Still:
    """Render the still `call` asks for: its files committed together (all or none), or
    RenderError before anything is simulated (check)."""
    plan = check(preset, call)
    speak = say if (say is not None and not call.quiet) else (lambda line: None)
    speak("physarum: loading torch...")
    with signals_interrupt() if call.interruptible else contextlib.nullcontext():
        return _render(plan, call, speak)


def _render(plan: StillPlan, call: StillCall, speak: Callable[[str], None]) -> Still:
    """The simulation to the plan's step, its frame coloured in 16 bits, the files written."""
    from ..look.colour import make_colourist  # start-up: torch
    from ..look.layers import layer_map, needs_agents  # start-up: torch
    from ..look.still import still_frame  # start-up: torch
    from ..out.job import name_lock  # start-up: torch
    from ..preset.provenance import embedded_text  # start-up: the preset schema
    from ..run import machine  # start-up: torch
    from ..run.estimate import estimate_line  # start-up: torch
    from ..sim.course import Course  # start-up: torch
    from ..sim.simulation import make_batch_simulation  # start-up: torch

    preset, began = plan.preset, time.perf_counter()
    device = machine.resolve_device(call.device)
    backend = machine.resolve_backend(call.backend, device)
    machine.check_memory(preset, backend, device)
    estimate = estimate_line(preset, device.type, backend)
    if estimate:
        speak(estimate)
    text = embedded_text(preset)
    folder = next(iter(plan.paths.values())).parent
    folder.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as held:
        held.callback(name_lock(folder / next(iter(plan.paths.values())).stem).release)
        for path in plan.paths.values():
            remove_stale_parts_of(path)
        simulation = make_batch_simulation([preset], backend, device)
        course = Course(preset.run)
        last = preset.frames - 1
        course.advance_to(simulation, course.frame_end(last))
        agents = simulation.agents if needs_agents([preset]) else None
        maps = layer_map(preset, simulation.trail, agents, 0)
        colour, light = still_frame(make_colourist(preset), maps, last)
        colour = colour.cpu().numpy().astype(np.uint16)
        light = None if light is None else light.cpu().numpy()
        del simulation, maps
        commit_together(still_files(colour, light, plan.size, plan.paths, text, plan.dpi))
    seconds = time.perf_counter() - began
    return Still(
        dict(plan.paths), plan.step, plan.size, backend, machine.device_name(device), seconds, plan.notes
    )
