"""The runner: validated Presets in, finished files out (render, render_batch).

Chooses the backend and device, checks that the simulation fits in memory before allocating it,
makes one simulation of the batch (render/sim/simulation.py), opens every job's writers from its
output specs (render/out/frames.py, render/out/encode.py), advances the simulation frame by frame
handing each job's maps to its frame pipeline, then completes the files and each job's JSON
sidecar under temporary names and renames each job's files together: a job's files replace the
earlier files of their names all at once, or (when one fails) none does (docs/safety.md).
"""

from __future__ import annotations

import glob
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import torch
from tqdm import tqdm

from physarum.render.base.errors import (
    RenderError,
    machine_problem,
    os_error_message,
    out_of_memory,
    printable,
)
from physarum.render.base.files import (
    PartialFile,
    commit_together,
    remove_stale_parts,
    remove_stale_parts_of,
    stage_json,
)
from physarum.render.base.interrupts import stop_if_requested
from physarum.render.look.colour import make_colourist
from physarum.render.look.layers import layer_map, needs_agents
from physarum.render.look.loops import TrailLoop, Window, find_windows
from physarum.render.out.fields import FieldsStop
from physarum.render.out.frames import (
    EncoderWorker,
    FramePipeline,
    open_workers,
)
from physarum.render.out.specs import check_outputs, output_paths, output_specs, output_stem
from physarum.render.preset import Preset
from physarum.render.preset.provenance import embedded_text, version
from physarum.render.run.machine import (
    check_memory,
    device_name,
    encoder_cores,
    resolve_backend,
    resolve_device,
    share_cpu_with_encoders,
)
from physarum.render.sim import keyframes
from physarum.render.sim.checkpoint import Resume
from physarum.render.sim.checkpoint_plan import CheckpointPlan, checkpoint_plan, checkpoint_stops
from physarum.render.sim.course import Course
from physarum.render.sim.simulation import (
    batch_key,
    make_batch_simulation,
)

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
    # more outputs of the first job (--stats: its CSV), staged by format once the frames are done
    # and committed with the job's files, all or nothing (files.commit_together)
    extra_files: Callable[[], dict[str, PartialFile]] | None = None
    resume: Resume | None = None  # start from a checkpoint's state (render --resume; a batch of one)


@dataclass
class RenderResult:
    outputs: dict[str, Path]
    backend: str
    device: str
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # render_batch: why this job failed (earlier files left as they were)
    replaced: list[Path] = field(default_factory=list)  # earlier files these outputs replaced


def render(preset: Preset, options: RenderOptions | None = None, **kwargs) -> RenderResult:
    """Render a preset to its output files; returns where they are and how long it took.

    Options come as a RenderOptions or as its fields by keyword (backend="torch", ...). A failed
    encoder stops the render, removes its temporary files, leaves any earlier files of the same
    names as they were and raises RenderError. It is a batch of one.
    """
    result = render_batch([preset], options or RenderOptions(**kwargs))[0]
    if result.error is not None:
        raise RenderError(result.error)
    return result


def sidecar(preset: Preset, result: RenderResult, sizes: dict[str, int], loop: dict | None = None) -> dict:
    """The JSON sidecar of a finished job: the preset (portable and as embedded text), where and
    how it ran, its timings and notes, each output file's name and size (sizes: bytes by
    format), with output.loop_mode the loop (loops.TrailLoop.describe) and with schedules their
    keyframes (keyframes.describe)."""
    out = {
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
            fmt: {"file": p.name, "bytes": sizes[fmt]} for fmt, p in result.outputs.items() if fmt != "json"
        },
    }
    if loop is not None:
        out["loop"] = loop
    if preset.schedules:
        out["schedules"] = keyframes.describe(preset)
    return out


# ---------------------------------------------------------------------------------------------
# Batches: several presets of one shape advanced as one simulation (sweeps)


