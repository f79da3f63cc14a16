"""The `physarum` command's flags (argparse): one subcommand per job, every flag defaulting to
None so that it layers over the preset file's value. render/cli/main.py runs what they name."""

from __future__ import annotations

import argparse
from fractions import Fraction
from typing import TYPE_CHECKING

from .. import __version__
from ..base.errors import RenderError
from ..formats.gif_targets import GIF_TARGETS
from ..formats.targets import TARGETS

if TYPE_CHECKING:
    from ..preset import Preset

# The parser is built by every command, --help too: nothing here builds the preset schema
# (pydantic); `reduction` imports it for the renders that reduce (`# start-up:`).

PREVIEW_SIDE = 256  # --preview: the reduced canvas's short side (render/preset/reduce.py)
PREVIEW_SIDE_3D = 48  # a 3D preset's (its volume's short side of width and height)
MAX_REDUCE = 1024  # --reduce K: at most this (the canvas stops at 8 pixels a side anyway)


def flag_settings(args) -> list[str]:
    """The render flags that stand for preset keys, as --set settings: the GIF budget flags, and
    --preview (formats [gif] at the size of the reduced canvas unless --scale, area averaged,
    the 'preview' budget unless a budget flag; the canvas is reduced by `reduction`). Outputs
    carry them, so --from renders the same file again."""
    if args.reduce is not None and args.resume:
        raise RenderError(
            "--reduce: a resumed render keeps its checkpoint's canvas; render the preset with --reduce"
        )
    settings = []
    target = getattr(args, "target", None)
    budget = args.gif_max_bytes or args.gif_target or (target if target in GIF_TARGETS else None)
    if args.preview:
        settings.extend(["output.formats=[gif]", "output.gif_resample=area"])
        if args.scale is None:
            settings.append("output.gif_scale=1.0")
        budget = budget or "preview"
    if budget is not None:
        settings.append(f"output.gif_max_bytes={budget}")
    if target is not None:
        settings.append(f"output.target={target}")
    return settings


def add_settings(command: argparse.ArgumentParser, example: str) -> None:
    """A command's repeatable --set KEY=VALUE (args.settings), with an example of its own."""
    command.add_argument(
        "--set",
        dest="settings",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"override a preset key, e.g. --set {example} (repeatable)",
    )


