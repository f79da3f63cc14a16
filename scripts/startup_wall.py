"""Process wall of the commands a user waits for (issue 25, start-up), and Triton's kernel cache.

Each command runs as its own process (`python3 -m physarum.render.cli ...`, as the shell's
`physarum` does), timed from start to exit. The light commands (`--help`, `presets`) run
`--repeat` times (the least and the median are shown); each preset renders twice with the
Triton backend on CUDA into one fresh TRITON_CACHE_DIR: the first run compiles every kernel
(cold), the second finds them on disk (warm). After each render the table shows the cache's
kernels (Triton's cache holds a folder per compiled kernel) and the render's own time (the
sidecar's timings.total_s, the "in-process" time the README quotes), so the process wall minus it
is start-up (imports, CUDA, kernels) and shut-down. A warm run that adds kernels to the cache
compiled them again.

Run on the GPU host (about 2 minutes for quickstart and labyrinth):
    source scripts/gpu_env.sh > /dev/null && python3 scripts/startup_wall.py --json "$OUT/startup_wall.json"
On a CPU (a smoke test): python3 scripts/startup_wall.py --backend torch --device cpu --presets quickstart --set run.steps=20
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLI = [sys.executable, "-m", "physarum.render.cli"]


def timed(args: list[str], env: dict[str, str]) -> float:
    """Process wall of one command (seconds); a failing command stops the script with its stderr."""
    start = time.perf_counter()
    done = subprocess.run([*CLI, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return wall


def kernels(cache: Path) -> int:
    """Compiled kernels in a Triton cache: its folders holding a kernel's metadata (.json)."""
    return sum(1 for folder in cache.iterdir() if any(folder.glob("*.json"))) if cache.is_dir() else 0


def light_rows(repeat: int, env: dict[str, str]) -> list[dict]:
    rows = []
    for args in (["--help"], ["presets"]):
        walls = [timed(args, env) for _ in range(repeat)]
        rows.append(
            {
                "command": " ".join(args),
                "cache": "-",
                "min_s": min(walls),
                "median_s": statistics.median(walls),
            }
        )
    return rows


def render_rows(options: argparse.Namespace, env: dict[str, str], work: Path) -> list[dict]:
    rows = []
    for preset in options.presets.split(","):
        cache = work / f"triton-cache-{preset}"
        env = {**env, "TRITON_CACHE_DIR": str(cache)}
        out = work / f"out-{preset}"
        args = ["render", preset, "--backend", options.backend, "--device", options.device, "--out", str(out)]
        args += ["--quiet", *[part for s in options.set for part in ("--set", s)]]
        for run in ("cold", "warm"):
            wall = timed(args, env)
            sidecar = next((out / preset).glob("*.json"))
            total = json.loads(sidecar.read_text())["timings"]["total_s"]
            rows.append(
                {
                    "command": f"render {preset}",
                    "cache": run,
                    "min_s": wall,
                    "median_s": wall,
                    "in_process_s": total,
                    "kernels_cached": kernels(cache),
                }
            )
    return rows


def table(rows: list[dict]) -> str:
    lines = [
        "| command | Triton cache | process wall, s (least) | median, s | render in-process, s | start-up and exit, s | kernels in cache |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        inside = r.get("in_process_s")
        extra = (
            f"{inside:.2f} | {r['min_s'] - inside:.2f} | {r['kernels_cached']}"
            if inside is not None
            else "- | - | -"
        )
        lines.append(
            f"| `{r['command']}` | {r['cache']} | {r['min_s']:.2f} | {r['median_s']:.2f} | {extra} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--presets", default="quickstart,labyrinth")
    parser.add_argument("--backend", default="triton")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each light command")
    parser.add_argument(
        "--set", action="append", default=[], help="KEY=VALUE for every render (a smoke test)"
    )
    parser.add_argument("--json", help="also write the rows here")
    options = parser.parse_args()
    env = dict(os.environ)
    with tempfile.TemporaryDirectory(prefix="startup-wall-") as folder:
        rows = light_rows(options.repeat, env) + render_rows(options, env, Path(folder))
    print(table(rows))
    if options.json:
        Path(options.json).write_text(json.dumps(rows, indent=1) + "\n")


if __name__ == "__main__":
    main()