@dataclass
class _BatchJob:
    """One simulation of a batch on its way to its own files."""

    index: int
    preset: Preset
    paths: dict[str, Path]
    notes: list[str]
    loop: TrailLoop
    workers: list[EncoderWorker] = field(default_factory=list)
    pipeline: FramePipeline | None = None
    error: str | None = None
    partials: list[PartialFile] = field(default_factory=list)  # complete, not yet renamed
    checkpoints: dict | None = None  # the sidecar's record of the checkpoints it writes

    def fail(self, error: BaseException) -> None:
        """Stop this job: abort its encoders and remove its temporary files. Its outputs' names
        keep whatever was there before (an earlier render's files), untouched."""
        cause = error.__cause__ if isinstance(error, RenderError) and error.__cause__ else error
        if out_of_memory(cause):  # the one message a render of its own gives (errors.machine_problem)
            message = machine_problem(cause)
        else:
            message = os_error_message(error) if isinstance(error, OSError) else str(error)
        self.error = self.error or message
        self.abort()

    def abort(self) -> None:
        for worker in self.workers:
            worker.abort()
        for partial in self.partials:
            partial.abort()

    def open(self, frames_dir: Path | None, device: torch.device, jobs: int) -> None:
        """Open this job's writers and its frame pipeline (one of `jobs`: with more than one,
        the encoders run in a child process, on its share of the cores: machine.encoder_cores)."""
        colourist = make_colourist(self.preset)
        specs = output_specs(self.preset, self.paths, colourist.table(0), frames_dir, jobs)
        job = self.paths["json"].with_suffix("")
        self.workers = open_workers(specs, job, jobs > 1, encoder_cores(self.index, jobs))
        self.pipeline = FramePipeline(self.preset, colourist, self.workers, device, self.loop.frames)

    def hand_over(self, keep: int = 0) -> None:
        if self.error is None:
            try:
                self.pipeline.hand_over(keep)
            except RenderError as error:
                self.fail(error)

    def finish_frames(self) -> None:
        """Every frame handed over (and a ping-pong loop's replayed)."""
        if self.error is None:
            try:
                self.pipeline.finish()
            except RenderError as error:
                self.fail(error)

    def end_input(self) -> None:
        self._each_worker(EncoderWorker.end_input)

    def complete(self) -> None:
        """Every writer's files complete under their temporary names (self.partials)."""
        self._each_worker(lambda worker: self.partials.extend(worker.complete()))

    def commit(self, result: RenderResult, extra_files: Callable[[], dict[str, PartialFile]] | None) -> None:
        """Write the sidecar beside the completed files (and the extra files, which the sidecar
        does not list) and rename them all together."""
        try:
            sizes = {fmt: self._size(path) for fmt, path in self.paths.items() if fmt != "json"}
            record = sidecar(self.preset, result, sizes, self.loop.describe())
            if self.checkpoints:
                record["checkpoints"] = self.checkpoints
            budgets = [w.writer.report for w in self.workers if getattr(w.writer, "report", None)]
            if budgets:
                record["gif_budget"] = budgets[0]
            self.partials.append(stage_json(self.paths["json"], record))
            extra = extra_files() if extra_files else {}
            self.partials.extend(extra.values())
            result.replaced = commit_together(self.partials)
            result.outputs = {**result.outputs, **{fmt: partial.path for fmt, partial in extra.items()}}
        except OSError as error:
            self.fail(error)

    def _size(self, path: Path) -> int:
        return next(p.temporary for p in self.partials if p.path == path).stat().st_size

    def _each_worker(self, step: Callable[[EncoderWorker], object]) -> None:
        if self.error is None:
            try:
                for worker in self.workers:
                    step(worker)
            except (RenderError, OSError, MemoryError) as error:
                self.fail(error)


