"""A render, from a preset to its files: the one place that checks, assembles and runs it, for
`physarum render` (render/cli/main.py, which reads the preset from flags: a file, --from, --resume,
--preview) and for `physarum.render` (physarum_api/, which is given a Preset).

The checks that need no torch come first (the text every output embeds must read back:
provenance.check_readable); then torch, the outputs' paths, the guard that a render --from FILE
never writes over FILE, the recorders of --stats and --metrics (committed with the render's
files), the estimate said before a long render, and the run.

An `out` that is an fsspec URL (s3://bucket/prefix, gs://..., memory:// in tests) renders into a
local temporary folder, then stores the committed files through base/storage.py's ObjectStore
under URL/<name>/, each file whole (one PUT) and the sidecar last, so that a sidecar in the store
says its render's files are all there. The upload is one commit as far as an object store allows
(ObjectStore.put_together): each earlier object of the same name is copied aside before its
upload, and where the store refuses a write (one RenderError naming the file's URL) or Ctrl-C,
SIGTERM or SIGHUP comes during the upload (deferred to the end of the PUT in flight:
interrupts.signals_deferred), the objects stored so far get their earlier bytes back, so the store
holds what it held before (docs/outputs.md). The URL is checked (credentials only from the
environment, fsspec installed) and the store probed (ObjectStore.probe: an empty hidden object
written and removed) before torch is loaded and anything renders: a store that cannot be
written is one message, not minutes of work lost. A folder, or a file:// URL, is the local
render as always.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..base.interrupts import signals_deferred, signals_interrupt
from ..base.storage import Location, ObjectStore, is_url, open_store


@dataclass(frozen=True)
class RenderCall:
    """How a preset is rendered: the flags of `physarum render` (or the API's arguments) that
    are not preset keys."""

    out: Path | str  # a folder, or an fsspec URL (destination())
    backend: str = "auto"
    device: str | None = None
    quiet: bool = True
    frames_dir: Path | None = None
    stats: bool = False  # --stats: per-step statistics, <stem>.stats.csv
    metrics: bool = False  # --metrics: per-frame metrics, <stem>.metrics.csv
    source: Path | None = None  # render --from FILE: the file this render never writes over
    resume: object = None  # run/resume.Resume: the state a resumed render starts from
    interruptible: bool = False  # SIGTERM and SIGHUP stop it at the next frame, like Ctrl-C
    reduced: bool = False  # --preview or --reduce made the preset: its estimate suggests no preview


@dataclass(frozen=True)
class Rendered:
    """A render's result (runner.RenderResult) and the paths its outputs have (by format, and
    "json" for the sidecar)."""

    result: object
    paths: dict[str, Path]
    # a render into object storage: each stored file's bytes by format, and the sidecar's text
    # (its local files are gone); None for a local render, whose files are where paths say
    sizes: dict[str, int] | None = None
    sidecar: str | None = None


def destination(out: str | Path) -> str | Path:
    """--out as a render takes it: an fsspec URL (s3://bucket/prefix) as written, else a folder
    (a Path would make 's3://b' 's3:/b')."""
    return out if is_url(out) else Path(out)


def check(preset) -> None:
    """What a render refuses before torch is loaded, one message each (RenderError): a preset
    whose embedded text render --from could not read back."""
    from ..preset.provenance import check_readable  # start-up: the preset schema

    check_readable(preset)


def run(preset, call: RenderCall, say: Callable[[str], None] | None = None) -> Rendered:
    """Render `preset` as `call` says; `say` (unless quiet) is given the lines a render speaks
    before it starts: what it loads, the estimate of a long one, the kernels' compilation.
    RenderError or PresetError for what cannot be rendered, before anything is written."""
    check(preset)
    if not is_url(call.out):
        return _run_here(preset, call, say)
    store = open_store(call.out)  # refused here (credentials in it, no fsspec), before torch
    if store.local:  # file://: the local folder
        return _run_here(preset, dataclasses.replace(call, out=store.root), say)
    try:
        store.probe()  # refused here (no credentials, no bucket, no connection), before torch
        return _run_into_store(preset, call, store, say)
    finally:
        store.close()


def _run_into_store(preset, call: RenderCall, store: ObjectStore, say) -> Rendered:
    """The render into a temporary folder, then its files stored (see the module's text)."""
    with tempfile.TemporaryDirectory(prefix=f"physarum-render-{os.getpid()}-") as folder:
        here = Path(folder)
        rendered = _run_here(preset, dataclasses.replace(call, out=here), say)
        sidecar = rendered.paths["json"]
        rels = sorted(
            path.relative_to(here).as_posix()
            for path in here.rglob("*")
            if path.is_file() and not path.name.startswith(".")  # a name's lock, of no render's files
        )
        last = sidecar.relative_to(here).as_posix()
        uploads = [(here / rel, rel) for rel in [*(rel for rel in rels if rel != last), last]]  # sidecar last
        with signals_deferred() as signals:  # a signal stops it between two uploads, never in one
            store.put_together(uploads, signals.check)  # RenderError naming the URL where the store refuses
        files = {**rendered.paths, **rendered.result.outputs}
        sizes = {fmt: path.stat().st_size for fmt, path in files.items()}
        text = sidecar.read_text(encoding="utf-8")

    def stored(path: Path) -> Location:
        return store.location / path.relative_to(here).as_posix()

    result = rendered.result
    result = dataclasses.replace(result, outputs={fmt: stored(p) for fmt, p in result.outputs.items()})
    paths = {fmt: stored(path) for fmt, path in rendered.paths.items()}
    return Rendered(result, paths, sizes, text)


def _run_here(preset, call: RenderCall, say) -> Rendered:
    """The render into the local folder call.out."""
    from ..formats.gif import start_workers  # start-up: no torch
    from ..formats.gif_pool import end_ahead  # start-up: no torch
    from ..out.specs import gif_size  # start-up: the preset schema

    speak = say if (say is not None and not call.quiet) else (lambda line: None)
    start_workers(preset, gif_size(preset))  # the GIF's, ready when its frames come (gif_pool)
    try:
        return _render_here(preset, call, speak)
    finally:
        end_ahead()  # those its GIF did not take: a render that failed before it


def _render_here(preset, call: RenderCall, speak: Callable[[str], None]) -> Rendered:
    """_run_here's render, its GIF's workers started."""
    from ..out.specs import output_paths  # start-up: the preset schema

    if call.resume is None:  # a render speaks from its first second (a resumed one has: its state)
        speak("physarum: loading torch...")
    from ..out.metrics import MetricsCsv  # start-up: torch
    from ..run import machine  # start-up: torch
    from ..run.estimate import estimate_line  # start-up: torch
    from ..run.reload import refuse_writing_over  # start-up: the preset schema
    from ..run.runner import COMPILE_AHEAD, RenderOptions, readers_beside, render  # start-up: torch
    from ..tools.stats import StatsRecorder  # start-up: torch

    paths = output_paths(preset, call.out)
    stats_path = paths["json"].with_suffix(".stats.csv")
    metrics_path = paths["json"].with_suffix(".metrics.csv")
    if call.source is not None:
        refuse_writing_over(call.source, [*paths.values(), stats_path, metrics_path])
    stats = StatsRecorder(stats_path) if call.stats else None
    metrics = MetricsCsv(metrics_path, preset.species_count) if call.metrics else None
    staged = [recorder.staged for recorder in (stats, metrics) if recorder is not None]
    options = RenderOptions(
        backend=call.backend,
        device=call.device,
        out_dir=call.out,
        quiet=call.quiet,
        frames_dir=call.frames_dir,
        on_step=stats,
        on_frame=metrics,
        # committed with the render's files
        extra_files=(lambda: {k: v for files in staged for k, v in files().items()}) if staged else None,
        resume=call.resume,
    )
    if not call.quiet:
        device = machine.resolve_device(call.device)
        backend = machine.resolve_backend(call.backend, device)
        # before a render of a minute or more, of the steps it simulates (a target's trim)
        start = call.resume.step if call.resume is not None else 0
        estimate = estimate_line(preset, device.type, backend, readers_beside(options), start, call.reduced)
        if estimate:
            speak(estimate)
        if backend == "triton":
            ahead = os.environ.get(COMPILE_AHEAD) == "1"  # runner.compile_ahead
            how = "compiled at once before the first step" if ahead else "compiled on first use"
            speak(f"physarum: preparing the Triton kernels ({how}, then cached)...")
    with signals_interrupt() if call.interruptible else contextlib.nullcontext():
        result = render(preset, options)
    return Rendered(result, paths)
