"""The research and measurement commands: `physarum profile`, `bench`, `sensitivity`, `graph` and
`explore`. Each takes parsed flags (render/cli/arguments.py), loads what it needs when it runs
(torch, scikit-image: never at start-up) and returns the exit status; a mistake is a PresetError
or RenderError, which render/cli/main.py turns into one message and exit 2.
"""

from __future__ import annotations

from pathlib import Path

from ..base.errors import RenderError, printable
from ..base.interrupts import signals_interrupt
from ..preset.catalog import resolve_preset_path


def _command_preset(args, command: str):
    """The preset a command of one preset reads (args.preset, with its --set args.settings),
    validated; RenderError for a 3D preset, which `command` does not take."""
    from ..preset import load_preset  # start-up: the preset schema
    from ..run.volume_checks import refuse_3d_command  # start-up: the same

    preset = load_preset(resolve_preset_path(args.preset), args.settings)
    refuse_3d_command(preset, command)
    return preset


def _positive(value: int, flag: str) -> int:
    if value < 1:
        raise RenderError(f"{flag} must be a positive number of steps, got {value}")
    return value


def cmd_profile(args) -> int:
    from ..preset import load_preset  # start-up: the preset schema
    from ..run import machine  # start-up: torch
    from ..tools.profile import profile_preset  # start-up: torch

    preset = load_preset(resolve_preset_path(args.preset))
    device = machine.resolve_device(args.device)
    if device.type == "cpu":
        machine.limit_cpu_threads()
    backend = machine.resolve_backend(args.backend, device)
    trace = Path(args.trace or f"outputs/{preset.name}/{preset.name}-{backend}.trace.json")
    profile_preset(preset, backend, device, _positive(args.steps, "--steps"), args.warmup, trace)
    print(printable(f"trace: {trace} (open it in https://ui.perfetto.dev)"))
    return 0


def cmd_bench(args) -> int:
    from ..run import machine  # start-up: torch
    from ..tools.bench import CONFIGS, run_bench  # start-up: torch

    device = machine.resolve_device(args.device)
    default = "S,L,XL,X" if device.type == "cuda" else "CPU"
    configs = [c.strip() for c in (args.configs or default).split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise RenderError(f"--configs: unknown {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    if device.type != "cuda" and any(CONFIGS[c].gpu_only for c in configs):
        raise RenderError("--configs: S, L, XL and X are GPU configurations; on a CPU use --configs CPU")
    if device.type == "cpu":
        machine.limit_cpu_threads()
    name = "cpu" if device.type == "cpu" else machine.device_name(device).lower().replace(" ", "-")
    out = Path(args.out or f"benchmarks/{name}.json")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    run_bench(configs, device, out, _positive(args.develop, "--develop"), skip)
    return 0


def cmd_sensitivity(args) -> int:
    from .. import analysis  # start-up: torch
    from ..run import machine  # start-up: torch

    axes = [analysis.parse_plane_axis(spec) for spec in args.plane] if args.plane else None
    preset = _command_preset(args, "sensitivity")
    if preset.has_world:
        raise RenderError(
            f"{preset.name}: physarum sensitivity measures plain presets (one species on "
            "the empty torus); remove world:, species: and image spawns, or use "
            "render --stats (statistics of species 0's trail)"
        )
    if preset.schedules:
        keys = ", ".join(path for path, _ in preset.schedules[:3])
        raise RenderError(
            f"{preset.name}: physarum sensitivity measures one set of parameters, and {keys} "
            "change over the run (schedules); give each one number (--set KEY=VALUE) to measure it"
        )
    twins = 4 if axes and args.twins is None else 8 if args.twins is None else args.twins
    if not 1 <= twins <= 64:
        raise RenderError(f"--twins must be from 1 to 64, got {twins}")
    if args.at < 1:
        raise RenderError(
            f"--at must be at least 1 (the trail is empty before the first step), got {args.at}"
        )
    steps = _positive(preset.run.steps if args.steps is None else args.steps, "--steps")
    device = machine.resolve_device(args.device)
    options = analysis.RunOptions(
        steps=steps,
        at=args.at,
        twins=analysis.twin_kinds(twins),
        backend=machine.resolve_backend(args.backend, device),
        device=device,
        quiet=args.quiet,
    )
    threshold = analysis.GROWTH_THRESHOLD if args.threshold is None else args.threshold
    if axes:
        document = analysis.sensitivity_plane(
            preset, axes, options, Path(args.out), threshold, machine.device_name(device)
        )
    else:
        document = analysis.sensitivity(preset, options, Path(args.out), machine.device_name(device))
    print("\n".join(map(printable, analysis.summary_lines(document))))
    for path in document["outputs"].values():
        print(printable(Path(args.out) / preset.name / path))
    return 0


def cmd_graph(args) -> int:
    from .. import graph  # start-up: scikit-image, scipy and networkx load only for graph
    from ..run import machine  # start-up: torch

    preset = _command_preset(args, "graph")
    min_area = graph.MIN_AREA if args.min_area is None else args.min_area
    if min_area < 1:
        raise RenderError(f"--min-area must be at least 1 cell, got {min_area}")
    device = machine.resolve_device(args.device)
    if device.type == "cpu":
        machine.limit_cpu_threads()
    options = graph.GraphOptions(
        steps=graph.chosen_steps(args.at, args.every, preset.run.steps),
        threshold=graph.parse_threshold(args.threshold),
        min_area=min_area,
        backend=machine.resolve_backend(args.backend, device),
        device=device,
        quiet=args.quiet,
    )
    paths = graph.graph_command(preset, options, Path(args.out))
    print("\n".join(map(printable, graph.summary_lines(paths, options.steps))))
    return 0


def cmd_explore(args) -> int:
    from .. import explore  # start-up: torch

    preset = _command_preset(args, "explore")
    given = {k: getattr(args, k) for k in ("rounds", "population", "keep", "size", "steps", "seed")}
    options = explore.ExploreOptions(
        **{k: v for k, v in given.items() if v is not None},
        backend=args.backend,
        device=args.device,
        out=Path(args.out),
        yes=args.yes,
        quiet=args.quiet,
    )
    with signals_interrupt():
        result = explore.explore(preset, options)
    print("\n".join(map(printable, explore.summary_lines(result))))
    return 0
