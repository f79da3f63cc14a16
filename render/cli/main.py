"""The `physarum` command. Thin: parse flags, build a Preset, call one function.

Every flag defaults to None so that it layers over the preset file's value. Mistakes in the
input end in one message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from pathlib import Path

from ..base.errors import PresetError, RenderError, machine_problem, printable, shown
from ..base.interrupts import Terminated
from ..base.storage import is_url
from ..commands import render as render_command
from ..commands import sweep as sweep_command
from ..preset.catalog import resolve_preset_path
from ..run import preload
from . import show
from .arguments import flag_settings, parser, reduction, stop_settings
from .research import cmd_bench, cmd_explore, cmd_graph, cmd_profile, cmd_sensitivity

# The commands that simulate import torch (and the stages that need it) inside their function,
# each line marked `# start-up:`: help, presets, sweeps and validate answer without it. Those that
# read a preset import the preset schema (pydantic, 0.2-0.4 s) there too: help and the presets
# listing answer without it (tests/test_cli_main.py checks both).

EXIT_USAGE = 2


def _say(line: str) -> None:
    """A line a render speaks before it starts, on stderr at once."""
    print(printable(line), file=sys.stderr, flush=True)


def cmd_render(args) -> int:
    preload.start(args.backend, args.device)  # PHYSARUM_PRELOAD=1: torch on a thread meanwhile
    from ..out.specs import gif_size  # start-up: the preset schema
    from ..run.reload import load_for_render  # start-up: the same

    args.settings = [*args.settings, *flag_settings(args), *stop_settings(args)]
    if args.preview:
        out = render_command.destination(args.out)
        args.out = f"{out.rstrip('/')}/previews" if isinstance(out, str) else str(out / "previews")
    reduced = ""
    if not args.resume:  # a preset is read without torch: its mistakes are the only message
        preset, resume = load_for_render(args), None
        preset, reduced = reduction(args, preset)  # --preview, --reduce: the preset made smaller
        if reduced and not args.quiet:
            print(printable(reduced), file=sys.stderr)
        render_command.check(preset)
    else:
        show.status(args.quiet, "loading torch")
        from ..run.resume import load_for_resume  # start-up: torch

        preset, resume = load_for_resume(args)
    call = render_command.RenderCall(
        out=render_command.destination(args.out),
        backend=args.backend,
        device=args.device,
        quiet=args.quiet,
        frames_dir=Path(args.frames_dir) if args.frames_dir else None,
        stats=bool(args.stats),
        metrics=bool(args.metrics),
        source=Path(args.from_file) if args.from_file else None,
        resume=resume,
        interruptible=True,
        reduced=bool(reduced),
    )
    rendered = render_command.run(preset, call, say=_say)
    result, outputs = rendered.result, rendered.paths
    for note in result.notes:  # every line through printable: paths and names are the user's
        print(printable(f"note: {note}"), file=sys.stderr)
    if result.replaced:
        names = ", ".join(path.name for path in result.replaced)
        print(
            printable(f"note: replaced the earlier files in {result.replaced[0].parent}: {names}"),
            file=sys.stderr,
        )
    for fmt, path in result.outputs.items():  # a URL's where the files went into object storage
        size = rendered.sizes[fmt] if rendered.sizes is not None else path.stat().st_size
        print(printable(f"{path}  {size / 1024:.0f} KiB" if not args.quiet else f"{fmt} {path} {size}"))
    if not args.quiet:
        show.print_budget(outputs["json"], gif_size(preset), rendered.sidecar)
        t = result.timings
        encoders = ", ".join(f"{k[7:-2]} {v:.1f} s" for k, v in t.items() if k.startswith("encode_"))
        held = ""
        if result.bound:  # the stage that held it, and its seconds (out/stages.py)
            key = f"stage_{'wait_' + result.bound[8:] if result.bound.startswith('encoder ') else result.bound}_s"
            held = f", bound by {result.bound} ({t.get(key, 0.0):.1f} s)"
        print(
            printable(
                f"{result.backend} on {result.device}: {t['total_s']:.1f} s{held} (encoder busy: {encoders})"
            ),
            file=sys.stderr,
        )
    return 0


def cmd_still(args) -> int:
    from ..commands import presets  # start-up: the preset schema
    from ..commands import still as still_command  # start-up: light; torch inside its run

    seed = [f"seed={args.seed}"] if args.seed is not None else []
    preset = presets.load(args.preset, [*args.settings, *seed])
    formats = None if args.formats is None else tuple(f.strip() for f in args.formats.split(","))
    call = still_command.StillCall(
        out=Path(args.out),
        step=args.step,
        size=args.size,
        print_size=args.print_size,
        dpi=args.dpi,
        formats=formats,
        backend=args.backend,
        device=args.device,
        quiet=args.quiet,
        interruptible=True,
    )
    still = still_command.run(preset, call, say=_say)
    for note in still.notes:
        print(printable(f"note: {note}"), file=sys.stderr)
    for fmt, path in still.paths.items():
        size = path.stat().st_size
        print(printable(f"{path}  {size / 1024:.0f} KiB" if not args.quiet else f"{fmt} {path} {size}"))
    if not args.quiet:
        print(printable(f"{still.backend} on {still.device}: {still.seconds:.1f} s"), file=sys.stderr)
    return 0


def cmd_sweep(args) -> int:
    from .. import sweep as sweeps  # start-up: the sweep modules, for sweep only

    sweep = sweep_command.load(args.sweep)
    if args.dry_run:
        lines = sweep_command.dry_run(
            sweep, args.out, args.batch, args.files, args.max_attempts, args.ray, args.per_node
        )
        print("\n".join(map(printable, lines)))
        return 0
    summary = sweep_command.run(
        sweep,
        args.out,
        args.batch,
        files=args.files,
        max_attempts=args.max_attempts,
        per_node=args.per_node,
        backend=args.backend,
        devices=args.devices,
        ray=args.ray,
        retry_failed=args.retry_failed,
        quiet=args.quiet,
        gallery=not args.no_gallery,
    )
    failed = summary.failed
    print(
        printable(
            f"{sweep.name}: {len(sweep.jobs)} jobs: {len(sweep.jobs) - len(failed)} done "
            f"({summary.ran} run now, {summary.skipped} done before), {len(failed)} failed, "
            f"{summary.seconds:.1f} s; manifest {summary.sweep_dir / 'manifest.jsonl'}"
        )
    )
    if summary.gallery:
        print(printable(f"gallery: {summary.gallery}"))
    for record in failed:
        error = (record.get("error") or "").splitlines()[0] if record.get("error") else record.get("status")
        name, params = record.get("name", record["id"]), sweeps.format_params(record.get("params", {}))
        print(printable(f"failed: {name} {record['id']} ({params}): {error}"))
    if failed:
        print(f"{len(failed)} jobs failed; run again with --retry-failed to retry them", file=sys.stderr)
    return 1 if failed else 0


def cmd_presets(args) -> int:
    if args.copy is not None:  # the preset and its images into a folder: show.copy_preset
        return show.print_copy(args.name, args.copy)
    if args.name is not None:  # one curated preset's YAML, to copy and edit
        sys.stdout.write(show.preset_text(args.name))
        return 0
    print("\n".join(map(printable, show.preset_lines())))
    return 0


def cmd_sweeps(args) -> int:
    print("\n".join(map(printable, show.sweep_lines())))
    return 0


def cmd_validate(args) -> int:
    from ..preset import audio as soundtrack  # start-up: the preset schema
    from ..preset import load_preset  # start-up: the preset schema

    if args.plot is not None:  # refused before any preset is read
        if len(args.presets) != 1:
            raise RenderError(f"--plot: plots one preset's curves; {len(args.presets)} presets given")
        problem = soundtrack.plot_path_problem(Path(args.plot))
        if problem:
            raise RenderError(f"--plot: {problem}")
    problems = []
    for name in args.presets:
        try:
            preset = load_preset(resolve_preset_path(name))
            size = f"{preset.canvas.width}x{preset.canvas.height}"
            if preset.dims == 3:  # a volume, seen in frames of the camera's size
                size += f"x{preset.canvas.depth}, frames {'x'.join(map(str, preset.frame_size))}"
            print(printable(f"ok  {name}  ({preset.name}: {preset.frames} frames, {size})"))
            for line in soundtrack.validate_lines(preset):  # the soundtrack's resolved curves (docs/audio.md)
                print(printable(line))
            if args.plot is not None:
                try:
                    soundtrack.plot_curves(preset, Path(args.plot))
                except ValueError as error:
                    raise RenderError(f"--plot: {error}") from None
                print(printable(f"    plot: {args.plot}"))
        except PresetError as error:
            problems.extend(error.problems)
    if problems:
        raise PresetError(problems)
    return 0


def cmd_serve(args) -> int:
    from .serve import serve  # start-up: torch and the package, imported once for what it serves

    return serve(args)


def cmd_live(args) -> int:
    from ..live.command import run_live  # start-up: torch and aiohttp, for live only

    return run_live(args)


def cmd_warmup(args) -> int:
    """Triton's kernel cache filled for presets (default: every curated one): each preset's
    simulation made at its size, the launches of its first step compiled at once on threads
    (kernels/warmup.py), then two frames of it simulated and coloured, which builds what
    compiling alone does not (Triton's launchers, the colouring's kernels). A line per preset."""
    from ..preset import load_preset  # start-up: the preset schema
    from ..preset.catalog import preset_files  # start-up: the same

    presets = [load_preset(resolve_preset_path(name)) for name in args.presets or preset_files()]
    show.status(args.quiet, "loading torch")
    import time

    import torch  # start-up: torch

    from ...kernels import warmup  # start-up: torch, triton
    from ..look.colour import make_colourist  # start-up: torch
    from ..look.layers import layer_map, needs_agents  # start-up: torch
    from ..look.volume import VolumeColourist  # start-up: torch
    from ..run.machine import resolve_backend, resolve_device  # start-up: torch
    from ..sim.simulation import make_batch_simulation  # start-up: torch

    device = resolve_device(args.device)
    backend = resolve_backend(args.backend, device)
    if backend != "triton":  # the other backends compile nothing ahead
        print(printable(f"nothing to compile: the {backend} backend on {device} has no kernels to cache"))
        return 0
    for preset in presets:
        began = time.perf_counter()
        simulation = make_batch_simulation([preset], backend, device)
        done = warmup.compile_all(warmup.launches(simulation), args.threads)
        simulation.advance(2 * preset.run.steps_per_frame)
        agents = simulation.agents if needs_agents([preset]) else None
        colourist = VolumeColourist(preset) if preset.dims == 3 else make_colourist(preset)
        colourist.colour(layer_map(preset, simulation.trail, agents, 0), 0)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        if not args.quiet:
            how = "at once" if done["parallel"] else "one after another"
            print(
                printable(
                    f"{preset.name}: {len(done['kernels'])} kernels compiled {how} in {done['seconds']:.1f} s, "
                    f"ready in {time.perf_counter() - began:.1f} s ({backend} on {device})"
                )
            )
        del simulation
    return 0


COMMANDS = {
    "render": cmd_render,
    "presets": cmd_presets,
    "sweeps": cmd_sweeps,
    "validate": cmd_validate,
    "profile": cmd_profile,
    "bench": cmd_bench,
    "sweep": cmd_sweep,
    "sensitivity": cmd_sensitivity,
    "graph": cmd_graph,
    "explore": cmd_explore,
    "live": cmd_live,
    "serve": cmd_serve,
    "warmup": cmd_warmup,
    "still": cmd_still,
}


def fail(problems: list[str]) -> int:
    """Print one message (a line per problem, each made printable, at most MAX_PROBLEMS of them
    and a count of the rest) on stderr; the exit code 2."""
    for problem in shown(problems):
        print(f"error: {printable(problem)}", file=sys.stderr)
    return EXIT_USAGE


URL_OUT = {"render", "sweep"}  # the commands whose --out may be a URL (base/storage.py)


def check_local_out(args) -> None:
    """RenderError where a command that writes only into local folders is given --out URL (graph
    --out s3://b/g wrote into a local folder named 's3:')."""
    out = getattr(args, "out", None)
    if args.command not in URL_OUT and isinstance(out, str) and is_url(out):
        raise RenderError(
            f"--out {out}: physarum {args.command} writes into a local folder, not a URL; give a folder "
            "(physarum render and sweep take --out URL)"
        )


def main(argv: list[str] | None = None) -> int:
    """Run one command. Bad input, a machine that cannot do it (a file or a read-only folder where
    the outputs go, a full disk, memory that runs out after the check) end in one message and
    exit code 2; a killed render leaves nothing partial behind (files.written_whole, the writers)."""
    args = parser().parse_args(argv)
    try:
        check_local_out(args)
        return COMMANDS[args.command](args)
    except PresetError as error:
        return fail(error.problems)
    except RenderError as error:  # a message of several lines keeps its line breaks
        return fail(str(error).split("\n"))
    except Terminated as signal:  # 128 + the signal's number, as a shell reports a killed command
        print(f"terminated ({signal}); no partial output was left", file=sys.stderr)
        return 128 + signal.signum
    except KeyboardInterrupt:
        print("interrupted; no partial output was left", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `physarum presets | head`: the reader left, not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except (OSError, MemoryError, RuntimeError) as error:
        problem = machine_problem(error)
        if problem is None:
            raise
        return fail([problem])


def run() -> None:
    """The `physarum` command run in this process (cli/entry.py hands it to a server first where
    one runs): main(), then finish."""
    finish(main())


def finish(code: int) -> None:
    """End the process at once with code, skipping the interpreter's teardown of torch, CUDA's
    context and Triton (0.6-0.7 s of a 2-s render on the 2-core CPU). By then every file the
    command writes is committed and closed; stdout and stderr are flushed and the atexit handlers
    (temporary folders, multiprocessing, Ray) run as at a normal exit. Where a thread that is not
    a daemon still runs, the process ends the normal way (sys.exit)."""
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        sys.exit(code)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a reader that left, a closed stream: nothing more to say
            pass
    atexit._run_exitfuncs()  # CPython's own exit runs these; os._exit would not
    os._exit(code)


if __name__ == "__main__":
    from .entry import run as entry_run

    entry_run()
