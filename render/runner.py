"""The runner: a validated Preset in, finished files out.

Chooses the backend and device, checks that the simulation fits in memory before allocating it,
advances the simulation frame by frame, colours each frame on the device, and hands the 8-bit
frames to one encoder worker per format behind a bounded queue.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from physarum.kernels import get_backend
from physarum.kernels.exact import build_tables
from physarum.render import __version__
from physarum.render.colour import Colourist, downscale, make_colourist, preview_size
from physarum.render.encode import even_size, open_writer
from physarum.render.errors import RenderError
from physarum.render.files import write_json
from physarum.render.machine import (
    check_memory,
    device_name,
    resolve_backend,
    resolve_device,
    share_cpu_with_encoders,
)
from physarum.render.preset import MP4_MAX_SIDE, Preset

QUEUE_FRAMES = 4  # frames in flight per encoder: enough to overlap, little memory
# What each output reads of a frame; a PNG still needs only the last frame's RGB.
FRAME_ARRAY = {"gif": "preview", "mp4": "rgb", "png": "last_rgb", "frames": "rgb"}


def version() -> str:
    return __version__


def embedded_text(preset: Preset) -> str:
    """What every output carries: a YAML preset that `physarum render --from` reads back."""
    return f"# physarum {version()}\n{preset.to_yaml()}"


def check_formats(preset: Preset) -> list[str]:
    """Refuse what a format cannot hold; return notes on what was adjusted."""
    notes = []
    width, height = preset.canvas.width, preset.canvas.height
    if "mp4" in preset.output.formats:
        if max(width, height) > MP4_MAX_SIDE:
            raise RenderError(
                f"{preset.name}: MP4 (H.264) allows at most {MP4_MAX_SIDE} pixels per side, "
                f"the canvas is {width}x{height}; remove mp4 from output.formats"
            )
        if even_size(width, height) != (width, height):
            notes.append(
                "mp4 padded from {}x{} to {}x{} (H.264 yuv420p needs even sides)".format(
                    width, height, *even_size(width, height)
                )
            )
    return notes


# ---------------------------------------------------------------------------------------------
# Frames on their way to the encoders


@dataclass
class Frame:
    """One frame on the host: what the encoders need, in host (pinned where possible) memory.

    preview: the GIF's (scaled) index frame [h, w] uint8; rgb: [H, W, 3] uint8. Arrays a frame
    does not need are None. They are slots of a ring that is reused QUEUE_FRAMES + 3 frames
    later, by which time every worker has finished with them.
    """

    number: int
    preview: np.ndarray | None
    rgb: np.ndarray | None


class HostRing:
    """Device-to-host copies into a ring of reusable (pinned, on CUDA) host buffers."""

    def __init__(self, device: torch.device, slots: int):
        self.device, self.slots = device, slots
        self.buffers: dict[tuple[str, int], torch.Tensor] = {}

    def copy(self, name: str, frame: int, tensor: torch.Tensor) -> torch.Tensor:
        """Start copying `tensor` into the ring slot of `frame`; returns the host tensor."""
        key = (name, frame % self.slots)
        buffer = self.buffers.get(key)
        if buffer is None or buffer.shape != tensor.shape:
            pin = self.device.type == "cuda"
            buffer = torch.empty(tensor.shape, dtype=tensor.dtype, pin_memory=pin)
            self.buffers[key] = buffer
        buffer.copy_(tensor, non_blocking=self.device.type == "cuda")
        return buffer


class EncoderWorker:
    """One output (or a child process of several) encoded in a background thread behind a
    bounded queue. needs: the Frame arrays it reads ("preview", "rgb", or "last_rgb": the RGB of
    the frames that have one, the last at least)."""

    def __init__(self, name: str, writer, needs: tuple[str, ...], colourist: Colourist):
        self.name, self.writer, self.needs, self.colourist = name, writer, needs, colourist
        self.queue: queue.Queue = queue.Queue(maxsize=QUEUE_FRAMES)
        self.error: BaseException | None = None
        self.seconds = 0.0
        self.frames = 0
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _feed(self, frame: Frame) -> None:
        if self.needs == ("rgb",):  # MP4, frames
            self.writer.write(frame.rgb)
        elif self.needs == ("last_rgb",):  # PNG: every frame that has its RGB, the last at least
            if frame.rgb is not None:
                self.writer.write(frame.rgb)
        elif self.needs == ("preview",):  # GIF
            self.writer.write(frame.preview, self.colourist.table(frame.number))
        else:  # an EncoderProcess: what its outputs need
            self.writer.write(frame.preview, self.colourist.table(frame.number), frame.rgb)

    def _run(self) -> None:
        while (frame := self.queue.get()) is not None:
            if self.error is not None:
                continue  # drain so that the producer never blocks on a dead worker
            started = time.perf_counter()
            try:
                self._feed(frame)
            except BaseException as error:  # reported to the main thread at the next put
                self.error = error
            self.seconds += time.perf_counter() - started
            self.frames += 1

    def put(self, frame: Frame) -> None:
        self.raise_error()
        self.queue.put(frame)

    def raise_error(self) -> None:
        if self.error is not None:
            raise RenderError(f"{self.writer.path.name}: encoder failed: {self.error}") from self.error

    def end_input(self) -> None:
        """Hand over the frames still queued and tell the writer that no more follow (a child
        process starts writing its files then); commit() waits for the files."""
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()
        self.raise_error()
        if hasattr(self.writer, "end_input"):
            self.writer.end_input()

    def finish(self) -> None:
        self.end_input()
        self.writer.commit()

    def abort(self) -> None:
        self.error = self.error or RuntimeError("aborted")
        self.queue.put(None)
        self.thread.join()
        self.writer.abort()

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds else 0.0


# ---------------------------------------------------------------------------------------------
# Rendering


@dataclass
class RenderOptions:
    """How to render, beside what to render (the preset). Defaults suit a command-line render."""

    backend: str = "auto"
    device: str | None = None
    out_dir: Path = Path("outputs")
    quiet: bool = False
    frames_dir: Path | None = None  # also write every frame as a numbered PNG here
    # called with the simulation after every step (--stats); steps then run one at a time
    on_step: Callable[[object], None] | None = None


@dataclass
class RenderResult:
    outputs: dict[str, Path]
    backend: str
    device: str
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # render_batch: why this job failed (its files were removed)


def output_paths(preset: Preset, out_dir: Path) -> dict[str, Path]:
    folder = Path(out_dir) / preset.name
    stem = f"{preset.name}-s{preset.seed}"
    return {fmt: folder / f"{stem}.{fmt}" for fmt in (*preset.output.formats, "json")}


def make_simulation(preset: Preset, backend: str, device: torch.device):
    """The chosen backend's simulation of one preset, spawned on `device`."""
    return make_batch_simulation([preset], backend, device)


