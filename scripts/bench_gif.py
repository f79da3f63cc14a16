"""Time GIF encoding: serial against worker processes, and the budget's choice, on a preset's
own index frames (docs/outputs.md, "GIF byte budgets"; issue 16).

    python scripts/bench_gif.py quickstart [--set KEY=VALUE ...] [--device cuda] \
        [--processes 16] [--budgets 15MB,10MB,5MB,2MB] [--out benchmarks/gif.json]

The preset is simulated once; its GIF index frames (at output.gif_scale) are kept in memory
(zlib, as a budgeted render keeps them) and every timing below encodes those same frames:

- serial: one process, the writer as an unbudgeted render on one core;
- parallel: --processes worker processes (default: this machine's cores), whose bytes must equal
  serial's (checked);
- each budget: the choice (estimates from the sample, then the file, then any rewrite), its
  reduction, estimate and size; the choice must be the same with 1 and N processes (checked).

With --renders, also whole renders of the GIF alone (simulation included), unbudgeted and at the
first budget, for issue 16's bound: a budgeted render takes at most 1.3x the unbudgeted one.

Prints a table and writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from physarum.render.formats.gif import GifSpec
from physarum.render.formats.gif_budget import Budgeter, FrameStore
from physarum.render.formats.gif_file import TRAILER, Digits, Reduction, delay_ms, header
from physarum.render.formats.gif_pool import CompressPool, FrameTask, pool_size
from physarum.render.look.colour import downscale, make_colourist, preview_size
from physarum.render.out.specs import gif_digits
from physarum.render.preset import load_preset
from physarum.render.preset.catalog import resolve_preset_path
from physarum.render.preset.output_sections import parse_gif_budget
from physarum.render.preset.provenance import embedded_text
from physarum.render.run.machine import resolve_backend, resolve_device
from physarum.render.run.runner import RenderOptions, render
from physarum.render.sim.simulation import advance, make_simulation, simulation_maps


def keep_frames(preset, device_name: str | None) -> tuple[FrameStore, GifSpec]:
    """Simulate the preset once; its GIF index frames and an unbudgeted spec of its GIF."""
    device = resolve_device(device_name)
    simulation = make_simulation(preset, resolve_backend("auto", device), device)
    colourist = make_colourist(preset)
    size = preview_size(preset.canvas.width, preset.canvas.height, preset.output.gif_scale)
    store = FrameStore()
    advance(simulation, preset.run.warmup)
    remaining = preset.run.steps
    for number in range(preset.frames):
        steps = min(preset.run.steps_per_frame, remaining)
        advance(simulation, steps)
        remaining -= steps
        index, _ = colourist.colour(simulation_maps(preset, simulation.trail, 0), number, rgb=False)
        store.append(downscale(index, size).cpu().numpy(), colourist.table(number))
    out = preset.output
    spec = GifSpec(
        Path("bench.gif"), *size, out.fps, out.loop, embedded_text(preset), colourist.table(0).tobytes(),
        frames=preset.frames, digits=gif_digits(preset),
    )  # fmt: skip
    return store, spec


def encode_all(
    store: FrameStore, spec: GifSpec, pool: CompressPool, raw: bool = False
) -> tuple[bytes, float]:
    """The unbudgeted GIF of the kept frames on a started pool, and its seconds (a render starts
    its pool when the writer opens, so the workers start while the simulation runs). raw: the
    frames handed over as index frames, as a render's unbudgeted GIF gets them (decompressed
    before the clock starts), not as the store keeps them (zlib, decompressed by the workers)."""
    frames = [store.frame(number) for number in range(len(store))] if raw else None
    began = time.perf_counter()
    data = io.BytesIO()
    data.write(header(spec.width, spec.height, spec.palette, spec.loop, spec.comment))
    delay = delay_ms(spec.fps)

    def tasks():
        for number in range(len(store)):
            if raw:
                index, palette = frames[number]
                yield FrameTask(index, palette, Reduction(), Digits(), palette != spec.palette, delay)
                continue
            packed, palette = store.packed(number)
            local = palette != spec.palette
            yield FrameTask(packed, palette, Reduction(), Digits(), local, delay, store.shape)

    for block in pool.map(tasks()):
        data.write(block)
    data.write(TRAILER)
    return data.getvalue(), time.perf_counter() - began


def choose(store: FrameStore, spec: GifSpec, budget: int, pool: CompressPool) -> tuple[bytes, dict, float]:
    """The budgeted GIF chosen and written on a started pool: its bytes, report and seconds."""
    began = time.perf_counter()
    file = io.BytesIO()
    plan = Budgeter(store, replace(spec, max_bytes=budget), Digits(*spec.digits), pool).write(file)
    return file.getvalue(), plan.report(), time.perf_counter() - began


def time_renders(args, budget: str) -> list[dict]:
    """Whole renders of the GIF alone, without and with `budget`: their seconds and bytes."""
    rows = []
    for label, extra in (
        ("render, no budget", []),
        (f"render, budget {budget}", [f"output.gif_max_bytes={budget}"]),
    ):
        preset = load_preset(
            resolve_preset_path(args.preset), [*args.settings, "output.formats=[gif]", *extra]
        )
        with tempfile.TemporaryDirectory() as out:
            began = time.perf_counter()
            result = render(preset, RenderOptions(device=args.device, out_dir=Path(out), quiet=True))
            seconds = time.perf_counter() - began
            rows.append(
                {"what": label, "seconds": round(seconds, 3), "bytes": result.outputs["gif"].stat().st_size}
            )
    rows[-1]["ratio"] = round(rows[-1]["seconds"] / rows[0]["seconds"], 2)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset")
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--device", default=None)
    parser.add_argument("--processes", type=int, default=pool_size(1))
    parser.add_argument("--budgets", default="15MB,10MB,5MB,2MB")
    parser.add_argument("--out", default=None, help="results JSON")
    parser.add_argument(
        "--renders", action="store_true", help="also time whole renders, unbudgeted and budgeted"
    )
    args = parser.parse_args()
    preset = load_preset(resolve_preset_path(args.preset), args.settings)
    began = time.perf_counter()
    store, spec = keep_frames(preset, args.device)
    rows = [{"what": "simulate and keep frames", "seconds": round(time.perf_counter() - began, 3)}]
    began = time.perf_counter()
    pool = CompressPool(args.processes).ready()
    rows.append({"what": f"start {args.processes} workers", "seconds": round(time.perf_counter() - began, 3)})
    serial_pool = CompressPool(1)
    for raw, kind in ((True, "index frames, as a render streams them"), (False, "kept frames (zlib)")):
        serial, serial_s = encode_all(store, spec, serial_pool, raw)
        parallel, parallel_s = encode_all(store, spec, pool, raw)
        if parallel != serial:
            print("error: the parallel GIF differs from the serial one", file=sys.stderr)
            return 1
        rows.append({"what": f"encode serial, {kind}", "seconds": round(serial_s, 3), "bytes": len(serial)})
        rows.append(
            {
                "what": f"encode {args.processes} processes, {kind}",
                "seconds": round(parallel_s, 3),
                "bytes": len(parallel),
                "speedup": round(serial_s / parallel_s, 2),
            }
        )
    for text in args.budgets.split(","):
        budget = parse_gif_budget(text)
        data, report, seconds = choose(store, spec, budget, pool)
        if args.processes > 1 and choose(store, spec, budget, serial_pool)[0] != data:
            print(
                f"error: the {text} choice differs between 1 and {args.processes} processes", file=sys.stderr
            )
            return 1
        rows.append(
            {"what": f"budget {text}", "seconds": round(seconds, 3), **report, "why": report["why"][-1:]}
        )
    pool.close()
    serial_pool.close()
    if args.renders:
        rows += time_renders(args, args.budgets.split(",")[0])
    for row in rows:
        print(
            f"{row['what']:<28} {row['seconds']:>8.3f} s  {row.get('bytes', '')!s:>10}  {row.get('chosen', '')}"
        )
    if args.out:
        Path(args.out).write_text(json.dumps({"preset": preset.name, "rows": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
