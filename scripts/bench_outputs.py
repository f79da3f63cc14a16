"""Time to a shareable file (issue 16): each curated preset's render time split into simulation,
colouring and each encoder, and each output's size.

For every preset (presets/*.yaml, or those named with --presets):

1. split: the simulation and the colouring alone, timed apart (synchronised after each), frame by
   frame as a render makes them, the RGB and index frames copied to the host; no encoder.
2. render: the preset rendered to its formats (or --formats) as `physarum render` does; its
   wall time (total_s: time to every file), each encoder's busy time (encode_<format>_s: its
   writes, in a thread beside the simulation, and its finishing) and each file's size.
3. with --x264 (for the before/after of the MP4 threads): an MP4-only render per x264 threading
   (THREADS:slice or THREADS:frame; 4:slice is what output version 2 used), its time to the MP4.

Results: benchmarks/unreleased/outputs/<label>.json and .csv (0.3.0's are in benchmarks/0.3.0/outputs/),
and a figure benchmarks/figures/outputs-<label>.png.

Usage:
  GPU host: python3 scripts/bench_outputs.py --label h200 --x264 4:slice 16:frame
  CPU:      python3 scripts/bench_outputs.py --label cpu-2core --presets quickstart --device cpu
            --scale-down 2
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import tempfile
import time
from pathlib import Path

import torch

from physarum.render.formats import mp4
from physarum.render.look.colour import make_colourist
from physarum.render.preset import load_preset
from physarum.render.run.machine import (
    device_name,
    host_cores,
    resolve_backend,
    resolve_device,
    share_cpu_with_encoders,
)
from physarum.render.run.runner import RenderOptions, render
from physarum.render.sim.simulation import make_simulation, simulation_maps

ROOT = Path(__file__).resolve().parent.parent


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def scaled_preset(path: Path, factor: int, settings: list[str]):
    """The preset with its canvas sides divided by factor and its agents by factor squared."""
    preset = load_preset(path, settings)
    if factor == 1:
        return preset
    shrink = [
        f"canvas.width={max(16, preset.canvas.width // factor)}",
        f"canvas.height={max(16, preset.canvas.height // factor)}",
        f"agents.count={max(1, preset.agents.count // factor**2)}",
    ]
    return load_preset(path, [*settings, *shrink])


def split_times(preset, backend: str, device: torch.device) -> dict[str, float]:
    """Seconds simulating and seconds colouring (with the copies to the host) a whole render; on
    the CPU with the torch threads a render leaves itself (machine.share_cpu_with_encoders)."""
    if device.type == "cpu":
        share_cpu_with_encoders()
    started = time.perf_counter()
    simulation = make_simulation(preset, backend, device)
    simulation.advance(preset.run.warmup)
    sync(device)
    setup = time.perf_counter() - started
    colourist = make_colourist(preset)
    simulate = colour = 0.0
    remaining = preset.run.steps
    for number in range(preset.frames):
        began = time.perf_counter()
        steps = min(preset.run.steps_per_frame, remaining)
        simulation.advance(steps)
        remaining -= steps
        sync(device)
        between = time.perf_counter()
        index, rgb = colourist.colour(simulation_maps(preset, simulation.trail, 0), number, True)
        index.cpu(), rgb.cpu()
        sync(device)
        simulate += between - began
        colour += time.perf_counter() - between
    return {"setup_s": setup, "simulation_s": simulate, "colouring_s": colour}


def render_times(preset, folder: Path, device: str | None, formats: list[str] | None) -> dict:
    """A render's timings (seconds) and its outputs' sizes (bytes by format)."""
    if formats:
        preset = preset.model_copy(update={"output": preset.output.model_copy(update={"formats": formats})})
    result = render(preset, RenderOptions(out_dir=folder, quiet=True, device=device))
    sizes = {fmt: path.stat().st_size for fmt, path in result.outputs.items() if fmt != "json"}
    return {"timings": result.timings, "bytes": sizes}


def x264_variant(spec: str) -> tuple[int, bool]:
    threads, _, kind = spec.partition(":")
    if kind not in ("slice", "frame"):
        raise SystemExit(f"--x264 {spec!r}: give THREADS:slice or THREADS:frame, e.g. 4:slice 16:frame")
    return int(threads), kind == "slice"


def mp4_times(preset, folder: Path, device: str | None, spec: str) -> dict:
    """An MP4-only render with x264 threaded as spec says (the module's constants set meanwhile)."""
    saved = mp4.MP4_THREADS, mp4.MP4_SLICED_THREADS, mp4.MP4_LOOKAHEAD_THREADS
    threads, sliced = x264_variant(spec)
    mp4.MP4_THREADS, mp4.MP4_SLICED_THREADS = threads, sliced
    mp4.MP4_LOOKAHEAD_THREADS = threads if sliced else max(1, threads // 6)  # x264's own defaults
    try:
        measured = render_times(preset, folder / spec.replace(":", "-"), device, ["mp4"])
    finally:
        mp4.MP4_THREADS, mp4.MP4_SLICED_THREADS, mp4.MP4_LOOKAHEAD_THREADS = saved
    return {
        "x264": spec,
        "total_s": measured["timings"]["total_s"],
        "encode_mp4_s": measured["timings"]["encode_mp4_s"],
        "mp4_bytes": measured["bytes"]["mp4"],
    }


def bench_preset(path: Path, args, backend: str, device: torch.device) -> dict:
    preset = scaled_preset(path, args.scale_down, args.settings)
    row = {
        "preset": path.stem,
        "canvas": f"{preset.canvas.width}x{preset.canvas.height}",
        "agents": preset.agents.count,
        "steps": preset.run.steps,
        "frames": preset.frames,
    }
    row.update({k: round(v, 3) for k, v in split_times(preset, backend, device).items()})
    with tempfile.TemporaryDirectory() as tmp:
        measured = render_times(preset, Path(tmp), args.device, args.formats)
        row["render"] = {k: round(v, 3) for k, v in measured["timings"].items()}
        row["bytes"] = measured["bytes"]
        row["x264"] = [mp4_times(preset, Path(tmp), args.device, spec) for spec in args.x264]
    return row


def write_csv(rows: list[dict], path: Path) -> None:
    formats = sorted({fmt for row in rows for fmt in row.get("bytes", {})})
    fields = ["preset", "canvas", "agents", "frames", "simulation_s", "colouring_s", "render_total_s"]
    fields += [f"encode_{fmt}_s" for fmt in formats] + [f"{fmt}_bytes" for fmt in formats]
    with path.open("w", newline="") as file:
        writer = csv.writer(file)
        writer.writerow(fields)
        for row in rows:
            if "error" in row:
                continue
            render_row = row["render"]
            writer.writerow(
                [row[k] for k in ("preset", "canvas", "agents", "frames", "simulation_s", "colouring_s")]
                + [render_row["total_s"]]
                + [render_row.get(f"encode_{fmt}_s", "") for fmt in formats]
                + [row["bytes"].get(fmt, "") for fmt in formats]
            )


def figure(rows: list[dict], path: Path, title: str) -> None:
    """Per preset: simulation, colouring and each encoder's busy time, and the render's wall time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [row for row in rows if "error" not in row]
    formats = sorted({fmt for row in rows for fmt in row["bytes"]})
    parts = ["simulation_s", "colouring_s"] + [f"encode_{fmt}_s" for fmt in formats]
    fig, ax = plt.subplots(figsize=(11, 0.6 * len(rows) + 1.5))
    height = 0.8 / len(parts)
    for k, part in enumerate(parts):
        values = [row.get(part, row["render"].get(part, 0.0)) for row in rows]
        ax.barh([i + k * height for i in range(len(rows))], values, height, label=part.removesuffix("_s"))
    ax.scatter(
        [row["render"]["total_s"] for row in rows],
        [i + 0.4 - height / 2 for i in range(len(rows))],
        marker="|",
        s=400,
        color="black",
        label="render (time to every file)",
        zorder=3,
    )
    ax.set_yticks([i + 0.4 - height / 2 for i in range(len(rows))], [row["preset"] for row in rows])
    ax.invert_yaxis()
    ax.set_xlabel("seconds")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1))
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def title_of(result: dict) -> str:
    scale = result["scale_down"]
    return f"{result['label']}: {result['device']}, {result['cores']} cores" + (
        f", canvases / {scale}" if scale > 1 else ""
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", required=True, help="names the result files, e.g. h200 or cpu-2core")
    parser.add_argument("--presets", nargs="*", default=None, help="curated preset names (default: all)")
    parser.add_argument("--device", default=None, help="cpu, cuda or cuda:N (default: cuda if present)")
    parser.add_argument(
        "--scale-down", type=int, default=1, help="divide canvas sides by this (agents by its square)"
    )
    parser.add_argument(
        "--set", dest="settings", action="append", default=[], help="a preset override, repeatable"
    )
    parser.add_argument(
        "--formats", type=lambda text: text.split(","), default=None, help="e.g. gif,mp4,webp,png"
    )
    parser.add_argument(
        "--x264", nargs="*", default=[], help="MP4-only renders per x264 threading, e.g. 4:slice 16:frame"
    )
    parser.add_argument("--replot", action="store_true", help="only redraw the figure of LABEL.json")
    args = parser.parse_args()
    if args.replot:
        result = json.loads(
            (ROOT / "benchmarks" / "unreleased" / "outputs" / f"{args.label}.json").read_text()
        )
        figure(
            result["rows"], ROOT / "benchmarks" / "figures" / f"outputs-{args.label}.png", title_of(result)
        )
        return
    names = args.presets or sorted(p.stem for p in (ROOT / "presets").glob("*.yaml"))
    device = resolve_device(args.device)
    backend = resolve_backend("auto", device)
    rows = []
    for name in names:
        print(f"{name} ...", flush=True)
        try:
            rows.append(bench_preset(ROOT / "presets" / f"{name}.yaml", args, backend, device))
        except Exception as error:  # one preset that cannot render here (memory, size) is recorded
            rows.append({"preset": name, "error": f"{type(error).__name__}: {error}"})
        print(json.dumps(rows[-1]), flush=True)
    result = {
        "label": args.label,
        "device": device_name(device),
        "cores": host_cores(),
        "backend": backend,
        "platform": platform.platform(),
        "x264_threads": f"{mp4.MP4_THREADS}:{'slice' if mp4.MP4_SLICED_THREADS else 'frame'}",
        "scale_down": args.scale_down,
        "settings": args.settings,
        "rows": rows,
    }
    out = ROOT / "benchmarks" / "unreleased" / "outputs"
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{args.label}.json").write_text(json.dumps(result, indent=2) + "\n")
    write_csv(rows, out / f"{args.label}.csv")
    figure(rows, ROOT / "benchmarks" / "figures" / f"outputs-{args.label}.png", title_of(result))
    print(f"wrote {out / args.label}.json, .csv and benchmarks/figures/outputs-{args.label}.png")


if __name__ == "__main__":
    main()