def _writer_spec(
    fmt: str, preset: Preset, text: str, paths: dict[str, Path], colourist: Colourist, options: RenderOptions
) -> dict:
    """encode.open_writer's spec of one output; text: embedded_text(preset), which every output
    carries (dumping a preset's YAML takes milliseconds, a 64-job batch's opening once per job)."""
    out = preset.output
    width, height = preset.canvas.width, preset.canvas.height
    if fmt == "gif":
        size = preview_size(width, height, out.gif_scale)
        return {
            "format": "gif",
            "path": str(paths[fmt]),
            "width": size[0],
            "height": size[1],
            "fps": out.fps,
            "loop": out.loop,
            "comment": text,
            "palette": colourist.table(0).reshape(-1).tolist(),
        }
    if fmt == "mp4":
        return {
            "format": "mp4",
            "path": str(paths[fmt]),
            "width": width,
            "height": height,
            "fps": out.fps,
            "comment": text,
        }
    if fmt == "png":
        return {
            "format": "png",
            "path": str(paths[fmt]),
            "width": width,
            "height": height,
            "comment": text,
            "dpi": out.png_dpi,
        }
    return {
        "format": "frames",
        "folder": str(options.frames_dir),
        "stem": f"{preset.name}-s{preset.seed}",
        "comment": text,
    }


def _open_workers(
    preset: Preset,
    paths: dict[str, Path],
    colourist: Colourist,
    options: RenderOptions,
    own_process: bool = False,
) -> list[EncoderWorker]:
    """One encoder worker per output. With own_process (batches of several), one worker sends the
    GIF, MP4 and PNG frames to a child process of the job's own, where they are encoded: x264's
    bytes and Pillow's interpreter lock both need that (render/encoder_process.py)."""
    formats = list(preset.output.formats) + (["frames"] if options.frames_dir else [])
    text = embedded_text(preset)
    specs = [_writer_spec(fmt, preset, text, paths, colourist, options) for fmt in formats]
    workers = []
    try:
        if own_process:
            from physarum.render.encoder_process import EncoderProcess

            child = [spec for spec in specs if spec["format"] != "frames"]
            specs = [spec for spec in specs if spec["format"] == "frames"]
            if child:
                name = "+".join(spec["format"] for spec in child)
                needs = tuple(sorted({FRAME_ARRAY[spec["format"]] for spec in child}))
                process = EncoderProcess(child, paths["json"].with_suffix(""))
                workers.append(EncoderWorker(name, process, needs, colourist))
        for spec in specs:
            writer = open_writer(spec)
            workers.append(EncoderWorker(spec["format"], writer, (FRAME_ARRAY[spec["format"]],), colourist))
    except BaseException:
        for worker in workers:
            worker.abort()
        raise
    return workers


