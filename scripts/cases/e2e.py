"""The time a user waits (issue 34): process walls of whole renders, warm and cold Triton cache,
each render's stage shares, what the main thread and the encoder threads spend their time on,
what a render imports before its first step, and the sha256 of quickstart's reduced outputs.

    python -m physarum.render.tools.harness case e2e --label LABEL --json-out DIR
        [--presets quickstart,labyrinth,cosmos] [--parts walls,formats,ahead,ends,served,inner,pool,profile,importtime,hashes]
        [--backend triton --device cuda]
    python3 scripts/cases/e2e.py --label LABEL --out DIR ...     (the same, without the table)

A case of the benchmark harness (render/tools/harness.py): each part appends its rows to the
machine's table (walls and formats: one row per render, its process wall and sidecar timings;
the other parts: one row each, their data in the row's extra column), and with --json-out DIR
(--out run as a script) writes DIR/LABEL-PART.json as before. Parts:

- walls: `physarum render PRESET` as its own process, timed from the shell's side (process
  wall), first with an empty TRITON_CACHE_DIR (cold: every kernel compiled), then again (warm);
  beside each, the sidecar's timings (spawn, open, frames, finish, each encoder's busy seconds,
  and the stage that bound the render where the sidecar says it).
- served: the first of --presets through `physarum serve` (torch and the package imported once,
  each command a forked child), cold and warm, against its own process, alternated.
- formats: quickstart warm, all its formats against all but the GIF ([mp4, png]) alternated three
  times (the GIF's share of the frame loop, printed), then output.formats [gif], [mp4], [png]
  alone and unbudgeted GIF: the frame loop (frames_s) with and without the GIF.
- ahead: quickstart with an empty Triton cache, without and with PHYSARUM_COMPILE_AHEAD=1,
  alternated twice: the cold start with the first step's kernels compiled at once, and its bytes.
- ends: the first of --presets warm, through `physarum` (the process ends at once after main)
  and through the old entry (Python's teardown after main), alternated, three of each.
- inner: quickstart (and --inner-presets) rendered in this process with stage timers wrapped
  around the pipeline's functions (simulation steps, colouring, hand-over, the GIF store, the
  budget's estimates and writes), and a sampler of every thread's Python stack each millisecond:
  where the main thread and the encoder threads spend their time.
- importtime: `python -X importtime -m physarum.render.cli render quickstart` (warm): the
  modules imported by a render, largest first, ours marked.
- hashes: sha256 of quickstart's GIF, MP4 and PNG at --reduce 4 (same bytes before and after).
- pool: quickstart in a child, warm, with its GIF's workers one per 4, 2 and 1 Mpixel of its
  frames (gif_pool.PIXELS_PER_WORKER): all formats against all but the GIF, alternated, the
  frame loop's share of the GIF at each count; then each pool alone, its start and 40 frames.
- profile: each of --profile-presets (default cosmos) rendered warm in a child under
  torch.profiler: the frame loop beside the device's busy seconds, the operations by device time
  and by host time (a host call that waits for the device shows as host time: how cosmos's
  palette waits were found).
- table: the README's table in one command: each of --table-presets (PRESET or PRESET:K, K the
  `--reduce K` a machine too small for the preset renders it at, stated in the table) rendered
  as its own process with an empty Triton cache (cold), then again (warm); its process wall,
  the start-up and exit around the render (the wall less the sidecar's total_s), and its stage
  shares (the sidecar's stage_*_s, each a share of their sum) and bound stage; --set is not
  applied (the curated presets as they are). Printed as a Markdown table (and, as a case, one
  row per render in the machine's table).

The curated presets' table, on the GPU host (full size):

    python3 -m physarum.render.tools.harness case e2e --parts table --backend auto --device cuda

and on a 2-core CPU (reduced, as TABLE_PRESETS_CPU says):

    python3 -m physarum.render.tools.harness case e2e --small --parts table

On the GPU host: source scripts/gpu_env.sh > /dev/null && python3 -m physarum.render.tools.harness
--out $OUT case e2e --label before --json-out $OUT. On a CPU (a smoke test): --small.
"""

from __future__ import annotations

import argparse
import collections
import functools
import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

PROCESS_START = time.time()  # near enough the interpreter's start (this script imports little)
CLI = [sys.executable, "-m", "physarum.render.cli"]


def run_cli(args: list[str], env: dict[str, str], command: list[str] = CLI) -> tuple[float, str]:
    """Process wall of one command (`command`, the CLI, with `args`) and its stderr; a failing
    command stops the script."""
    start = time.perf_counter()
    done = subprocess.run([*command, *args], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"{' '.join(args)}: exit {done.returncode}\n{done.stderr[-3000:]}")
    return wall, done.stderr


def sidecar(out: Path, preset: str) -> dict:
    return json.loads(next((out / preset).glob("*.json")).read_text())


