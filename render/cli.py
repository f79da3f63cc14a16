"""The `physarum` command. Thin: parse flags, build a Preset, call one function.

Every flag defaults to None so that it layers over the preset file's value. Mistakes in the
input end in one message on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

from physarum.render.encode import read_embedded
from physarum.render.preset import PresetError, build_preset, load_preset
from physarum.render.runner import RenderError, version

PRESETS_DIR = Path(__file__).resolve().parent.parent / "presets"
EXIT_USAGE = 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="physarum", description="Render Physarum slime-mould animations.")
    parser.add_argument("--version", action="version", version=f"physarum {version()}")
    commands = parser.add_subparsers(dest="command", required=True)

    render = commands.add_parser("render", help="render a preset to GIF, MP4 and PNG")
    source = render.add_mutually_exclusive_group(required=True)
    source.add_argument("preset", nargs="?", help="a preset YAML file, or the name of a curated preset")
    source.add_argument("--from", dest="from_file", metavar="FILE",
                        help="render again from what a GIF, MP4, PNG or JSON output carries")
    render.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE",
                        help="override a preset key, e.g. --set model.decay=0.05 (repeatable)")
    render.add_argument("--seed", type=int, default=None, help="override the preset's seed")
    render.add_argument("--backend", default="auto", help="auto (Triton on a GPU, else torch), torch or triton")
    render.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present)")
    render.add_argument("--out", default="outputs", help="output folder (default: outputs)")
    render.add_argument("--quiet", action="store_true", help="no progress bar; one line per output")
    render.add_argument("--scale", type=float, default=None,
                        help="GIF size as a fraction of the canvas (output.gif_scale), for previews of large canvases")
    render.add_argument("--frames-dir", default=None, metavar="DIR",
                        help="also write every frame as a numbered PNG into DIR")

    commands.add_parser("presets", help="list the curated presets")

    validate = commands.add_parser("validate", help="check preset files without rendering")
    validate.add_argument("presets", nargs="+", metavar="PRESET")

    prof = commands.add_parser("profile", help="time each phase and kernel of a step; write a Perfetto trace")
    prof.add_argument("preset")
    prof.add_argument("--backend", default="auto", help="auto, torch or triton")
    prof.add_argument("--device", default=None)
    prof.add_argument("--steps", type=int, default=20, help="steps recorded (default 20)")
    prof.add_argument("--warmup", type=int, default=50, help="steps before the record (default 50)")
    prof.add_argument("--trace", default=None, help="trace file (default outputs/<name>/<name>-<backend>.trace.json)")

    bench = commands.add_parser("bench", help="step timings of every implementation against the memory floor")
    bench.add_argument("--configs", default=None,
                       help="comma-separated of S, L, XL, X, CPU (default: S,L,XL,X on a GPU, CPU otherwise)")
    bench.add_argument("--device", default=None)
    bench.add_argument("--develop", type=int, default=500, help="steps that develop the state first (default 500)")
    bench.add_argument("--skip", default="", help="implementations to leave out, e.g. prototype,torch.compile")
    bench.add_argument("--out", default=None, help="results JSON (default benchmarks/<device>.json)")
    return parser


def resolve_preset_path(name: str) -> Path:
    """A path as given, or a curated preset's file when only its name is given."""
    path = Path(name)
    if path.exists() or path.suffix in (".yaml", ".yml"):
        return path
    curated = PRESETS_DIR / f"{name}.yaml"
    return curated if curated.exists() else path


def _load_for_render(args) -> "Preset":  # noqa: F821
    overrides = {"seed": args.seed}
    if args.scale is not None:  # a flag for output.gif_scale, so outputs carry it
        args.settings = [*args.settings, f"output.gif_scale={args.scale!r}"]
    if args.from_file:
        path = Path(args.from_file)
        try:
            text = read_embedded(path)
        except FileNotFoundError:
            raise PresetError([f"{path}: no such file"]) from None
        except Exception as error:
            raise PresetError([f"{path}: carries no physarum preset ({type(error).__name__}: {error})"]) from None
        data = yaml.safe_load(text)
        return build_preset(data if isinstance(data, dict) else {}, str(path), args.settings, overrides)
    return load_preset(resolve_preset_path(args.preset), args.settings, overrides)