def add_backend(command: argparse.ArgumentParser, device: bool = True) -> None:
    """A command's --backend (and, with device, --device) flags."""
    command.add_argument(
        "--backend", default="auto", help="auto (Triton on a GPU, else torch), torch or triton"
    )
    if device:
        command.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present)")


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="physarum", description="Render Physarum slime-mould animations.")
    parser.add_argument("--version", action="version", version=f"physarum {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    render = commands.add_parser("render", help="render a preset to GIF, MP4 and PNG")
    source = render.add_mutually_exclusive_group(required=True)
    source.add_argument("preset", nargs="?", help="a preset YAML file, or the name of a curated preset")
    source.add_argument(
        "--from",
        dest="from_file",
        metavar="FILE",
        help="render again from what a GIF, MP4, WebP, PNG or JSON output carries (its images included)",
    )
    render.add_argument(
        "--images",
        metavar="DIR",
        default=None,
        help="with --from: read the images the file names from DIR (relative paths under it) instead of "
        "those it carries; needed for files of output version 2 or earlier",
    )
    source.add_argument(
        "--resume",
        metavar="CHECKPOINT",
        help="continue from a checkpoint (.npz) a render wrote; with --set, a branch (docs/checkpoints.md)",
    )
    add_settings(render, "model.decay=0.05")
    render.add_argument("--seed", type=int, default=None, help="override the preset's seed")
    add_backend(render)
    render.add_argument(
        "--out",
        default="outputs",
        help="output folder (default: outputs), or an fsspec URL: s3://bucket/prefix (physarum[cloud])",
    )
    render.add_argument("--quiet", action="store_true", help="no progress bar; one line per output")
    render.add_argument(
        "--scale",
        type=float,
        default=None,
        help="GIF size as a fraction of the canvas (output.gif_scale), for previews of large canvases",
    )
    budget = render.add_mutually_exclusive_group()
    budget.add_argument(
        "--gif-max-bytes",
        default=None,
        metavar="SIZE",
        help="GIF byte budget (output.gif_max_bytes): bytes, a size like 10MB, or a target name; "
        "the render chooses the best GIF that fits (fewer levels, smaller, fewer frames)",
    )
    budget.add_argument(
        "--gif-target",
        default=None,
        choices=list(GIF_TARGETS),
        help="GIF byte budget of a platform: "
        + ", ".join(f"{k} {v / 1e6:g} MB" for k, v in GIF_TARGETS.items()),
    )
    render.add_argument(
        "--target",
        default=None,
        choices=list(TARGETS),
        help="fit the MP4 to a platform (output.target): its size, aspect (padded, or cropped with "
        "--set output.target_fit=crop), frame rate, duration (looped or trimmed) and file size, and "
        "the GIF to its budget where it takes GIFs ("
        + ", ".join(f"{k} {v / 1e6:g} MB" for k, v in GIF_TARGETS.items() if k in TARGETS)
        + "; a budget flag wins); refused before work where the render cannot meet it "
        "(docs/outputs.md, 'Platform targets')",
    )
    render.add_argument(
        "--preview",
        action="store_true",
        help=f"a quick look: the same picture on a canvas of {PREVIEW_SIDE} pixels on its short side (more, "
        "within seconds of work, where a sensor would reach under 3.5 pixels) "
        "(fewer agents at the same density, distances scaled: docs/presets.md, 'Previews'), the GIF "
        f"alone within {GIF_TARGETS['preview'] / 1e6:g} MB (or the budget flags), into OUT/previews",
    )
    render.add_argument(
        "--reduce",
        type=float,
        default=None,
        metavar="K",
        help="the same picture, smaller and faster: the canvas's sides / K, the agents / K^2 (the same "
        "density), distances / K (with --preview: instead of its size)",
    )
    render.add_argument(
        "--frames-dir", default=None, metavar="DIR", help="also write every frame as a numbered PNG into DIR"
    )
    render.add_argument(
        "--stats",
        action="store_true",
        help="also write per-step trail statistics as CSV (<name>-s<seed>.stats.csv)",
    )
    render.add_argument(
        "--metrics",
        action="store_true",
        help="also write per-frame metrics (mass, coverage, veins, travel, spectral bands) as CSV "
        "(<name>-s<seed>.metrics.csv)",
    )

    render.add_argument(
        "--checkpoint-every",
        type=int,
        default=None,
        metavar="N",
        help="write the whole simulation state every N steps (checkpoint.every)",
    )
    render.add_argument(
        "--checkpoint-at",
        default=None,
        metavar="STEPS",
        help="write the whole simulation state at these steps, e.g. 100,500 (checkpoint.at)",
    )
    render.add_argument(
        "--fields-at",
        default=None,
        metavar="STEPS",
        help="write the raw trail and agent counts at these steps, e.g. 100,500 (output.fields.at)",
    )

    sweep = commands.add_parser("sweep", help="render every job of a sweep file, batched and resumable")
    sweep.add_argument("sweep", metavar="SWEEP", help="a sweep YAML file, or the name of one in sweeps/")
    sweep.add_argument(
        "--dry-run", action="store_true", help="list the jobs (id, values, state); write nothing"
    )
    sweep.add_argument(
        "--devices",
        default=None,
        help="all (every GPU, else the CPU; default), cpu, or a list like cuda:0,cuda:1",
    )
    sweep.add_argument(
        "--ray",
        default=None,
        metavar="auto|local|ADDRESS",
        help="run batches as Ray tasks: auto joins the running cluster, local starts one here",
    )
    add_backend(sweep, device=False)
    sweep.add_argument("--out", default="outputs", help="output folder; the sweep writes into OUT/<sweep>/")
    sweep.add_argument("--retry-failed", action="store_true", help="run jobs that failed before again")
    sweep.add_argument(
        "--batch",
        type=int,
        default=None,
        help="at most this many simulations per batch (default 64; memory may lower it)",
    )
    sweep.add_argument(
        "--files",
        default=None,
        metavar="driver|workers",
        help="with --ray: the files come back through the driver (default; PHYSARUM_SWEEP_FILES) "
        "or each worker stores its own (a shared folder, or object storage)",
    )
    sweep.add_argument(
        "--max-attempts",
        type=int,
        default=None,
        metavar="N",
        help="with --ray: run a batch whose worker or node died at most N times in all (default 3)",
    )
    sweep.add_argument(
        "--per-node",
        type=int,
        default=None,
        metavar="N",
        help="with --ray: at most N batches at once on any node (default: one per GPU, else per CPU)",
    )
    sweep.add_argument("--no-gallery", action="store_true", help="do not write index.html and contact.png")
    sweep.add_argument("--quiet", action="store_true", help="no progress bars; failures and the summary only")

    presets = commands.add_parser("presets", help="list the curated presets, or print one's YAML")
    presets.add_argument(
        "name", nargs="?", default=None, help="a curated preset: print its YAML file, to copy and edit"
    )
    presets.add_argument(
        "--copy",
        metavar="DIR",
        default=None,
        help="write the preset's YAML and the images it names into DIR (made if missing), so that "
        "`physarum validate DIR/NAME.yaml` and `render` work from any folder; never over a file",
    )
    commands.add_parser("sweeps", help="list the example sweeps")

    validate = commands.add_parser("validate", help="check preset files without rendering")
    validate.add_argument("presets", nargs="+", metavar="PRESET")
    validate.add_argument(
        "--plot",
        metavar="FILE.png",
        default=None,
        help="also plot the resolved curves of one audio-driven preset's followed and periodic keys (docs/audio.md)",
    )

    prof = commands.add_parser("profile", help="time each phase and kernel of a step; write a Perfetto trace")
    prof.add_argument("preset")
    prof.add_argument("--backend", default="auto", help="auto, torch or triton")
    prof.add_argument("--device", default=None)
    prof.add_argument("--steps", type=int, default=20, help="steps recorded (default 20)")
    prof.add_argument("--warmup", type=int, default=50, help="steps before the record (default 50)")
    prof.add_argument(
        "--trace", default=None, help="trace file (default outputs/<name>/<name>-<backend>.trace.json)"
    )

    bench = commands.add_parser("bench", help="step timings of every implementation against the memory floor")
    bench.add_argument(
        "--configs",
        default=None,
        help="comma-separated of S, L, XL, X, CPU (default: S,L,XL,X on a GPU, CPU otherwise)",
    )
    bench.add_argument("--device", default=None)
    bench.add_argument(
        "--develop", type=int, default=500, help="steps that develop the state first (default 500)"
    )
    bench.add_argument(
        "--skip", default="", help="implementations to leave out, e.g. prototype,torch.compile"
    )
    bench.add_argument("--out", default=None, help="results JSON (default benchmarks/<device>.json)")

    sens = commands.add_parser(
        "sensitivity",
        help="divergence of minimally perturbed twins: Lyapunov exponents, saturation, parameter planes",
    )
    sens.add_argument("preset", help="a preset YAML file, or the name of a curated preset")
    add_settings(sens, "canvas.width=256")
    sens.add_argument(
        "--steps", type=int, default=None, help="steps after the perturbation (default: run.steps)"
    )
    sens.add_argument(
        "--twins",
        type=int,
        default=None,
        help="twins per simulation, alternately agent and trail (default 8; 4 with --plane)",
    )
    sens.add_argument("--at", type=int, default=1, help="the step whose state is perturbed (default 1)")
    sens.add_argument(
        "--plane",
        nargs=2,
        default=None,
        metavar="KEY=LO:HI:N",
        help="measure over a grid of two model parameters, e.g. --plane "
        "model.deposit=1:10:16 model.decay=0.01:0.3:16",
    )
    sens.add_argument(
        "--threshold",
        type=float,
        default=None,
        help="with --plane: exponent (per step) above which a point counts as unstable (default 0)",
    )
    add_backend(sens)
    sens.add_argument("--out", default="outputs", help="output folder (default: outputs)")
    sens.add_argument("--quiet", action="store_true", help="no progress bar")
    graph = commands.add_parser(
        "graph", help="the trail's network as a graph at chosen steps: GraphML, CSV, statistics, a figure"
    )
    graph.add_argument("preset", help="a preset YAML file, or the name of a curated preset")
    add_settings(graph, "canvas.width=256")
    when = graph.add_mutually_exclusive_group()
    when.add_argument("--at", default=None, metavar="S1,S2,...", help="the steps, e.g. --at 100,500,1000")
    when.add_argument(
        "--every", type=int, default=None, metavar="N", help="every N steps (default: a tenth of the run)"
    )
    graph.add_argument(
        "--threshold",
        default=None,
        metavar="otsu|F",
        help="the network: the trail at or above Otsu's threshold of its log (default), or F times its 99th percentile",
    )
    graph.add_argument(
        "--min-area",
        type=int,
        default=None,
        help="remove specks and holes of fewer cells than this before thinning (default 16)",
    )
    add_backend(graph)
    graph.add_argument("--out", default="outputs", help="output folder (default: outputs)")
    graph.add_argument("--quiet", action="store_true", help="print only the paths written")
    add_explore(commands)
    add_live(commands)
    add_warmup(commands)
    add_serve(commands)
    add_still(commands)
    return parser


def add_explore(commands) -> None:
    """`physarum explore`: a batched novelty search over a preset's model (docs/explore.md)."""
    explore = commands.add_parser(
        "explore",
        help="a novelty search over a preset's model: mutations in batches, the most different kept",
    )
    explore.add_argument("preset", help="a preset YAML file, or the name of a curated preset")
    add_settings(explore, "model.decay=0.05")
    number = {"type": int, "default": None}
    explore.add_argument("--rounds", **number, help="rounds: mutations, then children of the most novel (2)")
    explore.add_argument("--population", **number, help="candidates per round (24)")
    explore.add_argument("--keep", **number, help="candidates kept by novelty (12, or all if fewer)")
    explore.add_argument(
        "--size", **number, help="short side of the canvas explored, pixels (256; never enlarged)"
    )
    explore.add_argument(
        "--steps", **number, help="steps of each candidate (default: the preset's run.steps)"
    )
    explore.add_argument("--seed", **number, help="the seed of the mutations (1)")
    add_backend(explore)
    explore.add_argument(
        "--out", default="outputs", help="output folder; explore writes OUT/<preset>-explore/"
    )
    explore.add_argument("--yes", action="store_true", help="start even when estimated at 10 minutes or more")
    explore.add_argument("--quiet", action="store_true", help="the summary only")


def add_live(commands) -> None:
    """`physarum live`: the simulation in a browser page, its changes recorded (docs/live.md)."""
    live = commands.add_parser(
        "live", help="play a preset in a local web page: sliders, pause, record, save as a preset"
    )
    live.add_argument("preset", help="a preset YAML file, or the name of a curated preset")
    add_settings(live, "model.decay=0.05")
    live.add_argument("--seed", type=int, default=None, help="override the preset's seed")
    live.add_argument(
        "--full", action="store_true", help="play the preset at its full size, not its --preview reduction"
    )
    live.add_argument(
        "--host",
        default="127.0.0.1",
        help="address to listen on (default 127.0.0.1; any other requires the printed URL's token)",
    )
    live.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any free port)")
    live.add_argument(
        "--shared", action="store_true", help="let every open page control the simulation, not just the first"
    )
    add_backend(live)
    live.add_argument(
        "--out", default="outputs", help="output folder; saves and renders go to OUT/<preset>-live/"
    )
    live.set_defaults(preview_side=PREVIEW_SIDE)