def render_args(preset: str, opts, out: Path, extra: list[str] = ()) -> list[str]:
    args = ["render", preset, "--backend", opts.backend, "--device", opts.device, "--out", str(out)]
    return [*args, *[part for s in [*opts.set, *extra] for part in ("--set", s)]]


def row_of(command: str, cache: str, wall: float, record: dict, stderr: str) -> dict:
    t = record["timings"]
    budget = record.get("gif_budget") or {}
    return {
        "command": command,
        "cache": cache,
        "wall_s": round(wall, 3),
        **{k: t[k] for k in t},
        "bound": record.get("bound"),
        "gif_budget_s": (budget.get("cost") or {}).get("seconds"),
        "gif_estimates": (budget.get("cost") or {}).get("estimates"),
        "summary": [line for line in stderr.splitlines() if " on " in line and " s" in line][-1:],
    }


def walls(opts, env: dict[str, str], work: Path) -> list[dict]:
    rows = []
    for preset in opts.presets.split(","):
        cache = work / f"triton-{preset}"
        shutil.rmtree(cache, ignore_errors=True)
        run_env = {**env, "TRITON_CACHE_DIR": str(cache)}
        out = work / f"out-{preset}"
        for run in ("cold", "warm"):
            wall, stderr = run_cli(render_args(preset, opts, out), run_env)
            rows.append(row_of(f"render {preset}", run, wall, sidecar(out, preset), stderr))
            print(json.dumps(rows[-1]), flush=True)
    return rows


# the command's entry before cli.main.run: main, then the interpreter's own exit and teardown
OLD_END = "import sys; from physarum.render.cli.main import main; sys.exit(main())"


