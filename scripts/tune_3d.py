"""Tuning variants of the 3D Triton step (kernels/triton3d_kernels.py's constants, the sort
interval) at one size, each checked to give the first variant's bytes: tuning changes speed only.

    source scripts/gpu_env.sh > /dev/null && python3 scripts/tune_3d.py [--side 256 --agents 16777216]

About a minute on an H200 at 256^3 with 16M agents.
"""

from __future__ import annotations

import argparse

import torch
from bench_3d import PARAMS, median_ms, phase_ms  # scripts/ is the path of a script run

from physarum.kernels import exact3d
from physarum.kernels import triton3d_kernels as kernels
from physarum.kernels.api import World
from physarum.kernels.spawn3d import spawn3d
from physarum.kernels.triton3d import TritonSimulation3D

VARIANTS = [
    ("baseline", {}, 64),
    ("sort 128", {}, 128),
    ("agent block 128", {"AGENT_BLOCK": 128}, 64),
    ("agent block 512", {"AGENT_BLOCK": 512}, 64),
    ("agent block 256, 2 warps", {"AGENT_WARPS": 2}, 64),
    ("diffuse 1x512", {"DIFFUSE_BLOCK_W": 512}, 64),
    ("diffuse 1x512, 8 warps", {"DIFFUSE_BLOCK_W": 512, "DIFFUSE_WARPS": 8}, 64),
    ("diffuse 1x128", {"DIFFUSE_BLOCK_W": 128}, 64),
    ("diffuse 2x256", {"DIFFUSE_BLOCK_H": 2}, 64),
    ("diffuse 1x256, 2 warps", {"DIFFUSE_WARPS": 2}, 64),
    ("diffuse z 32", {"DIFFUSE_BLOCK_Z": 32}, 64),
    ("diffuse z 64", {"DIFFUSE_BLOCK_Z": 64}, 64),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=256)
    parser.add_argument("--agents", type=int, default=1 << 24)
    parser.add_argument("--steps", type=int, default=128)
    args = parser.parse_args()
    grid = (args.side,) * 3
    state = spawn3d([PARAMS.seed], args.agents, grid, "ball", radius=0.45, device="cuda")
    tables = exact3d.build_tables3d([PARAMS], device="cuda")
    developed = TritonSimulation3D(state, tables, World())
    developed.advance(256)
    state = developed.state
    del developed
    first = None
    for name, constants, sort_every in VARIANTS:
        saved = {k: getattr(kernels, k) for k in constants}
        try:
            for k, v in constants.items():
                setattr(kernels, k, v)
            simulation = TritonSimulation3D(state, tables, World(), sort_every=sort_every)
            simulation.advance(args.steps)  # compile, capture
            ms = median_ms(simulation.advance, args.steps, 3)
            phases = phase_ms(simulation)
            check = TritonSimulation3D(state, tables, World(), sort_every=sort_every)
            check.advance(args.steps)
            result = check.state
        finally:
            for k, v in saved.items():
                setattr(kernels, k, v)
        if first is None:
            first = result
        same = (
            torch.equal(first.position, result.position)
            and torch.equal(first.heading, result.heading)
            and torch.equal(first.trail.view(torch.int32), result.trail.view(torch.int32))
        )
        print(
            f"{name:<28} {ms:8.3f} ms/step  {phases}  {'same bytes' if same else 'DIFFERENT BYTES'}",
            flush=True,
        )
        del simulation, check


if __name__ == "__main__":
    main()