def add_warmup(commands) -> None:
    """`physarum warmup`: Triton's kernel cache filled for presets before their first render."""
    warmup = commands.add_parser(
        "warmup",
        help="compile the Triton kernels presets need (in parallel) into Triton's cache, "
        "so that a first render on this machine starts at once",
    )
    warmup.add_argument(
        "presets",
        nargs="*",
        metavar="PRESET",
        help="preset files or curated names (default: every curated preset)",
    )
    add_backend(warmup)
    warmup.add_argument("--threads", type=int, default=None, help="compile threads (default: the cores)")
    warmup.add_argument("--quiet", action="store_true", help="no line per preset")


def add_serve(commands) -> None:
    """`physarum serve`: a resident process that render and still hand their commands to
    (cli/serve.py, cli/resident.py)."""
    serve = commands.add_parser(
        "serve",
        help="keep torch, Triton and physarum imported so that render and still start at once",
        description="Serve `physarum render` and `physarum still` from a resident process: each "
        "command is run in a child forked from it, with the same files and bytes, without "
        "importing torch again. The socket is PHYSARUM_SERVER, else physarum-UID/serve.sock in "
        "XDG_RUNTIME_DIR or /tmp; PHYSARUM_SERVE=0 runs a command itself.",
    )
    what = serve.add_mutually_exclusive_group()
    what.add_argument(
        "--status", action="store_true", help="say whether a server runs, and what it has served"
    )
    what.add_argument("--stop", action="store_true", help="stop the running server once its commands end")
    serve.add_argument(
        "--idle", type=float, default=None, metavar="SECONDS", help="stop after this long with nothing to do"
    )
    serve.add_argument("--quiet", action="store_true", help="no line per command served")


