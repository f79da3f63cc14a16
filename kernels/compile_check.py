"""Compile the Triton step kernels for an NVIDIA GPU without one (ahead of time, to cubin).

The interpreter (TRITON_INTERPRET=1) runs kernels as Python, which accepts code the compiler
rejects (an early `return` under a constexpr `if`, say); this compiles every specialisation the
backend launches (species, boundary, walls, food, sorted lanes, warp-merged deposits) for
sm_90 (H100/H200) on the CPU, so such errors show up in CI.

    python3 -m physarum.kernels.compile_check [--arch 90]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from . import triton3d_kernels as k3
from . import triton_kernels as k

AGENT_TYPES = {
    "position_ptr": "*i32",
    "heading_ptr": "*i16",
    "agent_id_ptr": "*i32",
    "trail_ptr": "*fp32",
    "counts_ptr": "*i32",
    "step_ptr": "*i64",
    "sense_offset_ptr": "*i64",
    "step_offset_ptr": "*i64",
    "sensor_turn_ptr": "*i32",
    "turn_ptr": "*i32",
    "seed_key_ptr": "*i64",
    "mix_ptr": "*fp32",
    "wall_ptr": "*u8",
    "agents": "i32",
    "height": "i32",
    "width": "i32",
}
DIFFUSE_TYPES = {
    "trail_ptr": "*fp32",
    "counts_ptr": "*i32",
    "next_counts_ptr": "*i32",
    "next_trail_ptr": "*fp32",
    "step_ptr": "*i64",
    "deposit_ptr": "*fp32",
    "keep_ptr": "*fp32",
    "spread_ptr": "*fp32",
    "retain_ptr": "*fp32",
    "food_ptr": "*fp32",
    "wall_ptr": "*u8",
    "height": "i32",
    "width": "i32",
}

AGENT3D_TYPES = {
    "position_ptr": "*i32",
    "heading_ptr": "*i16",
    "agent_id_ptr": "*i32",
    "trail_ptr": "*fp32",
    "counts_ptr": "*i32",
    "step_ptr": "*i64",
    "sense_ptr": "*i64",
    "turn_ptr": "*i16",
    "step_offset_ptr": "*i64",
    "mirror_ptr": "*i16",
    "seed_key_ptr": "*i64",
    "agents": "i32",
    "depth": "i32",
    "height": "i32",
    "width": "i32",
}
DIFFUSE3D_TYPES = {
    **{
        name: kind
        for name, kind in DIFFUSE_TYPES.items()
        if name not in ("food_ptr", "wall_ptr", "height", "width")
    },
    "depth": "i32",
    "height": "i32",
    "width": "i32",
    "chunks": "i32",
}


def compile_one(fn, types: dict, absent: set, constants: dict, target: GPUTarget) -> None:
    """Compile fn with `absent` pointer arguments passed as None and the given constexprs."""
    signature = {name: ("constexpr" if name in absent else kind) for name, kind in types.items()}
    signature.update({name: "constexpr" for name in constants})
    constexprs = {name: None for name in absent} | constants
    triton.compile(
        ASTSource(fn=fn, signature=signature, constexprs=constexprs),
        target=target,
        options={"num_warps": 4, "enable_fp_fusion": False},
    )


def cases():
    """(kernel name, fn, types, absent pointers, constexprs) of every specialisation to check."""
    for species, boundary, walls, sorted_lanes in itertools.product(
        (1, 2, 4), (0, 1, 2), (False, True), (False, True)
    ):
        absent = set() if species > 1 else {"mix_ptr"}
        absent |= set() if walls else {"wall_ptr"}
        absent |= set() if sorted_lanes else {"agent_id_ptr"}
        yield (
            f"agent S={species} B={boundary} walls={walls} sorted={sorted_lanes}",
            k._agent_kernel,
            AGENT_TYPES,
            absent,
            dict(BLOCK=k.AGENT_BLOCK, WARP_AGGREGATED=sorted_lanes, SPECIES=species, BOUNDARY=boundary),
        )
    for species, boundary, walls, food, clear in itertools.product(
        (1, 3), (0, 1), (False, True), (False, True), (True, False)
    ):
        absent = (set() if walls else {"wall_ptr"}) | (set() if food else {"food_ptr"})
        yield (
            f"diffuse S={species} B={boundary} walls={walls} food={food} clear={clear}",
            k._diffuse_kernel,
            DIFFUSE_TYPES,
            absent,
            dict(BLOCK_H=1, BLOCK_W=k.DIFFUSE_BLOCK_W, CLEAR_NEXT=clear, SPECIES=species, BOUNDARY=boundary),
        )

    yield from cases_3d()


def cases_3d():
    """The 3D model's kernels (kernels/triton3d_kernels.py): boundaries, sorted lanes, clears."""
    for boundary, sorted_lanes in itertools.product((0, 1, 2), (False, True)):
        yield (
            f"agent3d B={boundary} sorted={sorted_lanes}",
            k3._agent3d_kernel,
            AGENT3D_TYPES,
            set() if sorted_lanes else {"agent_id_ptr"},
            dict(BLOCK=k3.AGENT_BLOCK, WARP_AGGREGATED=sorted_lanes, BOUNDARY=boundary),
        )
    for boundary, clear in itertools.product((0, 1), (True, False)):
        yield (
            f"diffuse3d B={boundary} clear={clear}",
            k3._diffuse3d_kernel,
            DIFFUSE3D_TYPES,
            set(),
            dict(
                BLOCK_H=k3.DIFFUSE_BLOCK_H,
                BLOCK_W=k3.DIFFUSE_BLOCK_W,
                BLOCK_Z=k3.DIFFUSE_BLOCK_Z,
                CLEAR_NEXT=clear,
                BOUNDARY=boundary,
            ),
        )


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--arch", type=int, default=90)
    args = parser.parse_args()
    target = GPUTarget("cuda", args.arch, 32)
    failures = 0
    for name, fn, types, absent, constants in cases():
        began = time.perf_counter()
        try:
            compile_one(fn, types, absent, constants, target)
            print(f"ok    {name} ({time.perf_counter() - began:.1f} s)", flush=True)
        except Exception as error:  # report every failing specialisation, not just the first
            failures += 1
            print(
                f"FAIL  {name}: {type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}",
                flush=True,
            )
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
