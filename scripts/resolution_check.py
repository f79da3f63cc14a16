"""Does a preset in resolution-independent units look alike at two sizes? (issue: worlds, item 5)

Runs the preset at each --size (WIDTHxHEIGHT), reads the dominant spatial wavelength of the
trail (render/tools/stats.py: radially averaged power spectrum) as a fraction of the short side at
several late steps, for one or more seeds (--seeds, batched), and reports the mean of each size
(and the spread over seeds) and their ratio. Also saves the final
frames side by side.

    python3 scripts/resolution_check.py presets/anywhere.yaml --sizes 512x512 3840x2160 \
        --out benchmarks/resolution.json --figure benchmarks/figures/resolution.png
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch
from PIL import Image

from physarum.render.look.colour import Colourist
from physarum.render.preset import load_preset
from physarum.render.run.machine import resolve_backend, resolve_device
from physarum.render.sim.simulation import make_batch_simulation
from physarum.render.tools.stats import SpectrumRings, trail_statistics

WAVELENGTH = 6  # column of trail_statistics: wavelength as a fraction of the short side


def measure(
    path: str, size: str, checkpoints: int, seeds: int, device: torch.device, settings: list[str]
) -> dict:
    """The preset at one size, as one batched simulation of `seeds` seeds (seed, seed + 1, ...):
    each seed's wavelength is its mean over the checkpoints; the size's is the mean over seeds,
    with their standard deviation (one realisation of a network of large cells is a noisy
    sample of its scale)."""
    width, height = (int(v) for v in size.split("x"))
    base = load_preset(path, [*settings, f"canvas.width={width}", f"canvas.height={height}"])
    presets = [base.model_copy(update={"seed": base.seed + k}) for k in range(seeds)]
    steps = base.run.steps
    simulation = make_batch_simulation(presets, resolve_backend("auto", device), device)
    rings = SpectrumRings(height, width, device)
    began = time.perf_counter()
    # the last `checkpoints` tenths of the run: 10 steps apart
    at = sorted({steps - 10 * k for k in range(checkpoints)})
    done, fractions = 0, []
    for step in at:
        simulation.advance(step - done)
        done = step
        fractions.append(trail_statistics(simulation.trail, rings)[:, WAVELENGTH].cpu().numpy())
    per_seed = np.mean(fractions, axis=0)
    colourist = Colourist(base.palette)
    rgb = colourist.rgb(colourist.index_frame(simulation.trail[0]), 0).cpu().numpy()
    return {
        "size": size,
        "agents": base.agents.count,
        "steps": steps,
        "seeds": seeds,
        "sensor_distance_px": base.model.pixels("sensor_distance", min(width, height)),
        "step_size_px": base.model.pixels("step_size", min(width, height)),
        "wavelength_fraction_per_seed": per_seed.tolist(),
        "mean": float(per_seed.mean()),
        "std": float(per_seed.std(ddof=1)) if seeds > 1 else 0.0,
        "seconds": time.perf_counter() - began,
        "frame": rgb,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("preset")
    parser.add_argument("--sizes", nargs="+", default=["512x512", "3840x2160"])
    parser.add_argument("--checkpoints", type=int, default=5)
    parser.add_argument("--seeds", type=int, default=1, help="seeds per size, batched")
    parser.add_argument("--device", default=None)
    parser.add_argument("--out", default="resolution.json")
    parser.add_argument("--figure", default=None)
    parser.add_argument("--set", dest="settings", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args()
    device = resolve_device(args.device)
    results = [
        measure(args.preset, size, args.checkpoints, args.seeds, device, args.settings) for size in args.sizes
    ]
    frames = [r.pop("frame") for r in results]
    first = results[0]["mean"]
    for r in results:
        r["ratio_to_first"] = r["mean"] / first
        print(
            f"{r['size']:>10}: wavelength {r['mean']:.4f} +- {r['std']:.4f} of the short side "
            f"({r['seeds']} seeds: {', '.join(f'{f:.4f}' for f in r['wavelength_fraction_per_seed'])}), "
            f"ratio {r['ratio_to_first']:.3f}, {r['seconds']:.0f} s",
            flush=True,
        )
    report = {
        "preset": args.preset,
        "device": str(device),
        "machine": platform.machine(),
        "torch": torch.__version__,
        "results": results,
    }
    Path(args.out).write_text(json.dumps(report, indent=2) + "\n")
    if args.figure:
        tiles = [Image.fromarray(f).resize((round(384 * f.shape[1] / f.shape[0]), 384)) for f in frames]
        sheet = Image.new("RGB", (sum(t.width for t in tiles) + 8 * (len(tiles) - 1), 384))
        x = 0
        for tile in tiles:
            sheet.paste(tile, (x, 0))
            x += tile.width + 8
        sheet.save(args.figure, optimize=True)


if __name__ == "__main__":
    main()
