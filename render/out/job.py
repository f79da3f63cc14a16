"""One job of a render on its way to its files: its writers and frame pipeline, its JSON
sidecar, and its files committed together (all of them replace the earlier files of their names
at once, or none does: docs/safety.md). A render is a batch of one or more jobs (run/runner.py).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..base.errors import RenderError, machine_problem, os_error_message, out_of_memory
from ..base.files import (
    PartialFile,
    commit_together,
    remove_stale_parts,
    remove_stale_parts_of,
    stage_json,
)
from ..base.locks import LockHeld, NameLock
from ..look.colour import make_colourist
from ..look.loops import TrailLoop
from ..look.volume import VolumeColourist
from ..preset import Preset
from ..preset import audio as soundtrack
from ..preset.provenance import embedded_text, encoder_builds, version
from ..sim import keyframes
from ..sim.checkpoint import JournalMark
from .frames import EncoderWorker, FramePipeline, open_workers
from .journal import JournalWriter
from .sinks import Sink
from .specs import output_paths, output_specs, output_stem
from .stages import bound, stage_timings
from .volume_export import SpacetimeWriter


@dataclass
class RenderResult:
    # the files by output name: each format's ("gif", "mp4", ...), a print still's ("still.png",
    # "still.tiff", "still.exr": out/specs.py output_paths), the sidecar's ("json"), then the
    # extra files committed with them (--stats, --metrics)
    outputs: dict[str, Path]
    backend: str
    device: str
    timings: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    error: str | None = None  # render_batch: why this job failed (earlier files left as they were)
    replaced: list[Path] = field(default_factory=list)  # earlier files these outputs replaced
    bound: str | None = None  # the stage that bound the render (out/stages.py)


def sidecar(preset: Preset, result: RenderResult, sizes: dict[str, int], loop: dict | None = None) -> dict:
    """The JSON sidecar of a finished job: the preset (portable and as embedded text), where and
    how it ran (with the encoder builds that wrote its bytes, provenance.encoder_builds), its
    timings and notes, each output file's name and size (sizes: bytes by output name, a print
    still's too), with output.loop_mode the loop (loops.TrailLoop.describe) and with schedules
    their keyframes (keyframes.describe)."""
    out = {
        "physarum_version": version(),
        "preset": preset.portable_dump(),
        "preset_yaml": embedded_text(preset),
        "seed": preset.seed,
        "backend": result.backend,
        "device": result.device,
        "torch_version": torch.__version__,
        "encoders": encoder_builds(),
        "frames": preset.frames,
        "steps": preset.run.steps,
        "timings": {k: round(v, 4) for k, v in result.timings.items()},
        "bound": result.bound,
        "notes": result.notes,
        "outputs": {
            fmt: {"file": p.name, "bytes": sizes[fmt]} for fmt, p in result.outputs.items() if fmt != "json"
        },
    }
    if loop is not None:
        out["loop"] = loop
    if preset.schedules:
        out["schedules"] = keyframes.describe(preset)
    if preset.audio is not None:  # the soundtrack: its PCM's sha256, tempo, followed keys (docs/audio.md)
        out["audio"] = soundtrack.describe(preset)
    return out


@dataclass
class Job:
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
    journal: JournalWriter | None = None  # its frame journal (render/out/journal.py), if it keeps one
    sinks: list[Sink] = field(default_factory=list)  # a caller's sinks (RenderOptions.sinks), closed last

    def fail(self, error: BaseException) -> None:
        """Stop this job: abort its encoders and remove its temporary files. Its outputs' names
        keep whatever was there before (an earlier render's files), untouched."""
        cause = error.__cause__ if isinstance(error, RenderError) and error.__cause__ else error
        if out_of_memory(cause):  # the one message a render of its own gives (errors.machine_problem)
            message = machine_problem(cause)
        else:
            message = os_error_message(error) if isinstance(error, OSError) else str(error)
        self.error = self.error or message
        self.abort(error)

    def abort(self, error: BaseException | None = None) -> None:
        for worker in self.workers:
            worker.abort()
        for partial in self.partials:
            partial.abort()
        self.close_journal()
        self.close_sinks(error or RenderError(self.error or "the render stopped"))

    def close_sinks(self, error: BaseException | None = None) -> None:
        """The caller's sinks told that no frame follows (error: why the render ended early);
        each once."""
        sinks, self.sinks = self.sinks, []
        for sink in sinks:
            sink.close(error)

    def keep_journal(self, journal: JournalWriter) -> None:
        """Journal every frame handed over from now on (the pipeline must be open)."""
        self.journal = journal
        self.pipeline.add(journal)

    def mark(self) -> JournalMark | None:
        """Before a checkpoint: every frame taken so far handed over and journaled, the journal
        flushed; the prefix the checkpoint records (None without a journal)."""
        if self.journal is None:
            return None
        self.hand_over()
        return self.journal.mark()

    def close_journal(self) -> None:
        """The journal closed; it stays, whole up to its last mark, for the checkpoints that
        record it (docs/checkpoints.md)."""
        if self.journal is not None:
            self.journal.close()

    def open(self, frames_dir: Path | None, device: torch.device, jobs: int, cores: list[int] | None) -> None:
        """Open this job's writers and its frame pipeline (one of `jobs`: with more than one,
        the encoders run in a child process, on `cores`, its share: machine.encoder_cores). A job
        that writes no files (no paths: its frames go to the caller's sinks alone) opens none."""
        preset = self.preset  # a 3D preset's frames are its volume's renders (look/volume.py)
        colourist = VolumeColourist(preset) if preset.dims == 3 else make_colourist(preset)
        if self.paths:
            specs = output_specs(self.preset, self.paths, colourist.table(0), frames_dir, jobs)
            job = self.paths["json"].with_suffix("")
            self.workers = open_workers(specs, job, jobs > 1, cores)
            if preset.dims == 2 and preset.output.volume is not None:  # its space-time stack
                self.workers.append(EncoderWorker("spacetime", SpacetimeWriter(self), {"preview"}))
        sinks = [*self.workers, *self.sinks]
        self.pipeline = FramePipeline(self.preset, colourist, sinks, device, self.loop.frames)

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
        does not list) and rename them all together; a job without files commits nothing. The
        result's timings gain each stage's seconds and the stage that bound it (out/stages.py)."""
        clock = self.pipeline.clock if self.pipeline is not None else None
        result.timings.update(
            stage_timings(clock, {w.name: tuple(w.waited) for w in self.workers}, result.timings)
        )
        result.bound = bound(result.timings)
        if not self.paths:
            return
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


def job_paths(
    presets: Sequence[Preset], out_dir: Path, frames_dir: Path | None, held: ExitStack
) -> list[dict[str, Path]]:
    """Every job's output paths, their folders made, each job's name locked (name_lock: kept
    in `held`, released when the caller closes it, after the commit) and stale temporary files
    of killed runs beside them removed; two jobs may not share their files."""
    paths = [output_paths(p, Path(out_dir)) for p in presets]
    seen = set()
    for preset, job_paths in zip(presets, paths):
        if job_paths["json"] in seen:
            raise RenderError(
                f"{preset.name}: two presets of the batch would write the same files "
                f"({job_paths['json'].with_suffix('')}.*); give them different names or seeds"
            )
        seen.add(job_paths["json"])
    stems = [job_paths["json"].with_suffix("") for job_paths in paths]
    if frames_dir:
        stems += [Path(frames_dir) / output_stem(preset) for preset in presets]
    for stem in stems:
        stem.parent.mkdir(parents=True, exist_ok=True)
    for stem in {os.path.realpath(stem): stem for stem in stems}.values():  # a folder named twice: once
        held.callback(name_lock(stem).release)
    for job_paths in paths:
        for path in job_paths.values():
            remove_stale_parts_of(path)
    if frames_dir:
        for preset in presets:
            remove_stale_parts(Path(frames_dir), f"{glob.escape(output_stem(preset))}-*.png")
    return paths


def name_lock(stem: Path) -> NameLock:
    """The lock of the files STEM.* (and STEM-*: checkpoints, journal, fields, frames), taken:
    .STEM.lock beside them (render/base/locks.py). Where another process holds it, one
    RenderError naming that process and the files: a second render of one name refuses rather
    than mix its files with the first's (docs/safety.md)."""
    lock = NameLock(stem.with_name(f".{stem.name}.lock"))
    try:
        return lock.take()
    except LockHeld as held:
        who = "another process" if held.pid is None else f"process {held.pid}"
        raise RenderError(
            f"{stem}.*: {who} is rendering these files now (it holds {held.path}); "
            "wait until it ends, or render into another --out folder or with another seed"
        ) from None
    except OSError as error:
        raise RenderError(f"{error.filename}: {error.strerror}") from None