def add_still(commands) -> None:
    """`physarum still`: one frame as a print, nothing else rendered (render/commands/still.py)."""
    still = commands.add_parser(
        "still", help="render one step's frame as a print: 16-bit PNG and TIFF, EXR, at a chosen size"
    )
    still.add_argument("preset", help="a preset YAML file, or the name of a curated preset")
    add_settings(still, "model.decay=0.05")
    still.add_argument("--seed", type=int, default=None, help="override the preset's seed")
    still.add_argument(
        "--step", type=int, default=None, metavar="N", help="the step shown (default: the last)"
    )
    size = still.add_mutually_exclusive_group()
    size.add_argument(
        "--size",
        type=int,
        default=None,
        metavar="PIXELS",
        help="the still's long side (default: the frame's)",
    )
    size.add_argument(
        "--print",
        dest="print_size",
        default=None,
        metavar="WxH{mm,cm,in}",
        help="the largest picture within a print of this size at --dpi, e.g. 30x40cm",
    )
    still.add_argument("--dpi", type=int, default=None, help="print resolution (with --print: default 300)")
    still.add_argument(
        "--formats", default=None, metavar="png,tiff,exr", help="the files written (default: all three)"
    )
    add_backend(still)
    still.add_argument("--out", default="outputs", help="output folder; the still goes into OUT/<name>/")
    still.add_argument("--quiet", action="store_true", help="one line per file")