def _batch_paths(presets: Sequence[Preset], options: RenderOptions) -> list[dict[str, Path]]:
    """Every job's output paths, their folders made and stale temporary files of killed runs
    beside them removed; two jobs may not share their files."""
    paths = [output_paths(p, Path(options.out_dir)) for p in presets]
    seen = set()
    for preset, job_paths in zip(presets, paths):
        if job_paths["json"] in seen:
            raise RenderError(
                f"{preset.name}: two presets of the batch would write the same files "
                f"({job_paths['json'].with_suffix('')}.*); give them different names or seeds"
            )
        seen.add(job_paths["json"])
    for job_paths in paths:
        job_paths["json"].parent.mkdir(parents=True, exist_ok=True)
        for path in job_paths.values():
            remove_stale_parts_of(path)
    if options.frames_dir:
        Path(options.frames_dir).mkdir(parents=True, exist_ok=True)
        for preset in presets:
            remove_stale_parts(Path(options.frames_dir), f"{glob.escape(output_stem(preset))}-*.png")
    return paths


def render_batch(
    presets: Sequence[Preset], options: RenderOptions | None = None, **kwargs
) -> list[RenderResult]:
    """Render several presets as one batched simulation (B = len(presets)); one result each.

    The presets must share batch_key(). Each keeps its own colouring, encoders and files, byte for
    byte those of a batch of one (render()). A job whose encoder fails is stopped and its
    temporary files removed while the others go on; its result carries the error and no outputs,
    and the earlier files of its names stay as they were. A failure of the
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
    notes = [check_outputs(p) for p in presets]
    check_memory(presets[0], backend, torch_device, batch=len(presets))
    plan = _checkpoint_plan(presets, options)
    paths = _batch_paths(presets, options)
    clock = [time.perf_counter()]  # start, simulation made, encoders open, frames done, files done
    start = _start(options, len(presets))
    simulation = make_batch_simulation(presets, backend, torch_device, start)
    windows: list[Window | None] = [None] * len(presets)
    if start is not None and presets[0].loop[0] != "none":
        raise RenderError(
            f"{presets[0].name}: output.loop_mode {presets[0].loop[0]} is made from the whole run "
            "(its first frames, or all of them); a render resumed from a checkpoint cannot make it: "
            "render the whole run, or resume with --set output.loop_mode=none"
        )
    if any(p.loop[0] == "closest" for p in presets):  # a first pass finds the loops; the render repeats it
        windows, simulation = find_windows(presets, simulation), None  # spawn_s counts this pass
        simulation = make_batch_simulation(presets, backend, torch_device)
    clock.append(time.perf_counter())
    if options.resume is not None:
        notes[0].append(options.resume.note)
    jobs = [
        _BatchJob(b, p, job_paths, job_notes, TrailLoop(p, window))
        for b, (p, job_paths, job_notes, window) in enumerate(zip(presets, paths, notes, windows))
    ]
    jobs[0].checkpoints = plan.record() if plan else None
    try:
        for job in jobs:
            job.open(options.frames_dir, torch_device, len(jobs))
        clock.append(time.perf_counter())
        course = _course(presets, paths, jobs, options)
        course.advance_to(simulation, course.warmup_end, options.on_step)
        _frame_loop(presets[0], simulation, jobs, options, course)
        clock.append(time.perf_counter())
        for job in jobs:  # every job's encoders finish their files at once, then each is waited for
            job.end_input()
        for job in jobs:
            job.complete()
        clock.append(time.perf_counter())
        phases = dict(
            zip(("spawn_s", "open_s", "frames_s", "finish_s"), (b - a for a, b in zip(clock, clock[1:])))
        )
        phases["total_s"] = clock[-1] - clock[0]
        extra = [options.extra_files] + [None] * (len(jobs) - 1)  # the first job's (simulation 0)
        return [
            _batch_result(job, backend, torch_device, phases, len(jobs), e) for job, e in zip(jobs, extra)
        ]
    except BaseException:
        for job in jobs:
            job.abort()
        raise


def _checkpoint_plan(presets: list[Preset], options: RenderOptions) -> CheckpointPlan | None:
    """The render's checkpoints, checked before anything is written (RenderError when too many
    or too large for the disk) and stated on stderr unless quiet (checkpoint.checkpoint_plan)."""
    start = 0 if options.resume is None else options.resume.step
    plan = checkpoint_plan(presets, Path(options.out_dir) / presets[0].name, start)
    if plan is not None and not options.quiet:
        print(printable(f"note: {plan.note()}"), file=sys.stderr)
    return plan


def _start(options: RenderOptions, batch: int):
    """The state a render starts from: None (spawned), or a resumed render's checkpoint state."""
    if options.resume is None:
        return None
    if batch > 1:
        raise ValueError("render_batch: a checkpoint resumes one render, not a batch of several")
    return options.resume.state