def cmd_render(args) -> int:
    from physarum.render.runner import RenderOptions, render

    preset = _load_for_render(args)
    options = RenderOptions(backend=args.backend, device=args.device, out_dir=Path(args.out),
                            quiet=args.quiet,
                            frames_dir=Path(args.frames_dir) if args.frames_dir else None)
    result = render(preset, options)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    for fmt, path in result.outputs.items():
        size = path.stat().st_size
        print(f"{path}  {size / 1024:.0f} KiB" if not args.quiet else f"{fmt} {path} {size}")
    if not args.quiet:
        t = result.timings
        encoders = ", ".join(f"{k[7:-2]} {v:.1f} s" for k, v in t.items() if k.startswith("encode_"))
        print(f"{result.backend} on {result.device}: {t['total_s']:.1f} s (encoder busy: {encoders})",
              file=sys.stderr)
    return 0


def cmd_presets(args) -> int:
    for path in sorted(PRESETS_DIR.glob("*.yaml")):
        preset = load_preset(path)
        size = f"{preset.canvas.width}x{preset.canvas.height}"
        print(f"{preset.name:<14} {size:>10} {preset.agents.count:>9} agents  {preset.description}")
    return 0


def cmd_validate(args) -> int:
    problems = []
    for name in args.presets:
        try:
            preset = load_preset(resolve_preset_path(name))
            print(f"ok  {name}  ({preset.name}: {preset.frames} frames, {preset.canvas.width}x{preset.canvas.height})")
        except PresetError as error:
            problems.extend(error.problems)
    if problems:
        raise PresetError(problems)
    return 0


def _positive(value: int, flag: str) -> int:
    if value < 1:
        raise RenderError(f"{flag} must be a positive number of steps, got {value}")
    return value


def cmd_profile(args) -> int:
    from physarum.render.profile import profile_preset
    from physarum.render.runner import resolve_backend, resolve_device

    preset = load_preset(resolve_preset_path(args.preset))
    device = resolve_device(args.device)
    backend = resolve_backend(args.backend, device)
    trace = Path(args.trace or f"outputs/{preset.name}/{preset.name}-{backend}.trace.json")
    profile_preset(preset, backend, device, _positive(args.steps, "--steps"), args.warmup, trace)
    print(f"trace: {trace} (open it in https://ui.perfetto.dev)")
    return 0


def cmd_bench(args) -> int:
    from physarum.render.bench import CONFIGS, run_bench
    from physarum.render.runner import resolve_device

    device = resolve_device(args.device)
    default = "S,L,XL,X" if device.type == "cuda" else "CPU"
    configs = [c.strip() for c in (args.configs or default).split(",") if c.strip()]
    unknown = [c for c in configs if c not in CONFIGS]
    if unknown:
        raise RenderError(f"--configs: unknown {', '.join(unknown)}; choose from {', '.join(CONFIGS)}")
    if device.type != "cuda" and any(CONFIGS[c].gpu_only for c in configs):
        raise RenderError("--configs: S, L, XL and X are GPU configurations; on a CPU use --configs CPU")
    name = (torch_device_name(device)).lower().replace(" ", "-")
    out = Path(args.out or f"benchmarks/{name}.json")
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    run_bench(configs, device, out, _positive(args.develop, "--develop"), skip)
    return 0


def torch_device_name(device) -> str:
    import torch

    return torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"


COMMANDS = {"render": cmd_render, "presets": cmd_presets, "validate": cmd_validate,
            "profile": cmd_profile, "bench": cmd_bench}


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except (PresetError, RenderError) as error:
        print(f"error: {error}".replace("\n", "\nerror: "), file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("interrupted; no partial output was left", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