def stop_settings(args) -> list[str]:
    """The --set settings that render's --checkpoint-every, --checkpoint-at and --fields-at
    stand for (so that outputs and checkpoints carry them as preset keys)."""
    settings = []
    if args.checkpoint_every is not None:
        settings.append(f"checkpoint.every={args.checkpoint_every}")
    for flag, key in ((args.checkpoint_at, "checkpoint.at"), (args.fields_at, "output.fields.at")):
        if flag is not None:
            settings.append(f"{key}=[{flag}]")
    return settings


def preview_ratio(preset: Preset) -> Fraction:
    """`--preview`'s ratio: a volume's short side brought to PREVIEW_SIDE_3D, a plane's to
    PREVIEW_SIDE or more (its floors and windows: render/preset/reduce.py preview_ratio)."""
    from ..preset import reduce as reducing  # start-up: the schema

    if preset.dims == 3:
        return reducing.side_ratio(preset, PREVIEW_SIDE_3D)
    return reducing.preview_ratio(preset, PREVIEW_SIDE)


def reduction(args, preset: Preset) -> tuple[Preset, str]:
    """(the preset render renders, the note saying how it was reduced, '' if not): --reduce K
    divides the canvas's sides by K, --preview brings its short side to PREVIEW_SIDE (a little
    more where a sensor would fall under a few pixels: preview_ratio; never enlarged),
    render/preset/reduce.py. A preview the work bound kept under its floor says so on a line
    of its note. RenderError for a K that is not a number from 1 to MAX_REDUCE."""
    from ..preset import reduce as reducing  # start-up: the schema

    kind = "preview" if args.preview else "reduce"
    if args.reduce is not None:
        if not 1 <= args.reduce <= MAX_REDUCE:
            raise RenderError(f"--reduce: K must be a number from 1 to {MAX_REDUCE} (got {args.reduce!r})")
        ratio = 1 / Fraction(args.reduce)
    elif args.preview:
        ratio = preview_ratio(preset)
    else:
        return preset, ""
    reduced, text = reducing.reduce_preset(preset, ratio, kind)
    shortfall = reducing.preview_shortfall(preset, ratio) if args.preview else None
    if shortfall:
        text += (
            f"\nnote: the preview stops at {reduced.canvas.width}x{reduced.canvas.height}, within a few "
            f"seconds of a CPU's work, with {shortfall}: its structure may be finer than the full render's "
            '(docs/presets.md, "Previews"); --reduce K renders it larger'
        )
    return reduced, text