def ends(opts, env: dict[str, str], work: Path, repeats: int = 3) -> list[dict]:
    """The command's end (issue 34 item 2): the first of --presets rendered warm, alternately
    through `physarum` (main, then the process ends at once: cli.main.run) and through the old
    entry (OLD_END: Python's teardown of torch, CUDA's context and Triton after main), `repeats`
    times each after a warm-up; process walls from outside and the render's own total_s."""
    preset = opts.presets.split(",")[0]
    run_env = {**env, "TRITON_CACHE_DIR": str(work / f"triton-{preset}")}
    out = work / f"out-ends-{preset}"
    args = [*render_args(preset, opts, out), "--quiet"]
    run_cli(args, run_env)  # the warm-up: kernels cached, files in the page cache
    rows = []
    for _ in range(repeats):
        for end, command in (("new", CLI), ("old", [sys.executable, "-c", OLD_END])):
            wall, _ = run_cli(args, run_env, command)
            total = sidecar(out, preset)["timings"]["total_s"]
            rows.append(
                {
                    "command": f"render {preset}, {end} end",
                    "cache": "warm",
                    "wall_s": round(wall, 3),
                    "total_s": total,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def served(opts, env: dict[str, str], work: Path, repeats: int = 3) -> list[dict]:
    """A render handed to `physarum serve` (cli/serve.py): a server on a private socket in work,
    ready before the clock starts; the first of --presets with an empty Triton cache through it
    (cold), then warm, alternately served and run by its own process (PHYSARUM_SERVE=0),
    `repeats` times each; process walls of the command from outside and the render's total_s."""
    preset = opts.presets.split(",")[0]
    folder = work / "serve"
    folder.mkdir(mode=0o700, exist_ok=True)
    serve_env = {k: v for k, v in env.items() if k != "PHYSARUM_SERVE"}
    serve_env["PHYSARUM_SERVER"] = str(folder / "serve.sock")
    server = subprocess.Popen([*CLI, "serve"], env=serve_env, stderr=subprocess.PIPE, text=True)
    began = time.perf_counter()
    ready = server.stderr.readline()
    if "ready at" not in ready:
        sys.exit(f"physarum serve did not start: {ready}{server.stderr.read()[-3000:]}")
    rows = [
        {"command": "physarum serve ready", "cache": "-", "wall_s": round(time.perf_counter() - began, 3)}
    ]
    out = work / f"out-served-{preset}"
    args = [*render_args(preset, opts, out), "--quiet"]
    try:
        cold = {**serve_env, "TRITON_CACHE_DIR": str(work / f"triton-served-{preset}")}
        runs = [("served", "cold", cold)]
        warm = {**cold}
        runs += [("served", "warm", warm)]  # the warm-up: kernels cached, files in the page cache
        for _ in range(repeats):
            runs += [("served", "warm", warm), ("own process", "warm", {**warm, "PHYSARUM_SERVE": "0"})]
        for how, cache, run_env in runs:
            wall, _ = run_cli(args, run_env)
            total = sidecar(out, preset)["timings"]["total_s"]
            rows.append(
                {
                    "command": f"render {preset}, {how}",
                    "cache": cache,
                    "wall_s": round(wall, 3),
                    "total_s": total,
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(60)
    return rows


def formats(opts, env: dict[str, str], work: Path, pairs: int = 3) -> list[dict]:
    """quickstart warm (after a warm-up render that fills its Triton cache) with each format
    alone and unbudgeted GIF, after `pairs` alternated pairs of all its formats against all but
    the GIF ([mp4, png]): the GIF's share of the frame loop (issue 34: at most 20 %), the median
    frames_s of one against the other, printed."""
    cache = work / "triton-quickstart"
    run_env = {**env, "TRITON_CACHE_DIR": str(cache)}
    rows = []
    without_gif = ["output.formats=[mp4, png]"]
    run_cli(render_args("quickstart", opts, work / "out-formats"), run_env)  # the warm-up: kernels cached
    for label, extra in (
        *[("all", []), ("[mp4, png]", without_gif)] * pairs,
        ("[gif]", ["output.formats=[gif]"]),
        ("[gif] unbudgeted", ["output.formats=[gif]", "output.gif_max_bytes=null"]),
        ("[mp4]", ["output.formats=[mp4]"]),
        ("[png]", ["output.formats=[png]"]),
    ):
        out = work / "out-formats"
        wall, stderr = run_cli(render_args("quickstart", opts, out, extra), run_env)
        rows.append(row_of(f"render quickstart {label}", "warm", wall, sidecar(out, "quickstart"), stderr))
        print(json.dumps(rows[-1]), flush=True)
    loops = {
        label: statistics.median(r["frames_s"] for r in rows if r["command"].endswith(label))
        for label in ("all", "[mp4, png]")
    }
    print(
        f"the GIF in quickstart's frame loop: {loops['all']:.3f} s / {loops['[mp4, png]']:.3f} s without it = {loops['all'] / loops['[mp4, png]']:.2f}x",
        flush=True,
    )
    return rows


def ahead(opts, env: dict[str, str], work: Path, pairs: int = 2) -> list[dict]:
    """quickstart with an empty Triton cache, alternately without and with PHYSARUM_COMPILE_AHEAD=1
    (its first step's kernels compiled at once on threads: run/runner.py compile_ahead), `pairs`
    times each: process walls and sidecars, and whether the two give the same bytes."""
    rows, digests = [], {}
    for number in range(2 * pairs):
        switch = str(number % 2)
        cache, out = work / "triton-ahead", work / f"out-ahead-{switch}"
        shutil.rmtree(cache, ignore_errors=True)
        run_env = {**env, "TRITON_CACHE_DIR": str(cache), "PHYSARUM_COMPILE_AHEAD": switch}
        wall, stderr = run_cli(render_args("quickstart", opts, out), run_env)
        rows.append(
            row_of(
                f"render quickstart compile-ahead={switch}", "cold", wall, sidecar(out, "quickstart"), stderr
            )
        )
        digests[switch] = output_digests(out / "quickstart")
        print(json.dumps(rows[-1]), flush=True)
    print(f"compile-ahead: the same bytes as without: {digests['0'] == digests['1']}", flush=True)
    return rows


def importtime(opts, env: dict[str, str], work: Path) -> dict:
    run_env = {**env, "TRITON_CACHE_DIR": str(work / "triton-quickstart")}
    out = work / "out-importtime"
    command = [sys.executable, "-X", "importtime", "-m", "physarum.render.cli"]
    start = time.perf_counter()
    done = subprocess.run(
        [*command, *render_args("quickstart", opts, out), "--quiet"],
        env=run_env,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - start
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "|" not in line:
            continue
        parts = line[len("import time:") :].split("|")
        try:
            own, cumulative = int(parts[0]), int(parts[1])
        except ValueError:
            continue
        name = parts[2].rstrip()
        rows.append(
            {
                "module": name.strip(),
                "depth": (len(name) - len(name.lstrip())) // 2,
                "own_us": own,
                "cum_us": cumulative,
            }
        )
    top = [r for r in rows if r["depth"] == 0]
    top.sort(key=lambda r: -r["cum_us"])
    ours = [r for r in rows if r["module"].startswith("physarum")]
    ours.sort(key=lambda r: -r["own_us"])
    # the tree, in import order, of every module taking over 15 ms with what it imported
    big = [f"{'  ' * r['depth']}{r['module']} {r['cum_us'] / 1e6:.3f}" for r in rows if r["cum_us"] > 15000]
    return {
        "wall_s": round(wall, 3),
        "imports_s": round(sum(r["cum_us"] for r in top) / 1e6, 3),
        "tree_over_15ms": big[::-1],
        "top": top[:25],
        "ours_by_own_time": ours[:25],
    }


def hashes(opts, env: dict[str, str], work: Path) -> dict:
    run_env = {**env, "TRITON_CACHE_DIR": str(work / "triton-quickstart")}
    out = work / "out-hashes"
    run_cli([*render_args("quickstart", opts, out), "--reduce", "4", "--quiet"], run_env)
    return output_digests(out / "quickstart")


def output_digests(folder: Path) -> dict[str, str]:
    """The sha256 of each output file (GIF, MP4, PNG, WebP) in a render's folder, by name."""
    outputs = [p for p in sorted(folder.iterdir()) if p.suffix in (".gif", ".mp4", ".png", ".webp")]
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in outputs}


# ---------------------------------------------------------------------------------------------
# table: the curated presets' process walls and stage shares, one command

TABLE_PRESETS = "quickstart,labyrinth,embers,nebula,cosmos,panorama"
# a 2-core CPU renders cosmos (512^3, 30.7M agents) and panorama (3840x2160, 5M agents) in hours:
# each is reduced (render --reduce K: the same picture on a canvas K times smaller a side, the
# same steps), and labyrinth and embers (1024^2, 2M and 0.8M agents, 1500 steps) by 2
TABLE_PRESETS_CPU = "quickstart,labyrinth:2,embers:2,nebula,cosmos:16,panorama:8"


def table_entries(spec: str) -> list[tuple[str, int | None]]:
    """--table-presets PRESET[:K],...: each preset and the --reduce K it renders at (None: full
    size). SystemExit for a K that is not a whole number of at least 2."""
    entries = []
    for entry in filter(None, (part.strip() for part in spec.split(","))):
        name, _, factor = entry.partition(":")
        if factor and (not factor.isdigit() or int(factor) < 2):
            sys.exit(f"--table-presets {entry}: K in PRESET:K is a --reduce factor, a whole number >= 2")
        entries.append((name, int(factor) if factor else None))
    return entries


def stage_shares(timings: dict) -> dict[str, float]:
    """Each stage's share of the stages' seconds (stage_<name>_s in a sidecar's timings), largest
    first; {} where the sidecar has no stages."""
    stages = {k[len("stage_") : -len("_s")]: v for k, v in timings.items() if k.startswith("stage_")}
    total = sum(stages.values())
    if total <= 0:
        return {}
    return {name: round(v / total, 3) for name, v in sorted(stages.items(), key=lambda kv: -kv[1])}


def table(opts, env: dict[str, str], work: Path) -> list[dict]:
    """One row per render: each entry of --table-presets cold (an empty TRITON_CACHE_DIR) and warm."""
    rows = []
    for preset, factor in table_entries(opts.table_presets):
        cache = work / f"triton-table-{preset}"
        shutil.rmtree(cache, ignore_errors=True)
        run_env = {**env, "TRITON_CACHE_DIR": str(cache)}
        out = work / f"out-table-{preset}"
        extra = ["--reduce", str(factor)] if factor else []
        plain = argparse.Namespace(**{**vars(opts), "set": []})  # the curated preset as it is
        for run in ("cold", "warm"):
            wall, _ = run_cli([*render_args(preset, plain, out), *extra, "--quiet"], run_env)
            record = sidecar(out, preset)
            t = record["timings"]
            row = {
                "preset": preset,
                "reduce": factor,
                "cache": run,
                "wall_s": round(wall, 2),
                "render_s": round(t["total_s"], 2),
                "startup_and_exit_s": round(wall - t["total_s"], 2),
                "frames": record.get("frames"),
                **{k: round(v, 3) for k, v in t.items()},
                "shares": stage_shares(t),
                "bound": record.get("bound"),
                "device": record.get("device"),
                "backend": record.get("backend"),
                "load_1min": round(os.getloadavg()[0], 2),  # a shared machine's other work, at the end
            }
            rows.append(row)
            print(json.dumps(row), flush=True)
    return rows


def table_markdown(rows: list[dict], machine: str) -> str:
    """The rows as the README's table: a line per preset, the cold and warm walls side by side."""
    lines = [
        f"Process wall of `physarum render PRESET` on {machine}; the stage shares are the warm "
        "render's (the sidecar's stage timings, scripts/cases/e2e.py part table); load: the "
        "machine's 1-minute load average as each render ended (cold / warm).",
        "",
        "| preset | size | cold, s | warm, s | start-up and exit (warm), s | bound | stage shares (warm) | load |",
        "|---|---|---:|---:|---:|---|---|---|",
    ]
    by_preset: dict[str, dict[str, dict]] = {}
    for row in rows:
        by_preset.setdefault(row["preset"], {})[row["cache"]] = row
    for preset, runs in by_preset.items():
        warm, cold = runs.get("warm", {}), runs.get("cold", {})
        size = "full" if not warm.get("reduce") else f"--reduce {warm['reduce']}"
        shares = ", ".join(f"{name} {share:.0%}" for name, share in warm.get("shares", {}).items())
        lines.append(
            f"| {preset} | {size} | {cold.get('wall_s', '')} | {warm.get('wall_s', '')} | "
            f"{warm.get('startup_and_exit_s', '')} | {warm.get('bound') or ''} | {shares} | "
            f"{cold.get('load_1min', '')} / {warm.get('load_1min', '')} |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# inner: one render in this process, timed by stage and sampled by thread


class Stages:
    """Seconds spent in wrapped functions, by (thread name, stage), and calls."""

    def __init__(self):
        self.seconds: dict[tuple[str, str], float] = collections.defaultdict(float)
        self.calls: dict[tuple[str, str], int] = collections.defaultdict(int)
        self.lock = threading.Lock()

    def wrap(self, owner, name: str, stage: str) -> None:
        original = getattr(owner, name)

        @functools.wraps(original)
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                key = (threading.current_thread().name, stage)
                with self.lock:
                    self.seconds[key] += time.perf_counter() - start
                    self.calls[key] += 1

        setattr(owner, name, timed)

    def rows(self) -> list[dict]:
        return [
            {"thread": t, "stage": s, "seconds": round(v, 4), "calls": self.calls[(t, s)]}
            for (t, s), v in sorted(self.seconds.items(), key=lambda kv: -kv[1])
        ]


class Sampler:
    """Every `interval` seconds, each thread's innermost frame in this project's code (and the
    innermost frame at all): counts by thread."""

    def __init__(self, interval: float = 0.001):
        self.interval = interval
        self.counts: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
        self.samples: collections.Counter = collections.Counter()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="sampler", daemon=True)

    def start(self) -> Sampler:
        self.thread.start()
        return self

    def _run(self) -> None:
        me = threading.get_ident()
        while not self.stop.wait(self.interval):
            names = {t.ident: t.name for t in threading.enumerate()}
            for ident, frame in sys._current_frames().items():
                if ident == me:
                    continue
                name = names.get(ident, str(ident))
                inner = f"{Path(frame.f_code.co_filename).name}:{frame.f_code.co_name}"
                ours = None
                walk = frame
                while walk is not None:
                    file = walk.f_code.co_filename
                    if "/render/" in file or "/kernels/" in file:
                        ours = f"{'/'.join(Path(file).parts[-2:])}:{walk.f_code.co_name}:{walk.f_lineno}"
                        break
                    walk = walk.f_back
                self.counts[name][f"{ours} <- {inner}"] += 1
                self.samples[name] += 1

    def report(self, top: int = 14) -> dict:
        self.stop.set()
        self.thread.join()
        return {
            name: {
                "samples": self.samples[name],
                "top": [
                    {"where": where, "share": round(count / self.samples[name], 3)}
                    for where, count in counter.most_common(top)
                ],
            }
            for name, counter in self.counts.items()
        }


def inner(preset_name: str, opts) -> dict:
    """One render in this process, its stages timed and its threads sampled."""
    from physarum.render.formats import gif, gif_budget, gif_pool
    from physarum.render.formats import mp4 as mp4_format
    from physarum.render.out import frames as frames_module
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.run import runner
    from physarum.render.sim import course as course_module

    stages = Stages()
    stages.wrap(course_module.Course, "advance_to", "simulation (advance_to)")
    stages.wrap(frames_module.FramePipeline, "submit", "colour + copy (submit)")
    stages.wrap(frames_module.FramePipeline, "hand_over", "hand over (sync + sinks)")
    stages.wrap(frames_module.EncoderWorker, "write", "queue put to an encoder")
    stages.wrap(frames_module.EncoderWorker, "complete", "encoder complete")
    stages.wrap(gif.GifWriter, "write", "gif write")
    stages.wrap(gif.GifWriter, "complete", "gif complete")
    stages.wrap(gif.GifWriter, "__init__", "gif open (workers started)")
    stages.wrap(gif_budget.FrameStore, "append", "gif store append")
    stages.wrap(gif_budget.Budgeter, "estimate", "gif budget estimate")
    stages.wrap(gif_budget.Budgeter, "_write_file", "gif budget write file")
    stages.wrap(gif_pool.CompressPool, "__init__", "gif pool start")
    stages.wrap(mp4_format.Mp4Writer, "write", "mp4 write")
    stages.wrap(runner, "make_batch_simulation", "make simulation")
    if opts.child_encoders:  # the writers in a child process, as a batch's are (out/encoder_process.py)
        from physarum.render.out import job as job_module

        opened = job_module.open_workers
        job_module.open_workers = lambda specs, job, own, cores: opened(specs, job, True, cores)
    preset = load_preset(resolve_preset_path(preset_name), opts.set)
    with tempfile.TemporaryDirectory() as out:
        options = runner.RenderOptions(
            backend=opts.backend, device=opts.device, out_dir=Path(out), quiet=True
        )
        runner.render(preset, options)  # first: compiles, starts what a second render reuses
        sampler = Sampler().start()
        began = time.perf_counter()
        stages.seconds.clear()
        stages.calls.clear()
        result = runner.render(preset, options)
        wall = time.perf_counter() - began
        report = sampler.report()
    return {
        "preset": preset_name,
        "set": opts.set,
        "child_encoders": opts.child_encoders,
        "wall_s": round(wall, 3),
        "timings": result.timings,
        "stages": stages.rows(),
        "threads": report,
    }


POOL_PIXELS = (4_000_000, 2_000_000, 1_000_000)  # the pool part's PIXELS_PER_WORKER: 6, 11, 16 workers


def pool(preset_name: str, opts, pairs: int = 2) -> dict:
    """The GIF's workers against its share of the frame loop, in this process (warm): for each
    of POOL_PIXELS as gif_pool.PIXELS_PER_WORKER, all formats and all but the GIF alternated
    `pairs` times (median frames_s and finish_s of each); then a pool of each size alone, its
    start (every worker answered once) and 40 frames of its GIF's size compressed and kept."""
    import numpy as np

    from physarum.render.formats import gif_pool
    from physarum.render.formats.gif_file import Digits, Reduction
    from physarum.render.out.specs import gif_size
    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.run import runner

    preset = load_preset(resolve_preset_path(preset_name), opts.set)
    width, height = gif_size(preset)  # the GIF's frames, as gif.make_spec sizes its pool
    others = ", ".join(f for f in preset.output.formats if f != "gif")
    without = load_preset(resolve_preset_path(preset_name), [*opts.set, f"output.formats=[{others}]"])
    formats = {"all": preset, "without the GIF": without}

    def timed(out: Path, shown) -> tuple[float, float]:
        options = runner.RenderOptions(backend=opts.backend, device=opts.device, out_dir=out, quiet=True)
        t = runner.render(shown, options).timings
        return t["frames_s"], t["finish_s"]

    rows = []
    default = gif_pool.PIXELS_PER_WORKER
    with tempfile.TemporaryDirectory() as folder:
        timed(Path(folder), preset)  # compiles, and starts what a second render reuses
        try:
            for per in POOL_PIXELS:
                gif_pool.PIXELS_PER_WORKER = per
                runs = {
                    label: [timed(Path(folder), kept) for _ in range(pairs)]
                    for label, kept in formats.items()
                }
                row = {"workers": gif_pool.pool_size(1, width * height * preset.frames)}
                for label, found in runs.items():
                    row[label] = [round(statistics.median(x[i] for x in found), 3) for i in (0, 1)]
                row["share"] = round(row["all"][0] / row["without the GIF"][0], 3)
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        finally:
            gif_pool.PIXELS_PER_WORKER = default
    frame = np.random.default_rng(1).integers(0, 256, (height, width), np.uint8)
    task = gif_pool.FrameTask(frame, bytes(768), Reduction(), Digits(), False, 3, keep=True)
    alone = []
    for size in sorted({row["workers"] for row in rows}):
        began = time.perf_counter()
        made = gif_pool.CompressPool(size).ready()
        ready = time.perf_counter() - began
        began = time.perf_counter()
        list(made.map([task] * 40))
        busy = time.perf_counter() - began
        made.close()
        alone.append({"workers": size, "ready_s": round(ready, 3), "forty_frames_s": round(busy, 3)})
    return {"preset": preset_name, "set": opts.set, "renders": rows, "pool alone": alone}


def device_profile(preset_name: str, opts, rows: int = 15) -> dict:
    """Where a warm render's time goes on the device and which host calls wait for it: the preset
    rendered once in this process (kernels compiled, files cached), then again under
    torch.profiler (CPU and CUDA activity); the frame loop's seconds beside the device's busy
    seconds (every kernel's and copy's self time summed), the operations by device time and by
    host time (a host call that waits for the device, a copy to the host or a synchronisation,
    shows as host time)."""
    from torch.profiler import ProfilerActivity, profile

    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path
    from physarum.render.run import runner

    preset = load_preset(resolve_preset_path(preset_name), opts.set)
    with tempfile.TemporaryDirectory() as out:
        options = runner.RenderOptions(
            backend=opts.backend, device=opts.device, out_dir=Path(out), quiet=True
        )
        runner.render(preset, options)
        activities = [ProfilerActivity.CPU] + (
            [ProfilerActivity.CUDA] if opts.device.startswith("cuda") else []
        )
        with profile(activities=activities) as traced:
            result = runner.render(preset, options)
    averages = traced.key_averages()

    def device_s(event) -> float:
        return getattr(event, "self_device_time_total", getattr(event, "self_cuda_time_total", 0)) / 1e6

    def top(key) -> list[dict]:
        ranked = sorted(averages, key=key, reverse=True)[:rows]
        return [
            {
                "name": e.key[:90],
                "calls": e.count,
                "device_s": round(device_s(e), 4),
                "host_s": round(e.self_cpu_time_total / 1e6, 4),
            }
            for e in ranked
        ]

    return {
        "preset": preset_name,
        "timings": result.timings,
        "device_busy_s": round(sum(device_s(e) for e in averages), 3),
        "by_device": top(device_s),
        "by_host": top(lambda e: e.self_cpu_time_total),
    }


def startup_timeline(preset_name: str, opts) -> dict:
    """A render's start, step by step, in this fresh process: the imports, CUDA, the preset, the
    simulation made (spawn, tables) and its first frame's steps (the kernels compiled or loaded
    from the Triton cache), the colouring's first frame. Seconds from this process's start."""
    marks = {"python_start": 0.0}
    began = time.perf_counter() - (time.time() - PROCESS_START)

    def mark(name: str) -> None:
        marks[name] = round(time.perf_counter() - began, 3)

    from physarum.render.preset import load_preset
    from physarum.render.preset.catalog import resolve_preset_path

    mark("import preset stage")
    preset = load_preset(resolve_preset_path(preset_name), opts.set)
    mark("preset loaded")
    import torch

    mark("import torch")
    device = torch.device(opts.device)
    if device.type == "cuda":
        torch.zeros(1, device=device)
        torch.cuda.synchronize()
    mark("device initialised")
    from physarum.render.look.colour import make_colourist
    from physarum.render.run import runner
    from physarum.render.sim.simulation import advance, make_batch_simulation, simulation_maps

    mark("import runner")
    simulation = make_batch_simulation([preset], opts.backend, device)
    if device.type == "cuda":
        torch.cuda.synchronize()
    mark("simulation made")
    advance(simulation, preset.run.steps_per_frame)
    if device.type == "cuda":
        torch.cuda.synchronize()
    mark("first frame's steps (kernels)")
    advance(simulation, preset.run.steps_per_frame)
    if device.type == "cuda":
        torch.cuda.synchronize()
    mark("second frame's steps")
    colourist = make_colourist(preset)
    colourist.colour(simulation_maps(preset, simulation.trail, 0), 0)
    if device.type == "cuda":
        torch.cuda.synchronize()
    mark("first frame coloured")
    del runner
    return marks


def options(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="run")
    parser.add_argument("--out", default=".")
    parser.add_argument("--presets", default="quickstart,labyrinth,cosmos")
    parser.add_argument("--parts", default="walls,formats,ends,startup,importtime,inner,hashes")
    parser.add_argument(
        "--inner-presets",
        default="quickstart;quickstart:output.formats=[gif];quickstart:child",
        help="PRESET[:KEY=VALUE...][:child] entries, separated by ';' (child: encoders in a child process)",
    )
    parser.add_argument("--startup-presets", default="quickstart")
    parser.add_argument("--profile-presets", default="cosmos")
    parser.add_argument("--table-presets", default=TABLE_PRESETS, help="PRESET[:K],... (K: --reduce K)")
    parser.add_argument("--backend", default="triton")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--set", action="append", default=[], help="KEY=VALUE for every render")
    parser.add_argument("--inner", help=argparse.SUPPRESS)  # one inner render, as a child
    parser.add_argument("--child-encoders", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--startup", help=argparse.SUPPRESS)  # one start-up timeline, as a child
    parser.add_argument("--profile", help=argparse.SUPPRESS)  # one device profile, as a child
    parser.add_argument("--pool", help=argparse.SUPPRESS)  # the GIF pool part, as a child
    return parser.parse_args(argv)


def child_args(flag: str, preset: str, opts, sets: list[str], *extra: str) -> list[str]:
    """The command of one child run of this file (`--startup`, `--inner` or `--profile` PRESET)
    with the run's backend, device and settings."""
    args = [
        sys.executable,
        __file__,
        flag,
        preset,
        *extra,
        "--backend",
        opts.backend,
        "--device",
        opts.device,
    ]
    return [*args, *[p for s in sets for p in ("--set", s)]]


def child_record(args: list[str], env: dict[str, str], cache: Path, tag: str) -> list[dict]:
    """The JSON record a child run of this file prints on its line starting with `tag`, as a list
    of one, its Triton cache `cache`; an empty list (its stderr's tail printed) where it printed
    none."""
    done = subprocess.run(args, env={**env, "TRITON_CACHE_DIR": str(cache)}, capture_output=True, text=True)
    line = [x for x in done.stdout.splitlines() if x.startswith(tag)]
    if not line:
        print(done.stderr[-3000:], file=sys.stderr)
        return []
    return [json.loads(line[0][len(tag) :])]


def run_parts(opts: argparse.Namespace, out: Path | None) -> dict[str, object]:
    """Each part's data, by part; written to OUT/LABEL-PART.json when out is given."""
    env = {**os.environ, "PHYSARUM_SERVE": "0"}  # a server the user runs serves no part but served
    found = {}
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as folder:
        work = Path(folder)
        for part in opts.parts.split(","):
            began = time.perf_counter()
            if part == "walls":
                data = walls(opts, env, work)
            elif part == "formats":
                data = formats(opts, env, work)
            elif part == "ahead":
                data = ahead(opts, env, work)
            elif part == "served":
                data = served(opts, env, work)
            elif part == "ends":
                data = ends(opts, env, work)
            elif part == "importtime":
                data = importtime(opts, env, work)
            elif part == "startup":
                data = []
                for preset in opts.startup_presets.split(","):
                    cache = work / f"triton-startup-{preset}"
                    shutil.rmtree(cache, ignore_errors=True)
                    for run in ("cold", "warm"):
                        args = child_args("--startup", preset, opts, opts.set)
                        records = child_record(args, env, cache, "STARTUP ")
                        data += [{"preset": preset, "cache": run, **record} for record in records]
            elif part == "hashes":
                data = hashes(opts, env, work)
            elif part == "table":
                data = table(opts, env, work)
                machine = f"{os.cpu_count()}-core CPU" if opts.device == "cpu" else opts.device
                print(table_markdown(data, f"{machine} ({opts.backend} backend)"), flush=True)
            elif part == "pool":
                args = child_args("--pool", "quickstart", opts, opts.set)
                data = child_record(args, env, work / "triton-quickstart", "POOL ")
            elif part == "profile":
                data = []
                for preset in opts.profile_presets.split(","):
                    args = child_args("--profile", preset, opts, opts.set)
                    data += child_record(args, env, work / f"triton-{preset}", "PROFILE ")
            elif part == "inner":
                data = []
                for entry in opts.inner_presets.split(";"):
                    preset, *extra = entry.split(":")
                    # PRESET:child: the encoders in a child process
                    child = ["--child-encoders"] if "child" in extra else []
                    sets = [*opts.set, *(e for e in extra if e != "child")]
                    args = child_args("--inner", preset, opts, sets, *child)
                    data += child_record(args, env, work / f"triton-{preset}", "INNER ")
            else:
                sys.exit(f"unknown part {part}")
            found[part] = data
            if out is not None:
                (out / f"{opts.label}-{part}.json").write_text(json.dumps(data, indent=1) + "\n")
            print(f"== {part} ({time.perf_counter() - began:.1f} s)", flush=True)
            print(json.dumps(data, indent=1)[:6000], flush=True)
    return found


def main() -> None:
    opts = options()
    if opts.startup:
        print("STARTUP " + json.dumps(startup_timeline(opts.startup, opts)))
        return
    if opts.inner:
        print("INNER " + json.dumps(inner(opts.inner, opts)))
        return
    if opts.profile:
        print("PROFILE " + json.dumps(device_profile(opts.profile, opts)))
        return
    if opts.pool:
        print("POOL " + json.dumps(pool(opts.pool, opts)))
        return
    run_parts(opts, Path(opts.out))


if "physarum.render.tools.harness" in sys.modules:  # loaded as a case of the harness
    from physarum.render.tools.harness import Skip, case

    @case(
        "e2e",
        label="run",
        json_out="",
        presets="quickstart,labyrinth,cosmos",
        parts="walls,formats,ends,startup,importtime,inner,hashes",
        inner_presets="quickstart;quickstart:output.formats=[gif];quickstart:child",
        startup_presets="quickstart",
        profile_presets="cosmos",
        table_presets=TABLE_PRESETS,
        backend="triton",
        device="cuda",
        set="",
        small={
            "presets": "quickstart",
            "parts": "walls,formats",
            "table_presets": TABLE_PRESETS_CPU,
            "profile_presets": "quickstart",
            "backend": "torch",
            "device": "cpu",
            "set": "run.steps=40",
        },
    )
    def e2e(run) -> None:
        """The time a user waits (issue 34): process walls of whole renders with a cold and a warm
        Triton cache beside their sidecar timings and bound stage; quickstart's formats alone; a
        render's start step by step; -X importtime's tree; in-process stage timers and a stack
        sampler; sha256 of quickstart's reduced outputs; the curated presets' table of walls and
        stage shares (scripts/cases/e2e.py's docstring)."""
        if run.device.startswith("cuda"):
            import torch

            if not torch.cuda.is_available():
                raise Skip("--device cuda: no CUDA GPU here (--small: torch on the CPU)")
        argv = ["--label", run.label, "--presets", run.presets, "--parts", run.parts]
        argv += ["--inner-presets", run.inner_presets, "--startup-presets", run.startup_presets]
        argv += ["--table-presets", run.table_presets, "--profile-presets", run.profile_presets]
        argv += ["--backend", run.backend, "--device", run.device]
        argv += [p for s in run.set.split(";") if s for p in ("--set", s)]
        found = run_parts(options(argv), Path(run.json_out) if run.json_out else None)
        for part, data in found.items():
            if part in ("walls", "formats", "ahead", "ends", "served"):
                for row in data:
                    row = dict(row)
                    run.record(f"{row.pop('command')}, {row.pop('cache')} cache", row.pop("wall_s"), **row)
            elif part == "table":
                for row in data:
                    row = dict(row)
                    size = f" --reduce {row['reduce']}" if row["reduce"] else ""
                    variant = f"table: render {row.pop('preset')}{size}, {row.pop('cache')} cache"
                    run.record(variant, row.pop("wall_s"), **row)
            else:
                run.record(part, data=data)


if __name__ == "__main__":
    main()
