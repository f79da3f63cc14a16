"""Explore's throughput: candidates per minute of `physarum explore` of a curated preset.

Runs one explore (issue 26's benchmark: quickstart at 512^2, 600 steps, 2 rounds of 52 = 104
candidates) into a fresh temporary folder and prints its wall time and candidates per minute,
from the explore's own start (the preset read, torch loaded) to its files written. With --warmup
(the default on CUDA) a 2-candidate explore of the same shape runs first, so that Triton's
kernels are compiled and cached before the clock starts (the first run on a machine compiles
them: `--no-warmup` measures that too).

GPU (the issue's target, 100+ candidates in under 2 minutes on the H200; about 1-3 minutes):

    source scripts/gpu_env.sh > /dev/null
    python3 scripts/bench_explore.py --device cuda --backend triton

The 2-core CPU, reduced (about 2 minutes):

    .venv/bin/python scripts/bench_explore.py --device cpu --backend torch --size 128 --steps 200 \
        --population 12

Prints one line per setting and a final line `candidates/minute: X`; exits 1 when --target-s is
given and the explore took longer.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from physarum.render.explore import ExploreOptions, explore, summary_lines
from physarum.render.preset import load_preset
from physarum.render.preset.catalog import resolve_preset_path


def arguments(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--preset", default="quickstart")
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--population", type=int, default=52)
    parser.add_argument("--keep", type=int, default=16)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--backend", default="triton")
    parser.add_argument("--warmup", action=argparse.BooleanOptionalAction, default=None)
    parser.add_argument("--target-s", type=float, default=None, help="fail (exit 1) above this many seconds")
    return parser.parse_args(argv)


def options(args, out: Path, **changes) -> ExploreOptions:
    settings = dict(
        rounds=args.rounds,
        population=args.population,
        keep=args.keep,
        size=args.size,
        steps=args.steps,
        backend=args.backend,
        device=args.device,
        out=out,
        yes=True,
        quiet=True,
    )
    settings.update(changes)
    return ExploreOptions(**settings)


def main(argv=None) -> int:
    args = arguments(argv)
    preset = load_preset(resolve_preset_path(args.preset))
    warmup = args.warmup if args.warmup is not None else args.device.startswith("cuda")
    with tempfile.TemporaryDirectory(prefix="bench-explore-") as folder:
        if warmup:
            explore(preset, options(args, Path(folder) / "warmup", rounds=1, population=2, keep=1, steps=10))
        began = time.perf_counter()
        result = explore(preset, options(args, Path(folder) / "run"))
        seconds = time.perf_counter() - began
        print("\n".join(summary_lines(result)))
    candidates = sum(result.statuses.values())
    print(
        f"preset {args.preset}, {args.size} px, {args.steps} steps, {args.rounds} x {args.population} "
        f"candidates, {args.device} ({args.backend}), warm-up {'yes' if warmup else 'no'}: {seconds:.1f} s"
    )
    print(f"candidates/minute: {candidates / seconds * 60:.1f}")
    if args.target_s is not None and seconds > args.target_s:
        print(f"slower than the target: {seconds:.1f} s > {args.target_s} s", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
