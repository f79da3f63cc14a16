"""Time keyframed parameters against fixed ones: the simulation alone, on one preset's canvas
and agents (docs/presets.md, "Schedules", Cost; issue 17).

    python scripts/bench_keyframes.py veins [--steps 1000] [--device cuda] [--out FILE.json]

Each case is the preset with its model as written ("fixed") or with one schedule over the whole
run: "hold" (a switch of decay at four keyframes), "angle ramp" (sensor_angle linear: new
sensor_turn every few steps), "distance ramp" (sensor_distance linear: new vector tables at
every step). Each is simulated once to warm up (compiles, CUDA graphs), then timed over --steps
steps from a fresh spawn (CUDA synchronised), the median of three. Prints ms/step, the retunes
and the slowdown against fixed; writes the rows as JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import torch

from physarum.render.preset import load_preset
from physarum.render.preset.catalog import resolve_preset_path
from physarum.render.run.machine import device_name, resolve_backend, resolve_device
from physarum.render.sim.simulation import make_simulation

CASES = {
    "fixed": [],
    "hold": ["model.decay={ease: hold, keys: {0: 0.05, 25%: 0.1, 50%: 0.05, 75%: 0.1}}"],
    "angle ramp": ["model.sensor_angle={keys: {0: 15, 100%: 60}}"],
    "distance ramp": ["model.sensor_distance={keys: {0: 9, 100%: 25}}"],
}


def seconds(preset, backend: str, device: torch.device, steps: int) -> tuple[float, int]:
    """Seconds to simulate `steps` steps from a fresh spawn, and the retunes it took."""
    simulation = make_simulation(preset, backend, device)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    began = time.perf_counter()
    simulation.advance(steps)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - began, getattr(simulation, "retunes", 0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("preset")
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--device")
    parser.add_argument("--out")
    args = parser.parse_args()
    device = resolve_device(args.device)
    backend = resolve_backend("auto", device)
    rows = []
    for case, settings in CASES.items():
        preset = load_preset(resolve_preset_path(args.preset), [f"run.steps={args.steps}", *settings])
        seconds(preset, backend, device, args.steps)  # warm-up: compiles, graphs
        times = [seconds(preset, backend, device, args.steps) for _ in range(3)]
        median = statistics.median(t for t, _ in times)
        rows.append({"case": case, "ms_per_step": 1e3 * median / args.steps, "retunes": times[0][1]})
    fixed = rows[0]["ms_per_step"]
    print(f"{args.preset} on {device_name(device)} ({backend}), {args.steps} steps")
    for row in rows:
        row["slowdown"] = row["ms_per_step"] / fixed
        print(
            f"  {row['case']:14} {row['ms_per_step']:8.3f} ms/step  {row['retunes']:5} retunes  x{row['slowdown']:.2f}"
        )
    if args.out:
        document = {"preset": args.preset, "device": device_name(device), "backend": backend, "rows": rows}
        with open(args.out, "w") as file:
            json.dump(document, file, indent=1)


if __name__ == "__main__":
    main()
