"""The runner: validated Presets in, finished files out (render, render_batch).

Chooses the backend and device, checks that the simulation fits in memory before allocating it,
makes one simulation of the batch (render/sim/simulation.py), opens every job's writers from its
output specs (render/out/job.py, render/formats/), advances the simulation frame by frame
handing each job's maps to its frame pipeline, then completes the files and each job's JSON
sidecar under temporary names and renames each job's files together: a job's files replace the
earlier files of their names all at once, or (when one fails) none does (docs/safety.md).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import torch
from tqdm import tqdm

from ..base.errors import (
    RenderError,
    printable,
)
from ..base.files import (
    PartialFile,
)
from ..base.interrupts import stop_if_requested
from ..look.layers import layer_map, needs_agents
from ..look.loops import TrailLoop, Window, find_windows
from ..out.fields import FieldsStop
from ..out.frames import QUEUE_FRAMES
from ..out.job import Job, RenderResult, job_paths
from ..out.journal import (
    JournalSource,
    JournalWriter,
    journal_frames,
    journal_path,
    journaled,
    layout_of,
    render_reads,
)
from ..out.sinks import Sink
from ..out.specs import check_outputs, render_trim
from ..out.volume_export import VolumeStop
from ..preset import Preset
from ..sim.checkpoint_plan import CheckpointPlan, checkpoint_plan, checkpoint_stops
from ..sim.course import Course
from ..sim.simulation import (
    batch_key,
    make_batch_simulation,
)
from .machine import (
    check_memory,
    device_name,
    encoder_cores,
    resolve_backend,
    resolve_device,
    share_cpu_with_encoders,
)
from .resume import Resume, journal_count, resume_journal
from .volume_checks import check_render

# ---------------------------------------------------------------------------------------------
# Rendering

# the switch that compiles a Triton render's kernels at once before its first step (compile_ahead)
COMPILE_AHEAD = "PHYSARUM_COMPILE_AHEAD"


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
    # called with the simulation, the frame's number and its step after each frame's steps
    # (--metrics, explore); the steps between frames still run in chunks
    on_frame: Callable[[object, int, int], None] | None = None
    # more outputs of the first job (--stats: its CSV), staged by format once the frames are done
    # and committed with the job's files, all or nothing (files.commit_together)
    extra_files: Callable[[], dict[str, PartialFile]] | None = None
    resume: Resume | None = None  # start from a checkpoint's state (render --resume; a batch of one)
    # where the first job's frames go besides its files (render/out/sinks.py: the streaming API,
    # the live studio); each sink is closed when the render ends, with the error if it failed
    sinks: Sequence[Sink] = ()
    # False: no file at all (no outputs, sidecar, lock or folder); the frames go to `sinks` alone.
    # Presets that write checkpoints, fields or volumes are refused then (ValueError).
    write_files: bool = True


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


# ---------------------------------------------------------------------------------------------
# Batches: several presets of one shape advanced as one simulation (sweeps)


def render_batch(
    presets: Sequence[Preset], options: RenderOptions | None = None, **kwargs
) -> list[RenderResult]:
    """Render several presets as one batched simulation (B = len(presets)); one result each.

    The presets must share batch_key(). Each keeps its own colouring, encoders and files, byte for
    byte those of a batch of one (render()). A job whose encoder fails is stopped and its
    temporary files removed while the others go on; its result carries the error and no outputs,
    and the earlier files of its names stay as they were. A failure of the
    simulation itself (or an interruption) stops every job and is raised. options.on_step, if
    set, is called with the whole batch's simulation after every step. Each job's name is locked
    from before its first file until the batch ends (out/job.py job_paths): a second render of a
    name being rendered is refused (RenderError).
    """
    with ExitStack() as held:  # the jobs' name locks, released when the batch ends
        return _render_batch(list(presets), options or RenderOptions(**kwargs), held)


def _render_batch(presets: list[Preset], options: RenderOptions, held: ExitStack) -> list[RenderResult]:
    if not presets:
        return []
    if len({batch_key(p) for p in presets}) > 1:
        raise ValueError(
            "render_batch: the presets differ in canvas, agent count, run length or "
            "world shape; group them by batch_key()"
        )
    check_render(
        presets, options.on_step is not None, options.on_frame is not None, options.resume is not None
    )
    _check_sinks_only(presets, options)
    torch_device = resolve_device(options.device)
    if torch_device.type == "cpu":
        share_cpu_with_encoders()
    backend = resolve_backend(options.backend, torch_device)
    notes = [check_outputs(p) if options.write_files else [] for p in presets]
    check_memory(presets[0], backend, torch_device, batch=len(presets))
    plan = _checkpoint_plan(presets, options) if options.write_files else None
    _check_resume(presets, options)
    source, note = resume_journal(options.resume, presets[0], options.frames_dir is not None)
    clock = [time.perf_counter()]  # start, simulation made, encoders open, frames done, files done
    start = _start(options)  # the checkpoint's state: read after every check above
    paths = job_paths(presets, options.out_dir, options.frames_dir, held) if options.write_files else None
    paths = paths or [{} for _ in presets]
    simulation = make_batch_simulation(presets, backend, torch_device, start)
    compiled = compile_ahead(simulation, backend, torch_device)  # PHYSARUM_COMPILE_AHEAD=1
    windows: list[Window | None] = [_resumed_window(options)]
    if windows[0] is None and any(p.loop[0] == "closest" for p in presets):
        # a first pass finds the loops; the render repeats it (a resumed render's checkpoint has it)
        windows, simulation = find_windows(presets, simulation), None  # spawn_s counts this pass
        simulation = make_batch_simulation(presets, backend, torch_device)
    windows += [None] * (len(presets) - len(windows))
    clock.append(time.perf_counter())
    if note:
        notes[0].extend([*options.resume.notes, note])
    jobs = [
        Job(b, p, job_paths, job_notes, TrailLoop(p, window))
        for b, (p, job_paths, job_notes, window) in enumerate(zip(presets, paths, notes, windows))
    ]
    jobs[0].checkpoints = plan.record() if plan else None
    jobs[0].sinks = list(options.sinks)
    _restore_loop(jobs[0], simulation, options, torch_device)
    try:
        for job in jobs:
            job.open(options.frames_dir, torch_device, len(jobs), encoder_cores(job.index, len(jobs)))
            if plan is not None and journaled(job.preset, _reads(job, options)) and _whole(options, source):
                _keep_journal(job, plan, options, source)
        clock.append(time.perf_counter())
        if source is not None:  # the frames before the checkpoint, as the killed render made them
            for frame in source.frames(layout_of(presets[0], _reads(jobs[0], options)).kinds):
                jobs[0].pipeline.deliver(frame)
        course = _course(presets, paths, jobs, options, _first_frame(options, source))
        course.advance_to(simulation, course.warmup_end, options.on_step)
        _frame_loop(presets[0], simulation, jobs, options, course, _simulated(jobs, options))
        clock.append(time.perf_counter())
        for job in jobs:  # every job's encoders finish their files at once, then each is waited for
            job.end_input()
        for job in jobs:
            job.complete()
            job.close_journal()
        clock.append(time.perf_counter())
        phases = dict(
            zip(("spawn_s", "open_s", "frames_s", "finish_s"), (b - a for a, b in zip(clock, clock[1:])))
        )
        phases["total_s"] = clock[-1] - clock[0]
        if compiled is not None:  # within spawn_s
            phases["compile_ahead_s"] = compiled
        extra = [options.extra_files] + [None] * (len(jobs) - 1)  # the first job's (simulation 0)
        results = [
            _batch_result(job, backend, torch_device, phases, len(jobs), e) for job, e in zip(jobs, extra)
        ]
        for job in jobs:
            job.close_sinks(None if job.error is None else RenderError(job.error))
        return results
    except BaseException as error:
        for job in jobs:
            job.abort(error)
        raise


def compile_ahead(simulation, backend: str, device: torch.device, environ=os.environ) -> float | None:
    """Where COMPILE_AHEAD=1 asks for it and the simulation is Triton's on CUDA: the kernels of its
    first step compiled at once on threads (kernels/warmup.py: the launches recorded, not run;
    what is in Triton's cache already is loaded, not compiled) before that step would compile
    them one after another. The seconds it took, or None where it did not run. Off by default:
    it has not been measured on a GPU yet (benchmarks/unreleased/e2e.txt)."""
    if environ.get(COMPILE_AHEAD) != "1" or backend != "triton" or device.type != "cuda":
        return None
    from ...kernels import warmup  # start-up: triton, for the Triton backend only

    return warmup.compile_all(warmup.launches(simulation))["seconds"]


def _checkpoint_plan(presets: list[Preset], options: RenderOptions) -> CheckpointPlan | None:
    """The render's checkpoints and frame journal, checked before anything is written
    (RenderError when too many or too large for the disk) and stated on stderr unless quiet
    (sim/checkpoint_plan.py, out/journal.py)."""
    start = 0 if options.resume is None else options.resume.step
    reads = render_reads(presets[0], options.frames_dir is not None)
    layout = layout_of(presets[0], reads)

    def journal(last_step: int) -> int:
        frames = journal_frames(presets[0], last_step) if journaled(presets[0], reads) else 0
        return layout.bound(frames) if frames else 0

    plan = checkpoint_plan(presets, Path(options.out_dir) / presets[0].name, start, journal)
    if plan is not None and not options.quiet:
        print(printable(f"note: {plan.note()}"), file=sys.stderr)
    return plan


def _check_sinks_only(presets: list[Preset], options: RenderOptions) -> None:
    """A render that writes no files (options.write_files False) has its frames alone to give:
    it refuses what would write files all the same."""
    if options.write_files:
        return
    for preset in presets:
        writes = [name for name, section in _file_sections(preset) if section is not None]
        if writes or options.frames_dir is not None or options.resume is not None:
            raise ValueError(
                f"render_batch: a render without files cannot write {', '.join(writes) or 'a frames folder'}"
                " or resume; leave those out, or write files"
            )


def _file_sections(preset: Preset) -> list[tuple[str, object]]:
    """The sections of a preset that write files besides its outputs."""
    output = preset.output
    return [
        ("checkpoint", preset.checkpoint),
        ("output.fields", output.fields),
        ("output.volume", output.volume),
    ]


def _check_resume(presets: list[Preset], options: RenderOptions) -> None:
    """What a resumed render refuses from its preset alone, before its checkpoint's state is
    read: a batch of several."""
    if options.resume is not None and len(presets) > 1:
        raise ValueError("render_batch: a checkpoint resumes one render, not a batch of several")


def _looped(options: RenderOptions) -> bool:
    """Whether a resumed render continues its checkpoint's loop (members of its loop mode)."""
    resume = options.resume
    return resume is not None and resume.preset.loop[0] != "none" and resume.checkpoint.loop_taken is not None


def _resumed_window(options: RenderOptions) -> Window | None:
    """closest's loop as the checkpoint records it (no first pass again), else None."""
    if not _looped(options) or options.resume.checkpoint.loop_window is None:
        return None
    return Window(*options.resume.checkpoint.loop_window)


def _restore_loop(job: Job, simulation, options: RenderOptions, device) -> None:
    """A resumed render's loop as the checkpoint left it: the frames taken, crossfade's early
    maps (read now, checked against the maps this render colours)."""
    if not _looped(options):
        return
    checkpoint, preset = options.resume.checkpoint, job.preset
    kept = None
    if preset.loop[0] == "crossfade":
        agents = simulation.agents if needs_agents([preset]) else None
        shape = tuple(layer_map(preset, simulation.trail, agents, 0).shape)
        kept = checkpoint.kept(preset, shape)
    job.loop.restore(checkpoint.loop_taken, kept, device)


def _first_frame(options: RenderOptions, source: JournalSource | None) -> int | None:
    """The first frame a resumed render takes: after the frames its loop took (a looping
    render's checkpoint records them), or the journal's count, or (None) the course's rule."""
    if _looped(options):
        return options.resume.checkpoint.loop_taken
    return None if source is None else source.mark.frames


def _start(options: RenderOptions):
    """The state a render starts from: None (spawned), or a resumed render's checkpoint state."""
    return None if options.resume is None else options.resume.load_state()


def _reads(job: Job, options: RenderOptions) -> set[str]:
    return render_reads(job.preset, options.frames_dir is not None)


def _whole(options: RenderOptions, source: JournalSource | None) -> bool:
    """Whether the render hands over every frame from the first (so that it may keep a journal):
    not resumed, resumed re-feeding a journal, or resumed before its first frame."""
    resume = options.resume
    return resume is None or source is not None or journal_count(resume.checkpoint, resume.preset) == 0


def _keep_journal(
    job: Job, plan: CheckpointPlan, options: RenderOptions, source: JournalSource | None
) -> None:
    """Start the job's frame journal (render/out/journal.py) beside its checkpoints: the frames
    up to its last checkpoint's, continued in place when it is the journal it resumes from."""
    layout = layout_of(job.preset, _reads(job, options))
    folder, stem = job.paths["json"].parent, job.paths["json"].stem
    limit = journal_frames(job.preset, plan.steps[-1])
    if limit:  # checkpoints in the warmup alone cover no frame
        path = journal_path(folder, stem, job.preset, layout)
        job.keep_journal(JournalWriter(path, layout, limit, source, QUEUE_FRAMES))


def _course(
    presets: list[Preset], paths, jobs: list[Job], options: RenderOptions, first: int | None
) -> Course:
    """The batch's course of steps: from the spawn or the checkpoint it resumes (its first frame
    the journal's count when it re-fed one), stopping to write checkpoints, each recording the
    journal's prefix (render/sim/checkpoint.py), and each job's raw fields (render/out/fields.py)."""
    start = 0 if options.resume is None else options.resume.step
    if not options.write_files:  # nothing to stop for: no checkpoint, field or volume is written
        return Course(presets[0].run, start, [], first)
    folder, stem = paths[0]["json"].parent, paths[0]["json"].stem
    writers = checkpoint_stops(presets, folder, stem, jobs[0].mark, jobs[0].loop.members)
    stops = [*writers, FieldsStop(jobs), VolumeStop(jobs)]
    return Course(presets[0].run, start, stops, first)


def readers_beside(options: RenderOptions) -> tuple[str, ...]:
    """What a render with `options` reads besides its preset's outputs and the caller's sinks,
    by the flag that asks for it (formats/targets.py trimmed_run's `beside`; the estimate said
    before a render asks the same, run/estimate.py)."""
    beside = {
        "--frames-dir": options.frames_dir,
        "--stats": options.on_step,
        "--metrics": options.on_frame,
        "--resume": options.resume,
    }
    return tuple(name for name, value in beside.items() if value)


def _simulated(jobs: list[Job], options: RenderOptions) -> int:
    """The frames the batch simulates: every one, or the first ones alone where each job's
    platform target trims its MP4 and nothing else reads past the kept frames
    (out/specs.py render_trim); each trimmed job's notes say what was simulated."""
    beside = readers_beside(options)
    trims = [render_trim(job.preset, beside, options.sinks) if job.paths else None for job in jobs]
    frames = max(
        job.preset.frames if t is None or t.frames is None else t.frames for job, t in zip(jobs, trims)
    )
    for job, trim in zip(jobs, trims):
        if trim is not None:
            job.notes.append(trim.note(job.preset, frames))
    return frames


def _frame_loop(
    run: Preset, simulation, jobs: list[Job], options: RenderOptions, course: Course, frames: int
) -> None:
    """Advance the batch frame by frame along its course to its `frames`th frame, handing each
    job's frame to its encoders; the bar shows frames, steps per second (of each simulation)
    and the slowest encoder's frames per second."""
    began, first_step = time.perf_counter(), course.step
    label = run.name if len(jobs) == 1 else f"{len(jobs)} simulations"
    with tqdm(
        total=frames,
        initial=course.first_frame,
        unit="frame",
        disable=options.quiet,
        leave=False,
        desc=label,
        dynamic_ncols=True,
    ) as bar:
        for number in range(course.first_frame, frames):
            stop_if_requested()
            if all(job.error for job in jobs):
                break
            course.advance_to(simulation, course.frame_end(number), options.on_step)
            if options.on_frame is not None:
                options.on_frame(simulation, number, course.step)
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
    job: Job,
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