def _course(presets: list[Preset], paths, jobs: list[_BatchJob], options: RenderOptions) -> Course:
    """The batch's course of steps: from the spawn or the checkpoint it resumes, stopping to
    write checkpoints (render/sim/checkpoint.py) and each job's raw fields (render/out/fields.py)."""
    start = 0 if options.resume is None else options.resume.step
    folder, stem = paths[0]["json"].parent, paths[0]["json"].stem
    return Course(presets[0].run, start, [*checkpoint_stops(presets, folder, stem), FieldsStop(jobs)])


def _frame_loop(
    run: Preset, simulation, jobs: list[_BatchJob], options: RenderOptions, course: Course
) -> None:
    """Advance the batch frame by frame along its course, handing each job's frame to its
    encoders; the bar shows frames, steps per second (of each simulation) and the slowest
    encoder's frames per second."""
    began, first_step = time.perf_counter(), course.step
    label = run.name if len(jobs) == 1 else f"{len(jobs)} simulations"
    with tqdm(
        total=run.frames,
        initial=course.first_frame,
        unit="frame",
        disable=options.quiet,
        leave=False,
        desc=label,
        dynamic_ncols=True,
    ) as bar:
        for number in range(course.first_frame, run.frames):
            stop_if_requested()
            if all(job.error for job in jobs):
                break
            course.advance_to(simulation, course.frame_end(number), options.on_step)
            steps_done = course.step - first_step
            trail = simulation.trail
            agents = simulation.agents if needs_agents(job.preset for job in jobs) else None
            for job in jobs:
                if job.error is None:
                    for shown, maps in job.loop.take(number, layer_map(job.preset, trail, agents, job.index)):
                        job.pipeline.submit(shown, maps)
            for job in jobs:
                job.hand_over(keep=1)
            bar.update(1)
            if all(job.loop.done(number) for job in jobs):
                break  # a closest loop ends before the run
            if not options.quiet and number % 10 == 0:
                encode = min((w.fps for job in jobs for w in job.workers), default=0.0)
                bar.set_postfix_str(
                    f"{steps_done / (time.perf_counter() - began):.0f} steps/s, encoder {encode:.1f} fps",
                    refresh=False,
                )
        for job in jobs:
            job.finish_frames()


def _batch_result(
    job: _BatchJob,
    backend: str,
    device: torch.device,
    phases: dict[str, float],
    batch: int,
    extra_files: Callable[[], dict[str, PartialFile]] | None = None,
) -> RenderResult:
    """phases: the batch's seconds making the simulation (spawn_s: spawning, compiling kernels),
    opening encoders (open_s), simulating and handing frames over (frames_s), waiting for the
    encoders to finish their files (finish_s), and in all (total_s)."""
    notes = list(job.notes)
    if batch > 1:
        notes.append(f"rendered as one of {batch} simulations of a batch (its timings are the batch's)")
    timings = dict(phases)
    timings.update({f"encode_{w.name}_s": w.seconds for w in job.workers})
    result = RenderResult(job.paths, backend, device_name(device), timings, notes)
    if job.error is None:
        job.commit(result, extra_files)
    if job.error is not None:
        return RenderResult({}, backend, device_name(device), timings, notes, error=job.error)
    return result