class FramePipeline:
    """Colours frames on the device, copies them to the host and feeds the encoder workers.

    A frame's copy is started and the next frame's simulation is queued before the frame is
    handed over, so on a GPU the copy overlaps the simulation; workers encode in the background.
    """

    def __init__(
        self, preset: Preset, colourist: Colourist, workers: list[EncoderWorker], device: torch.device
    ):
        self.colourist, self.workers = colourist, workers
        self.needs = {name for w in workers for name in w.needs}
        self.preview = preview_size(preset.canvas.width, preset.canvas.height, preset.output.gif_scale)
        # Frame f is copied into the slot of frame f - slots. When it is, frames up to f - 2 have
        # been handed over (the pipeline lags one frame), so each worker holds at most
        # QUEUE_FRAMES of them queued plus one in hand, the oldest f - 2 - QUEUE_FRAMES: every
        # frame up to f - 3 - QUEUE_FRAMES is done with, hence QUEUE_FRAMES + 3 slots.
        self.ring = HostRing(device, QUEUE_FRAMES + 3)
        self.pending: list[tuple[Frame, torch.cuda.Event | None]] = []
        self.device = device
        self.last = preset.frames - 1

    def submit(self, number: int, trail: torch.Tensor) -> None:
        """Colour frame `number` of a trail map [H, W] (or the species' maps [S, H, W])."""
        want_rgb = "rgb" in self.needs or ("last_rgb" in self.needs and number == self.last)
        index, rgb = self.colourist.colour(trail, number, want_rgb)
        arrays = {}
        if "preview" in self.needs:
            arrays["preview"] = self.ring.copy("preview", number, downscale(index, self.preview))
        if want_rgb:
            arrays["rgb"] = self.ring.copy("rgb", number, rgb)
        event = None
        if self.device.type == "cuda":
            event = torch.cuda.Event()
            event.record(torch.cuda.current_stream(self.device))  # the copies' device, not device 0
        frame = Frame(number, arrays.get("preview"), arrays.get("rgb"))
        self.pending.append((frame, event))

    def hand_over(self, keep: int = 0) -> None:
        """Give every pending frame but the last `keep` to the workers, once it is on the host."""
        while len(self.pending) > keep:
            frame, event = self.pending.pop(0)
            if event is not None:
                event.synchronize()
            frame = Frame(
                frame.number, *(None if a is None else a.numpy() for a in (frame.preview, frame.rgb))
            )
            for worker in self.workers:
                worker.put(frame)


def render(preset: Preset, options: RenderOptions | None = None, **kwargs) -> RenderResult:
    """Render a preset to its output files; returns where they are and how long it took.

    Options come as a RenderOptions or as its fields by keyword (backend="torch", ...). A failed
    encoder stops the render, removes its files and raises RenderError. It is a batch of one.
    """
    result = render_batch([preset], options or RenderOptions(**kwargs))[0]
    if result.error is not None:
        raise RenderError(result.error)
    return result


def advance(simulation, steps: int, on_step: Callable[[object], None] | None = None) -> None:
    """Advance `steps` steps; with on_step, one step at a time, calling on_step(simulation) after
    each (on CUDA this gives up the Triton backend's graph chunks)."""
    if on_step is None:
        simulation.advance(steps)
        return
    for _ in range(steps):
        simulation.advance(1)
        on_step(simulation)


def sidecar(preset: Preset, result: RenderResult) -> dict:
    return {
        "physarum_version": version(),
        "preset": preset.portable_dump(),
        "preset_yaml": embedded_text(preset),
        "seed": preset.seed,
        "backend": result.backend,
        "device": result.device,
        "torch_version": torch.__version__,
        "frames": preset.frames,
        "steps": preset.run.steps,
        "timings": {k: round(v, 4) for k, v in result.timings.items()},
        "notes": result.notes,
        "outputs": {
            fmt: {"file": p.name, "bytes": p.stat().st_size}
            for fmt, p in result.outputs.items()
            if fmt != "json"
        },
    }


