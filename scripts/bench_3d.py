"""The 3D model's step on a GPU (issue 27): ms/step and agent-steps/s of the Triton backend at
256^3 with 16M agents and 512^3 with 64M, against the memory floor, with peak GPU memory; and
byte-identity of Triton and the torch reference on CUDA at a medium size.

Protocol (render/tools/bench.py's): spawn, develop DEVELOP steps (compiles, captures the CUDA
graphs, sorts), then time REPEATS runs of 128 steps (each includes two agent sorts, every 64
steps, so the sort's cost is amortised as in a render) with CUDA events; the median. The floor is the bytes a
step must move, agent state (x, y, z: 12 bytes, direction: 2) and the float32 trail each read
and written once, over 4.8 TB/s (the H200's HBM3e) and over the device-to-device copy bandwidth
measured here.

    source scripts/gpu_env.sh > /dev/null && python3 scripts/bench_3d.py --out $OUT/bench_3d.json

About 1-2 minutes on an H200 (most of it spawning, sorting and the identity check).
"""

from __future__ import annotations

import argparse
import json
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import torch

from physarum.kernels import exact3d
from physarum.kernels.api import ModelParams, World
from physarum.kernels.reference3d import TorchSimulation3D
from physarum.kernels.spawn3d import spawn3d
from physarum.kernels.triton3d import TritonSimulation3D
from physarum.render.tools.bench import copy_bandwidth

HBM = 4.8e12  # bytes per second, the H200's HBM3e
PARAMS = ModelParams(22.5, 9.0, 45.0, 1.0, 5.0, 1.0, 0.1, 1)  # veins-like, in voxels
CONFIGS = {"256^3/16M": (256, 1 << 24), "512^3/64M": (512, 1 << 26)}
DEVELOP = 192
STEPS = 128


def median_ms(run, steps: int, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        run(steps)
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / steps)
    return sorted(times)[len(times) // 2]


def phase_ms(simulation, steps: int = 32) -> dict:
    """ms per step of each launch (and of a sort, per sort), from eager steps timed by events."""
    pending = []

    @contextmanager
    def phase(name: str):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        yield
        end.record()
        pending.append((name, start, end))

    simulation._steps_since_sort = simulation._sort_every  # one sort among the timed steps
    for _ in range(steps):
        simulation.profiled_step(phase)
    torch.cuda.synchronize()
    totals, counts = defaultdict(float), defaultdict(int)
    for name, start, end in pending:
        totals[name] += start.elapsed_time(end)
        counts[name] += 1
    return {name: round(totals[name] / counts[name], 4) for name in totals}


def bench(name: str, side: int, agents: int, repeats: int, bandwidth: float) -> dict:
    device = torch.device("cuda")
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    began = time.perf_counter()
    state = spawn3d([PARAMS.seed], agents, (side, side, side), "ball", radius=0.45, device=device)
    tables = exact3d.build_tables3d([PARAMS], device=device)
    simulation = TritonSimulation3D(state, tables, World(), device=device)
    del state
    simulation.advance(DEVELOP)
    torch.cuda.synchronize()
    ready = time.perf_counter() - began
    ms = median_ms(simulation.advance, STEPS, repeats)
    phases = phase_ms(simulation)
    cells = side**3
    floor_bytes = 2 * (agents * 14 + cells * 4)
    per_agent, per_cell = TritonSimulation3D.device_bytes(agents)
    row = {
        "config": name,
        "side": side,
        "agents": agents,
        "ms_per_step": round(ms, 4),
        "agent_steps_per_s": agents / (ms / 1e3),
        "floor_ms_hbm": floor_bytes / HBM * 1e3,
        "x_floor_hbm": ms / (floor_bytes / HBM * 1e3),
        "floor_ms_copy": floor_bytes / bandwidth * 1e3,
        "x_floor_copy": ms / (floor_bytes / bandwidth * 1e3),
        "peak_gib": torch.cuda.max_memory_allocated() / 2**30,
        "estimate_gib": (per_agent * agents + per_cell * cells) / 2**30,
        "seconds_to_develop": round(ready, 1),
        "phase_ms": phases,
        "trail_mass": float(simulation.trail.double().sum()),
    }
    print(
        f"{name:>10}: {ms:8.3f} ms/step  {row['agent_steps_per_s']:.3e} agent-steps/s  "
        f"x{row['x_floor_hbm']:.2f} HBM floor ({row['floor_ms_hbm']:.3f} ms), x{row['x_floor_copy']:.2f} copy floor  "
        f"peak {row['peak_gib']:.2f} GiB (estimate {row['estimate_gib']:.2f})",
        flush=True,
    )
    print(f"{'':>10}  per launch: {phases} (sort: once per {simulation._sort_every} steps)", flush=True)
    del simulation
    return row


def identity(side: int, agents: int, steps: int) -> dict:
    """Triton and the torch reference on CUDA from one state, `steps` steps, every boundary."""
    results = {}
    for boundary in ("wrap", "reflect", "clamp"):
        state = spawn3d([5, 6], agents, (side, side + 8, side + 16), "ball", radius=0.45, device="cuda")
        params = [PARAMS, ModelParams(40.0, 6.5, 30.0, 1.7, 2.0, 0.6, 0.05, 6)]
        tables = exact3d.build_tables3d(params, device="cuda")
        world = World(boundary=boundary)
        reference = TorchSimulation3D(state.clone(), tables, world)
        triton = TritonSimulation3D(state.clone(), tables, world, sort_every=32)
        reference.advance(steps)
        triton.advance(steps)
        a, b = reference.state, triton.state
        same = (
            torch.equal(a.position, b.position)
            and torch.equal(a.heading, b.heading)
            and torch.equal(a.trail.view(torch.int32), b.trail.view(torch.int32))
        )
        results[boundary] = bool(same)
        print(
            f"identity {side}^3-ish, {agents} agents x 2, {steps} steps, {boundary}: {'same bytes' if same else 'DIFFER'}"
        )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated: " + ", ".join(CONFIGS))
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--identity", default="96,1000000,100", help="side,agents,steps of the identity check"
    )
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    bandwidth = copy_bandwidth(torch.device("cuda"))
    print(f"{torch.cuda.get_device_name()}: copy bandwidth {bandwidth / 1e12:.2f} TB/s (read + write)")
    side, agents, steps = (int(v) for v in args.identity.split(","))
    report = {"device": torch.cuda.get_device_name(), "copy_bandwidth": bandwidth}
    report["identity"] = identity(side, agents, steps)
    report["configs"] = [
        bench(name, *CONFIGS[name], args.repeats, bandwidth) for name in args.configs.split(",")
    ]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    if not all(report["identity"].values()):
        raise SystemExit("Triton and the reference differ")


if __name__ == "__main__":
    main()
