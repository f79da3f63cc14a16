"""Colouring cost per frame (issue 26 item 1): the auto level's selection and the whole index frame.

For each canvas size, on --device cpu or cuda, the ms per frame of
- the candidates for levels.high: auto's quantile, each checked bit for bit against kthvalue:
  kthvalue (the old auto_high), sort, topk of the smaller side (the GPU path of
  render/look/select.py), np.partition (its CPU path), an integer-histogram radix select
  (torch.bincount over 10/11/10-bit fields of the float32 pattern, the rejected candidate), and
  auto_high as it is now;
- Colourist.index_frame with the old auto_high and the new one (the index frames compared), and
  Colourist.colour (index and RGB frame), with panorama's palette (gamma 0.7, quantile 0.99).
The trail is synthetic (thin filaments on a near-zero background, about half the cells under 1e-3:
shaped like a real one) or, with --trail sim, a real one: panorama at the size, agents scaled by
area, --steps steps on the device's backend (slow on a CPU).

Usage: python3 scripts/bench_colour.py --device cuda [--sizes 1024x1024,3840x2160]
       [--trail synthetic|sim] [--steps 200] [--reps 10] [--out FILE.json]
Expected: about 20 s on an H200 (both sizes; --trail sim adds about 10 s); a minute on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np
import torch

from physarum.render.look import colour, select
from physarum.render.look.colour import Colourist
from physarum.render.preset import Palette

FIELDS = ((21, 1024), (10, 2048), (0, 1024))  # (shift, bins) of the radix select's passes
PALETTE = Palette(
    names=["ice", "ocean"], every=150, gamma=0.7, levels={"low": 0, "high": "auto", "quantile": 0.99}
)


def radix_select(flat: torch.Tensor, k: int) -> torch.Tensor:
    """The k-th smallest of float32 values >= 0 by integer histograms of their bit patterns (a
    non-negative float32's int32 pattern orders like the float): one bincount per field, the
    candidates narrowed to the field's digit that holds rank k. Exact; syncs with the host."""
    keys = flat.reshape(-1).view(torch.int32)
    rank = k
    for shift, bins in FIELDS:
        digit = (keys >> shift) & (bins - 1)
        counts = torch.bincount(digit, minlength=bins)
        cum = counts.cumsum(0)
        d = int(torch.searchsorted(cum, torch.tensor([rank], device=cum.device)))
        rank -= int(cum[d] - counts[d])
        keys = keys[digit == d]
    return keys[:1].view(torch.float32)[0]


def old_auto_high(trail: torch.Tensor, quantile: float) -> torch.Tensor:
    """auto_high before issue 26: torch.kthvalue."""
    flat = trail.reshape(-1)
    return torch.kthvalue(flat, select.quantile_rank(flat.numel(), quantile)).values


def synthetic_trail(height: int, width: int, device: torch.device) -> torch.Tensor:
    """Thin bright filaments (the zero set of a smooth noise) over a faint background."""
    g = torch.Generator().manual_seed(26)
    coarse = torch.rand(1, 1, max(2, height // 48), max(2, width // 48), generator=g) * 2 - 1
    noise = torch.nn.functional.interpolate(coarse, size=(height, width), mode="bilinear")[0, 0]
    ridge = (1 - noise.abs() / 0.03).clamp(min=0) ** 2 * 30
    background = torch.rand(height, width, generator=g) ** 6 * 2e-3
    return (ridge + background).to(torch.float32).to(device)


def simulated_trail(height: int, width: int, steps: int, device: torch.device) -> torch.Tensor:
    """panorama's trail after `steps` steps at the size (agents scaled by area)."""
    from physarum.render.preset import load_preset  # start-up: only --trail sim simulates
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.sim.simulation import advance, make_simulation

    agents = max(1000, round(5_000_000 * height * width / (3840 * 2160)))
    settings = [f"canvas.width={width}", f"canvas.height={height}", f"agents.count={agents}"]
    preset = load_preset(resolve_preset_path("panorama"), settings)
    simulation = make_simulation(preset, "triton" if device.type == "cuda" else "torch", device)
    advance(simulation, steps)
    return simulation.trail[0].clone()


def timed(fn, device: torch.device, reps: int) -> tuple[float, object]:
    """(ms per call, the last result): one warm-up call, then `reps` calls between syncs."""
    result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(reps):
        result = fn()
    if device.type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / reps * 1e3, result


def peak_mib(fn, device: torch.device) -> float | None:
    """Extra device memory one call takes at its peak (MiB), on CUDA."""
    if device.type != "cuda":
        return None
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    fn()
    torch.cuda.synchronize()
    return (torch.cuda.max_memory_allocated() - base) / 2**20


def selections(trail: torch.Tensor, k: int) -> dict:
    flat = trail.reshape(-1)
    found = {
        "kthvalue (old auto_high)": lambda: torch.kthvalue(flat, k).values,
        "sort": lambda: torch.sort(flat).values[k - 1],
        "topk smaller side": lambda: select._topk(flat, k),
        "radix histograms (bincount)": lambda: radix_select(flat, k),
        "auto_high (new)": lambda: colour.auto_high(trail, 0.99),
    }
    if trail.device.type == "cpu":
        found["np.partition"] = lambda: select._partition(flat, [k])[0]
    return found


def measure_size(height: int, width: int, args, device: torch.device) -> dict:
    trail = (
        simulated_trail(height, width, args.steps, device)
        if args.trail == "sim"
        else synthetic_trail(height, width, device)
    )
    k = select.quantile_rank(trail.numel(), 0.99)
    expected = torch.kthvalue(trail.reshape(-1), k).values.view(torch.int32).item()
    rows = {}
    for name, fn in selections(trail, k).items():
        reps = max(1, args.reps // 4) if name.startswith("kthvalue") or device.type == "cpu" else args.reps
        ms, value = timed(fn, device, reps)
        same = value.view(torch.int32).item() == expected
        rows[name] = {"ms": round(ms, 3), "exact": same, "peak_mib": peak_mib(fn, device)}
        print(f"  {height}x{width} {name:30s} {ms:9.3f} ms  exact={same}", flush=True)
    fresh = Colourist(PALETTE)
    new_ms, new_index = timed(lambda: fresh.index_frame(trail), device, args.reps)
    colour.auto_high, saved = old_auto_high, colour.auto_high
    try:
        old_ms, old_index = timed(lambda: fresh.index_frame(trail), device, max(1, args.reps // 4))
    finally:
        colour.auto_high = saved
    rgb_ms, _ = timed(lambda: fresh.colour(trail, 0), device, args.reps)
    same_index = bool(torch.equal(old_index, new_index))
    print(
        f"  {height}x{width} index_frame old {old_ms:.3f} ms, new {new_ms:.3f} ms (same: {same_index}); "
        f"colour (index + RGB) {rgb_ms:.3f} ms",
        flush=True,
    )
    share = float((trail < 1e-3).float().mean())
    return {
        "selection": rows,
        "index_frame_old_ms": round(old_ms, 3),
        "index_frame_new_ms": round(new_ms, 3),
        "colour_new_ms": round(rgb_ms, 3),
        "same_index_frames": same_index,
        "cells_below_1e-3": round(share, 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cuda")
    parser.add_argument("--sizes", default="1024x1024,3840x2160", help="HEIGHTxWIDTH, comma separated")
    parser.add_argument("--trail", choices=("synthetic", "sim"), default="synthetic")
    parser.add_argument("--steps", type=int, default=200, help="with --trail sim")
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--out", help="write the results here as JSON")
    args = parser.parse_args()
    device = torch.device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor()
    print(f"device {device} ({name}), torch {torch.__version__}, threads {torch.get_num_threads()}")
    results = {"device": name, "torch": torch.__version__, "numpy": np.__version__, "trail": args.trail}
    for size in args.sizes.split(","):
        height, width = (int(v) for v in size.lower().split("x"))
        results[size] = measure_size(height, width, args, device)
    if args.out:
        with open(args.out, "w") as out:
            json.dump(results, out, indent=1)


if __name__ == "__main__":
    main()