# ---------------------------------------------------------------------------------------------
# Batches: several presets of one shape advanced as one simulation (sweeps)


def batch_key(preset: Preset) -> tuple:
    """What presets must share to run as one batched simulation: canvas, agent count, run length,
    and the shape of their world: species count, boundary, whether there are walls and food.

    Everything else may differ per simulation: model, seed, spawn pattern and radius (each
    simulation is spawned on its own), palette and outputs (each has its own colouring and files),
    interaction, images (each simulation has its own maps).
    """
    from physarum.render.world import has_food, needs_world

    world = preset.world
    shape = (
        preset.species_count,
        preset.boundary,
        bool(world and world.walls),
        has_food(preset),
        needs_world(preset),
    )
    plain = (1, "wrap", False, False, False)
    return (
        preset.canvas.width,
        preset.canvas.height,
        preset.agents.count,
        preset.run.steps,
        preset.run.steps_per_frame,
        preset.run.warmup,
    ) + (() if shape == plain else shape)


def simulation_maps(preset: Preset, trail: torch.Tensor, b: int) -> torch.Tensor:
    """What colours simulation b of a batch: its trail map [H, W], or with a species section the
    maps of its S species [S, H, W] (groups b * S .. b * S + S - 1)."""
    if preset.species is None:
        return trail[b]
    species = preset.species_count
    return trail[b * species : (b + 1) * species]


def make_batch_simulation(presets: Sequence[Preset], backend: str, device: torch.device):
    """One simulation of B = len(presets) (B * S groups): each group spawned alone, then stacked.

    Spawning one at a time gives each simulation exactly the state make_simulation gives it, and
    the model is batch-independent, so simulation b evolves as the preset rendered alone would.
    Presets without world, species or image spawns run the kernels' plain path (no World)."""
    from physarum.render.world import spawn_groups

    state, params, world = spawn_groups(presets, device)
    tables = build_tables(params, device=device)
    extra = {} if world is None else {"world": world.to(device)}
    if backend == "triton":  # moves a host state to the device itself: one copy there, not two
        return get_backend(backend)(state, tables, device=device, **extra)
    return get_backend(backend)(state.to(device), tables, **extra)


@dataclass
class _BatchJob:
    """One simulation of a batch on its way to its own files."""

    index: int
    preset: Preset
    paths: dict[str, Path]
    notes: list[str]
    workers: list[EncoderWorker] = field(default_factory=list)
    pipeline: FramePipeline | None = None
    error: str | None = None

    def fail(self, error: BaseException) -> None:
        """Stop this job: abort its encoders, remove its files (finished ones too: a failed job
        keeps no outputs that could pass for a complete set)."""
        self.error = self.error or str(error)
        for worker in self.workers:
            worker.abort()
        for path in self.paths.values():
            if not path.is_dir():  # a folder in the way of an output (why it failed) is not ours
                path.unlink(missing_ok=True)

    def hand_over(self, keep: int = 0) -> None:
        if self.error is None:
            try:
                self.pipeline.hand_over(keep)
            except RenderError as error:
                self.fail(error)

    def end_input(self) -> None:
        self._each_worker(EncoderWorker.end_input)

    def finish(self) -> None:
        self._each_worker(EncoderWorker.finish)

    def _each_worker(self, step: Callable[[EncoderWorker], None]) -> None:
        if self.error is None:
            try:
                for worker in self.workers:
                    step(worker)
            except (RenderError, OSError) as error:
                self.fail(error)


def _check_distinct_outputs(presets: Sequence[Preset], paths: list[dict[str, Path]]) -> None:
    seen = set()
    for preset, job_paths in zip(presets, paths):
        if job_paths["json"] in seen:
            raise RenderError(
                f"{preset.name}: two presets of the batch would write the same files "
                f"({job_paths['json'].with_suffix('')}.*); give them different names or seeds"
            )
        seen.add(job_paths["json"])


def render_batch(
    presets: Sequence[Preset], options: RenderOptions | None = None, **kwargs
) -> list[RenderResult]:
    """Render several presets as one batched simulation (B = len(presets)); one result each.

    The presets must share batch_key(). Each keeps its own colouring, encoders and files, byte for
    byte those of a batch of one (render()). A job whose encoder fails is stopped and its files
    removed while the others go on; its result carries the error and no outputs. A failure of the
    simulation itself (or an interruption) stops every job and is raised. options.on_step, if
    set, is called with the whole batch's simulation after every step.
    """
    options = options or RenderOptions(**kwargs)
    presets = list(presets)
    if not presets:
        return []
    if len({batch_key(p) for p in presets}) > 1:
        raise ValueError(
            "render_batch: the presets differ in canvas, agent count, run length or "
            "world shape; group them by batch_key()"
        )
    torch_device = resolve_device(options.device)
    if torch_device.type == "cpu":
        share_cpu_with_encoders()
    backend = resolve_backend(options.backend, torch_device)
    notes = [check_formats(p) for p in presets]
    check_memory(presets[0], backend, torch_device, batch=len(presets))
    paths = [output_paths(p, Path(options.out_dir)) for p in presets]
    _check_distinct_outputs(presets, paths)
    for job_paths in paths:
        job_paths["json"].parent.mkdir(parents=True, exist_ok=True)
    if options.frames_dir:
        Path(options.frames_dir).mkdir(parents=True, exist_ok=True)
    clock = [time.perf_counter()]  # start, simulation made, encoders open, frames done, files done
    simulation = make_batch_simulation(presets, backend, torch_device)
    clock.append(time.perf_counter())
    jobs = [
        _BatchJob(b, p, job_paths, job_notes)
        for b, (p, job_paths, job_notes) in enumerate(zip(presets, paths, notes))
    ]
    try:
        for job in jobs:
            colourist = make_colourist(job.preset)
            job.workers = _open_workers(job.preset, job.paths, colourist, options, own_process=len(jobs) > 1)
            job.pipeline = FramePipeline(job.preset, colourist, job.workers, torch_device)
        clock.append(time.perf_counter())
        advance(simulation, presets[0].run.warmup, options.on_step)
        _frame_loop(presets[0], simulation, jobs, options)
        clock.append(time.perf_counter())
        for job in jobs:  # every job's encoders finish their files at once, then each is waited for
            job.end_input()
        for job in jobs:
            job.finish()
        clock.append(time.perf_counter())
    except BaseException:
        for job in jobs:
            for worker in job.workers:
                worker.abort()
        raise
    phases = dict(
        zip(("spawn_s", "open_s", "frames_s", "finish_s"), (b - a for a, b in zip(clock, clock[1:])))
    )
    phases["total_s"] = clock[-1] - clock[0]
    return [_batch_result(job, backend, torch_device, phases, len(jobs)) for job in jobs]


def _frame_loop(run: Preset, simulation, jobs: list[_BatchJob], options: RenderOptions) -> None:
    """Advance the batch frame by frame, handing each job's frame to its encoders; the bar shows
    frames, steps per second (of each simulation) and the slowest encoder's frames per second."""
    remaining, steps_done = run.run.steps, 0
    began = time.perf_counter()
    label = run.name if len(jobs) == 1 else f"{len(jobs)} simulations"
    with tqdm(
        total=run.frames, unit="frame", disable=options.quiet, leave=False, desc=label, dynamic_ncols=True
    ) as bar:
        for number in range(run.frames):
            if all(job.error for job in jobs):
                break
            steps = min(run.run.steps_per_frame, remaining)
            advance(simulation, steps, options.on_step)
            remaining, steps_done = remaining - steps, steps_done + steps
            trail = simulation.trail
            for job in jobs:
                if job.error is None:
                    job.pipeline.submit(number, simulation_maps(job.preset, trail, job.index))
            for job in jobs:
                job.hand_over(keep=1)
            bar.update(1)
            if not options.quiet and number % 10 == 0:
                encode = min((w.fps for job in jobs for w in job.workers), default=0.0)
                bar.set_postfix_str(
                    f"{steps_done / (time.perf_counter() - began):.0f} steps/s, encoder {encode:.1f} fps",
                    refresh=False,
                )
        for job in jobs:
            job.hand_over()


def _batch_result(
    job: _BatchJob, backend: str, device: torch.device, phases: dict[str, float], batch: int
) -> RenderResult:
    """phases: the batch's seconds making the simulation (spawn_s: spawning, compiling kernels),
    opening encoders (open_s), simulating and handing frames over (frames_s), waiting for the
    encoders to finish their files (finish_s), and in all (total_s)."""
    notes = list(job.notes)
    if batch > 1:
        notes.append(f"rendered as one of {batch} simulations of a batch (its timings are the batch's)")
    timings = dict(phases)
    timings.update({f"encode_{w.name}_s": w.seconds for w in job.workers})
    if job.error is not None:
        return RenderResult({}, backend, device_name(device), timings, notes, error=job.error)
    result = RenderResult(job.paths, backend, device_name(device), timings, notes)
    write_json(job.paths["json"], sidecar(job.preset, result))
    return result
