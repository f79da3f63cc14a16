"""GPU evidence in one device call: renders on the GPU compared byte for byte with the CPU's,
GPU tests, timings and the research commands at full size (scripts/README.md says which
evidence each part made; benchmarks/README.md where it is kept).

    source scripts/gpu_env.sh > /dev/null; python3 scripts/gpu_evidence.py SUBCOMMAND [--out DIR] ...

Subcommands, each a list of parts (--parts chooses some; the default in brackets):

- check: GPU tests, every plain curated preset rendered by Triton on the GPU and by torch on the
  CPU at the same time and compared, quickstart's MP4 settings and WebP compared
  [tests,renders,formats]. `--presets worlds --formats png --stills` is the worlds' check.
- art: the animation presets at full size, timed on the GPU first (after a warm-up), then
  rendered on the CPU and compared [renders]; `tests` adds the keyframe, GPU and golden tests.
- bench: GPU tests, `physarum profile`, `physarum bench` [tests,profile,configs,xl]; also
  pipeline (the 4K pipeline), keyframes (cost of schedules), sweeps (the harness's case sweep),
  sweep-profile (the case sweep-profile and bench64 with fewer formats).
- outputs: time to each file and sizes (the case outputs), the MP4 threads, GIF encoding (the
  case gif) [times,mp4-threads,gif].

The measurements are cases of the benchmark harness (render/tools/harness.py, scripts/cases/):
each appends its rows to OUT/table-MACHINE.csv.
- research: checkpoint resumes compared with the uninterrupted render, `physarum graph` of the
  curated presets beside them [checkpoint,graphs]; also sensitivity and resolution.

Every comparison is one line of a verdict log: identical, DIFFERENT or NOT-RENDERED-ON-CPU, the
file, its size and sha256 prefix. The script starts each child in a process group of its own and
ends only those (a CPU render still running when --cpu-wait-s is spent is reported, not waited
for). --gpu and --cpu name the two sides as BACKEND:DEVICE (default triton:cuda and torch:cpu;
PHYSARUM_EVIDENCE_GPU and PHYSARUM_EVIDENCE_CPU set them too): with --gpu torch:cpu and
--set canvas.width=64 ... the control flow runs on a machine without a GPU.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CLI = [sys.executable, "-m", "physarum.render.cli"]
COMPARED = (".gif", ".mp4", ".webp", ".png")
GROUPS = {
    "worlds": ["maze", "lettering", "feast", "rivals", "tribes", "anywhere"],
    "animation": ["journey", "tide", "compass", "crowd"],
    # 3D presets: their CPU side is slow at full frame size; compare them with smaller frames,
    # e.g. --presets 3d --set camera.width=128 --set camera.height=128 (docs/3d.md)
    "3d": ["nebula", "tangle", "cocoon", "coral"],
}
# panorama (5M agents at 3840x2160) takes over 10 minutes on the CPU side: left out by default,
# checked across machines instead
SLOW = ["panorama"]
MP4_SETTINGS = ("browser", "browser-sharp", "master")
SENSITIVITY_PRESETS = "aurora bloom cave cells filaments labyrinth mosaic rings spots starburst veins"
GRAPH_PRESETS = "quickstart filaments cells veins anywhere spots labyrinth mosaic panorama"
RESOLUTION_VARIANTS = {  # name: --set values of presets/anywhere.yaml (docs/presets.md)
    "as-written": [],
    "slow": ["model.decay=0.02", "model.sensor_distance=0.03", "model.step_size=0.002"],
    "slow-b": ["model.decay=0.03", "model.sensor_distance=0.025", "model.step_size=0.002"],
    "mid": ["model.decay=0.03", "model.sensor_distance=0.02", "model.step_size=0.0015"],
    "slow-d": ["model.decay=0.015", "model.sensor_distance=0.04", "model.step_size=0.003"],
    "slow-e": [
        "model.decay=0.015",
        "model.sensor_distance=0.04",
        "model.step_size=0.003",
        "model.sensor_angle=45",
    ],
}


def say(line: str, *logs: Path) -> None:
    """Print a line and append it to each log."""
    print(line, flush=True)
    for log in logs:
        with log.open("a") as handle:
            handle.write(line + "\n")


class Children:
    """The processes this script started, each in a process group of its own: ending one ends
    its children too, and nothing else on the machine."""

    def __init__(self) -> None:
        self.running: list[subprocess.Popen] = []

    def start(self, argv: list[str], log: Path, threads: int | None = None) -> subprocess.Popen:
        env = dict(os.environ)
        if threads:
            env["OMP_NUM_THREADS"] = str(threads)
        with log.open("a") as handle:
            proc = subprocess.Popen(
                argv, stdout=handle, stderr=subprocess.STDOUT, cwd=ROOT, env=env, start_new_session=True
            )
        self.running.append(proc)
        return proc

    def end(self, proc: subprocess.Popen) -> None:
        if proc.poll() is None:
            for sig, grace in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(proc.pid, sig)
                except ProcessLookupError:
                    break
                try:
                    proc.wait(grace)
                    break
                except subprocess.TimeoutExpired:
                    continue
        if proc in self.running:
            self.running.remove(proc)

    def end_all(self) -> None:
        for proc in list(self.running):
            self.end(proc)

    def run(
        self, argv: list[str], log: Path, timeout_s: float, threads: int | None = None
    ) -> tuple[int, float]:
        """Run one command to its end or timeout_s; its exit status (124: timed out) and seconds."""
        t0 = time.monotonic()
        proc = self.start(argv, log, threads)
        try:
            rc = proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            rc = 124
            self.end(proc)
        self.end(proc)
        return rc, time.monotonic() - t0


CHILDREN = Children()


class Pool:
    """Commands run JOBS at a time in the background (a thread starts each as a slot frees);
    wait() gives them a deadline, after which the ones still running are ended."""

    def __init__(self, jobs: int, log: Path, threads: int | None) -> None:
        self.jobs, self.log, self.threads = jobs, log, threads
        self.pending: list[tuple[str, list[str]]] = []
        self.seconds: dict[str, float] = {}
        self.failed: list[str] = []
        self.stop = threading.Event()
        self.thread: threading.Thread | None = None

    def add(self, name: str, argv: list[str]) -> None:
        self.pending.append((name, argv))

    def start(self) -> None:
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self) -> None:
        active: dict[str, tuple[subprocess.Popen, float]] = {}
        while (self.pending or active) and not self.stop.is_set():
            while self.pending and len(active) < self.jobs:
                name, argv = self.pending.pop(0)
                active[name] = (CHILDREN.start(argv, self.log, self.threads), time.monotonic())
            for name, (proc, t0) in list(active.items()):
                if proc.poll() is not None:
                    del active[name]
                    CHILDREN.end(proc)
                    if proc.returncode == 0:
                        self.seconds[name] = time.monotonic() - t0
                    else:
                        self.failed.append(name)
            time.sleep(0.2)
        for proc, _ in active.values():
            CHILDREN.end(proc)

    def wait(self, timeout_s: float) -> bool:
        """Wait for every command at most timeout_s; True when all ended by themselves."""
        if self.thread is None:
            self.start()
        self.thread.join(timeout_s)
        finished = not self.thread.is_alive()
        self.stop.set()
        self.thread.join()
        return finished


class Side:
    """One side of a comparison: BACKEND:DEVICE."""

    def __init__(self, spec: str) -> None:
        self.backend, _, self.device = spec.partition(":")
        if not self.backend or not self.device:
            raise argparse.ArgumentTypeError(f"expected BACKEND:DEVICE, got {spec!r}")

    def __str__(self) -> str:
        return f"{self.backend} on {self.device}"


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verdict(path: Path, other_folder: Path, full: bool = False) -> str:
    """One line of a byte-identical check of a file against its twin in other_folder."""
    other = other_folder / path.name
    if not path.is_file():
        return f"NOT-RENDERED {path.name}"
    if not other.is_file():
        result = "NOT-RENDERED-ON-CPU"
    elif path.stat().st_size == other.stat().st_size and sha256(path) == sha256(other):
        result = "identical"
    else:
        result = "DIFFERENT"
    digest = sha256(path)
    return f"{result} {path.name} {path.stat().st_size} {digest if full else digest[:16]}"


def preset_name(preset: str) -> str:
    return Path(preset).stem


def render_argv(preset: str, side: Side, out: Path, sets: list[str], extra: list[str] = ()) -> list[str]:
    argv = [
        *CLI,
        "render",
        preset,
        "--backend",
        side.backend,
        "--device",
        side.device,
        "--out",
        str(out),
        "--quiet",
    ]
    for value in sets:
        argv += ["--set", value]
    return argv + list(extra)


def render_and_compare(
    args: argparse.Namespace,
    presets: list[str],
    label: str,
    sets: list[str],
    together: bool,
    full_sha: bool = False,
    timed: bool = False,
) -> list[str]:
    """Render each preset with args.gpu (one after another, each timed) and with args.cpu
    (args.cpu_jobs at a time in the background, beside the GPU's renders when together, after
    them when not), then compare every GPU file with its CPU twin by sha256. Writes
    OUT/LABEL-identical.log (the verdicts), LABEL-times.log and the renders' logs; returns the
    verdict lines."""
    out: Path = args.out
    work = args.work / label
    shutil.rmtree(work, ignore_errors=True)
    gpu_dir, cpu_dir = work / "gpu", work / "cpu"
    sets = [*args.set, *sets]
    (out / label).parent.mkdir(parents=True, exist_ok=True)
    pool = Pool(args.cpu_jobs, out / f"{label}-cpu-renders.log", args.cpu_threads)
    for preset in presets:
        pool.add(preset_name(preset), render_argv(preset, args.cpu, cpu_dir, sets))
    if together:
        pool.start()
    times = out / f"{label}-times.log"
    say(f"== {label}: {args.gpu} ({args.device_name}), {len(presets)} presets", times)
    for preset in presets:
        rc, seconds = CHILDREN.run(
            render_argv(preset, args.gpu, gpu_dir, sets), out / f"{label}-gpu-renders.log", args.render_s
        )
        line = f"{preset_name(preset)}: {seconds:.1f} s wall, exit {rc}"
        if timed:
            line += f", total_s {sidecar_total(gpu_dir / preset_name(preset))}"
        say(line, times)
    if not together:
        pool.start()
    finished = pool.wait(args.cpu_wait_s)
    for name, seconds in sorted(pool.seconds.items()):
        say(f"{name}: {seconds:.0f} s on {args.cpu}", out / f"{label}-cpu-times.log")
    if not finished:
        say(f"   CPU renders still running after {args.cpu_wait_s} s were ended", times)
    verdicts = out / f"{label}-identical.log"
    say(f"== byte-identical check: {args.gpu} ({args.device_name}) vs {args.cpu}", verdicts)
    lines = []
    for preset in presets:
        name = preset_name(preset)
        files = sorted(p for p in (gpu_dir / name).glob("*") if p.suffix in COMPARED)
        if not files:
            say(f"NOT-RENDERED-ON-GPU {name}", verdicts)
        for path in files:
            lines.append(verdict(path, cpu_dir / name, full_sha))
            say(lines[-1], verdicts)
    if args.stills:
        stills = out / "stills"
        stills.mkdir(exist_ok=True)
        for path in [*gpu_dir.glob("*/*.png"), *gpu_dir.glob("*/*.json")]:
            shutil.copy2(path, stills / path.name)
    if timed:
        say("== file sizes (GPU), bytes", times)
        for path in sorted(gpu_dir.glob("*/*")):
            if path.is_file():
                say(f"{path.name} {path.stat().st_size}", times)
    return lines


def sidecar_total(folder: Path) -> str:
    for path in sorted(folder.glob("*.json")):
        try:
            return str(json.loads(path.read_text())["timings"]["total_s"])
        except (ValueError, KeyError, TypeError):
            continue
    return "?"


def summary(lines: list[str], log: Path) -> None:
    counts = {word: sum(line.startswith(word + " ") for line in lines) for word in ("identical", "DIFFERENT")}
    say(
        f"== summary: {counts['identical']} identical, {counts['DIFFERENT']} DIFFERENT, {len(lines)} files",
        log,
    )


def expand_presets(names: list[str] | None, default: list[str]) -> list[str]:
    """Preset names, paths or groups (plain, worlds, animation, 3d, all) as paths or catalog names."""
    every = sorted(p.stem for p in (ROOT / "presets").glob("*.yaml"))
    chosen: list[str] = []
    for name in names or default:
        if name == "all":
            chosen += every
        elif name == "plain":
            chosen += [p for p in every if p not in SLOW and p not in GROUPS["worlds"] + GROUPS["3d"]]
        elif name in GROUPS:
            chosen += GROUPS[name]
        else:
            chosen.append(name)
    return [f"presets/{p}.yaml" if (ROOT / "presets" / f"{p}.yaml").is_file() else p for p in chosen]


def tests(args: argparse.Namespace, files: list[str]) -> None:
    log = args.out / "gpu-tests.log"
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *files]
    rc, seconds = CHILDREN.run(argv, args.work / "pytest.log", args.test_s)
    tail = (args.work / "pytest.log").read_text(errors="replace").splitlines()[-15:]
    for line in tail:
        say(line, log)
    say(f"tests: exit {rc}, {seconds:.0f} s", log)


def harness_case(out: Path, name: str, *options: str) -> list[str]:
    """The command of one case of the benchmark harness, its rows appended to OUT's table."""
    return [sys.executable, "-m", "physarum.render.tools.harness", "--out", str(out), "case", name, *options]


def step(args: argparse.Namespace, log_name: str, argv: list[str], timeout_s: float | None = None) -> int:
    """One command of a part, its output in OUT/LOG_NAME, its seconds and exit status there too."""
    log = args.out / log_name
    say(f"== {' '.join(argv[1:] if argv[0] == sys.executable else argv)}", log)
    rc, seconds = CHILDREN.run(argv, log, timeout_s or args.step_s)
    say(f"   ({seconds:.0f} s, exit {rc})", log)
    return rc


# ---- check ----------------------------------------------------------------------------------


def cmd_check(args: argparse.Namespace) -> None:
    if "tests" in args.parts:
        tests(args, args.tests or ["tests/test_kernels_gpu.py", "tests/test_golden.py"])
    if "renders" in args.parts:
        presets = expand_presets(args.presets, ["plain"])
        sets = [f"output.formats=[{args.formats}]"] if args.formats else []
        summary(
            render_and_compare(args, presets, "renders", sets, together=True),
            args.out / "renders-identical.log",
        )
    if "formats" in args.parts:
        # quickstart's MP4 in every output.mp4 setting and its WebP: x264 and libwebp on this
        # host's cores against the CPU side (benchmarks/0.3.0/outputs.txt, section formats-cpu-2core.txt, holds the
        # 2-core CPU's sha256, from scripts/cpu_formats.sh)
        lines = []
        for setting in MP4_SETTINGS:
            sets = ["output.formats=[mp4, webp]", f"output.mp4={setting}"]
            for line in render_and_compare(
                args, ["quickstart"], f"formats/{setting}", sets, True, full_sha=True
            ):
                lines.append(line)
                say(f"{setting} {line}", args.out / "formats.log")
        summary(lines, args.out / "formats.log")


# ---- art ------------------------------------------------------------------------------------


def cmd_art(args: argparse.Namespace) -> None:
    if "tests" in args.parts:
        tests(
            args,
            args.tests or ["tests/test_keyframes.py", "tests/test_kernels_gpu.py", "tests/test_golden.py"],
        )
    if "renders" in args.parts:
        # warm-up: compile the kernels (one species, wrapping edges) untimed
        warm = ["run.steps=20", "run.steps_per_frame=10", *args.set]
        CHILDREN.run(
            render_argv("quickstart", args.gpu, args.work / "warm", warm),
            args.work / "warm.log",
            args.render_s,
        )
        presets = expand_presets(args.presets, ["animation"])
        sets = [f"output.formats=[{args.formats}]"] if args.formats else []
        lines = render_and_compare(args, presets, "art", sets, together=False, timed=True)
        summary(lines, args.out / "art-identical.log")


# ---- bench ----------------------------------------------------------------------------------


def cmd_bench(args: argparse.Namespace) -> None:
    out = args.out
    if "tests" in args.parts:
        tests(args, args.tests or ["tests/test_kernels_gpu.py"])
    side = ["--backend", args.gpu.backend, "--device", args.gpu.device]
    if "profile" in args.parts:
        trace = str(out / f"{args.gpu.backend}.trace.json")
        step(
            args,
            "profile.log",
            [*CLI, "profile", "presets/veins.yaml", *side, "--steps", "50", "--trace", trace],
        )
    if "configs" in args.parts:
        step(args, "bench.log", [*CLI, "bench", "--configs", args.configs, "--out", str(out / "bench.json")])
    if "xl" in args.parts:
        argv = [
            *CLI,
            "bench",
            "--configs",
            "XL",
            "--skip",
            "torch.compile",
            "--out",
            str(out / "bench-xl.json"),
        ]
        step(args, "bench.log", argv)
    if "pipeline" in args.parts:
        step(
            args, "pipeline.log", harness_case(out, "pipeline", "--frames", str(args.frames), "--parts", "4k")
        )
    if "keyframes" in args.parts:
        argv = harness_case(
            out, "keyframes", "--preset", "veins", "--steps", "1000", "--device", args.gpu.device
        )
        step(args, "keyframes.log", argv)
    if "sweeps" in args.parts:
        step(
            args,
            "sweeps.log",
            harness_case(out, "sweep", "--alone", "16", "--work", str(args.work / "sweep-bench")),
        )
    if "sweep-profile" in args.parts:
        # where a batched sweep spends its time, then the same sweep with fewer formats
        argv = harness_case(
            out, "sweep-profile", "--devices", args.gpu.device, "--work", str(args.work / "timeline")
        )
        step(args, "sweep-profile.log", argv)
        text = (ROOT / "sweeps" / "bench64.yaml").read_text()
        for formats, tag in (("png", "png"), ("gif, png", "gif")):
            variant = args.work / f"bench64-{tag}.yaml"
            variant.write_text(
                text.replace("formats: [gif, mp4, png]", f"formats: [{formats}]").replace(
                    "name: bench64", f"name: bench64-{tag}"
                )
            )
            argv = [*CLI, "sweep", str(variant), "--devices", args.gpu.device, "--quiet"]
            step(args, "sweep-profile.log", [*argv, "--out", str(args.work / "sweep-profile")])


# ---- outputs --------------------------------------------------------------------------------


def cmd_outputs(args: argparse.Namespace) -> None:
    if "times" in args.parts:
        presets = [p for p in expand_presets(args.presets, ["all"]) if preset_name(p) not in SLOW]
        names = ",".join(map(preset_name, presets))
        step(
            args,
            "times.log",
            harness_case(args.out, "outputs", "--device", args.gpu.device, "--presets", names),
        )
    if "mp4-threads" in args.parts:
        argv = harness_case(
            args.out, "outputs", "--device", args.gpu.device, "--presets", "labyrinth,panorama"
        )
        step(args, "mp4-threads.log", [*argv, "--x264", "4:slice,16:frame"])
    if "gif" in args.parts:
        step(
            args,
            "gif.log",
            harness_case(args.out, "gif", "--preset", "labyrinth", "--renders", "--device", args.gpu.device),
        )


# ---- research -------------------------------------------------------------------------------


def end_step(preset: str, sets: list[str], work: Path) -> int:
    """The run's last step (warmup + steps), as the command line reports it."""
    argv = render_argv(preset, Side("torch:cpu"), work, sets)
    probe = subprocess.run([*argv, "--checkpoint-at", "999999999"], cwd=ROOT, capture_output=True, text=True)
    found = re.search(r"last step (\d+)", probe.stderr + probe.stdout)
    if not found:
        raise SystemExit(f"could not read the last step of {preset}: {probe.stderr.strip()[-300:]}")
    return int(found.group(1))


def resume_argv(start: Path, side: Side, out: Path, extra: list[str]) -> list[str]:
    argv = [*CLI, "render", "--resume", str(start), "--backend", side.backend, "--device", side.device]
    return argv + ["--out", str(out), "--quiet", *extra]


def checkpoint_evidence(args: argparse.Namespace) -> None:
    """Each preset rendered uninterrupted with checkpoints at MID and END; its MID checkpoint
    resumed on every side of --resumes, whose END checkpoint, PNG still and fields must be the
    uninterrupted render's bytes; a branch (model.decay=0.2) must differ."""
    out, log, verdicts = args.out, args.out / "checkpoint.log", args.out / "checkpoint-identical.log"
    work = args.work / "checkpoint"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    kept = out / "checkpoints"
    kept.mkdir(exist_ok=True)
    sets = [*args.set, "output.formats=[png]"]
    lines = []
    for preset in expand_presets(args.presets, ["quickstart", "rivals"]):
        here = work / preset_name(preset)
        end = end_step(preset, args.set, here / "probe")
        mid = end // 2 + 1  # off the frame grid: a checkpoint between two frames
        marks = ["--checkpoint-at", f"{mid},{end}", "--fields-at", str(end)]
        rc, seconds = CHILDREN.run(
            render_argv(preset, args.gpu, here / "whole", sets, marks), work / "runs.log", args.render_s
        )
        say(f"== {preset_name(preset)}: checkpoint at {mid}, end {end}", log)
        say(f"   uninterrupted ({args.gpu}): {seconds:.0f} s, exit {rc}", log)
        found = list((here / "whole").glob(f"*/*-checkpoint-{end}.npz"))
        if not found:
            say(f"   no checkpoint at {end}: see {work / 'runs.log'}", log)
            continue
        whole = found[0].parent
        stem = found[0].name[: -len(f"-checkpoint-{end}.npz")]
        start = whole / f"{stem}-checkpoint-{mid}.npz"
        for path in sorted(whole.glob("*checkpoint*")):
            say(f"   {path.stat().st_size} bytes {path.name}", log)
            if path.stat().st_size < 16_000_000:
                shutil.copy2(path, kept / path.name)
        for spec in args.resumes:
            side = Side(spec)
            folder = here / spec.replace(":", "-")
            argv = resume_argv(start, side, folder, ["--checkpoint-at", str(end), "--fields-at", str(end)])
            rc, seconds = CHILDREN.run(argv, work / "runs.log", args.render_s)
            say(f"   resumed at {mid} on {side}: {seconds:.0f} s, exit {rc}", log)
            for name in (f"{stem}-checkpoint-{end}.npz", f"{stem}.png", f"{stem}-fields-{end}.npz"):
                lines.append(verdict(folder / whole.name / name, whole))
                say(f"   {spec} vs uninterrupted: {lines[-1]}", verdicts)
        branch_flags = ["--set", "model.decay=0.2", "--checkpoint-at", str(end)]
        argv = resume_argv(start, args.gpu, here / "branch", branch_flags)
        CHILDREN.run(argv, work / "runs.log", args.render_s)
        branch = verdict(here / "branch" / whole.name / f"{stem}-checkpoint-{end}.npz", whole)
        say(f"   branch decay=0.2 (must be DIFFERENT): {branch}", verdicts)
    summary(lines, verdicts)


def cmd_research(args: argparse.Namespace) -> None:
    graphs = None
    side = ["--backend", args.gpu.backend, "--device", args.gpu.device]
    sets = [word for value in args.set for word in ("--set", value)]
    if "graphs" in args.parts:
        # host work (skeleton and graph), one core a preset: in the background, beside the rest
        graphs = Pool(args.jobs, args.out / "graphs-run.log", None)
        for preset in (args.graph_presets or GRAPH_PRESETS).split():
            argv = [*CLI, "graph", preset, *side, "--out", str(args.work / "graphs")]
            graphs.add(preset, argv + sets)
        graphs.start()
    if "checkpoint" in args.parts:
        checkpoint_evidence(args)
    if "sensitivity" in args.parts:
        results = args.out / "sensitivity"
        results.mkdir(exist_ok=True)
        runs = [
            ["quickstart", "--steps", "200", "--out", str(results / "quickstart-200")],
            ["quickstart", "--steps", "1500", "--out", str(results)],
            ["quickstart", "--steps", "300", "--out", str(results), "--plane"]
            + ["model.deposit=1:10:16", "model.decay=0.01:0.3:16"],
            ["quickstart", "--steps", "300", "--out", str(results), "--plane"]
            + ["model.turn_angle=0:90:16", "model.decay=0.01:0.3:16"],
        ] + [[p, "--out", str(results)] for p in (args.sensitivity_presets or SENSITIVITY_PRESETS).split()]
        for run in runs:
            step(args, "sensitivity.log", [*CLI, "sensitivity", *run, *side, *sets, "--quiet"])
        # the cost of per-step statistics: quickstart with and without --stats, the same files
        for tag, extra in (("plain", []), ("stats", ["--stats"])):
            argv = render_argv("quickstart", args.gpu, args.work / f"render-{tag}", args.set, extra)
            step(args, "sensitivity.log", argv)
        plain = args.work / "render-plain" / "quickstart"
        for path in sorted((args.work / "render-stats" / "quickstart").glob("*")):
            if path.suffix in COMPARED:
                say(f"with --stats vs without: {verdict(path, plain)}", args.out / "sensitivity.log")
            elif path.suffix in (".csv", ".json"):
                shutil.copy2(path, results / path.name)
    if "resolution" in args.parts:
        results = args.out / "resolution"
        results.mkdir(exist_ok=True)
        for name, values in RESOLUTION_VARIANTS.items():
            argv = harness_case(
                results, "resolution", "--preset", "presets/anywhere.yaml", "--sizes", ",".join(args.sizes)
            )
            argv += [
                "--checkpoints",
                "10",
                "--seeds",
                str(args.seeds),
                "--set",
                ",".join([*args.set, *values]),
            ]
            step(args, "resolution.log", [*argv, "--figure", str(results / f"{name}.png")])
    if graphs is not None:
        finished = graphs.wait(args.step_s)
        say(
            f"graphs: {len(graphs.seconds)} done, failed {graphs.failed}, all ended: {finished}",
            args.out / "graphs.log",
        )
        kept = args.out / "graphs"
        kept.mkdir(exist_ok=True)
        for folder in sorted((args.work / "graphs").glob("*/*-graph")):
            for path in (folder.with_suffix(".csv"), folder.with_suffix(".png")):
                if path.is_file():
                    shutil.copy2(path, kept / path.name)
            last = sorted(folder.glob("*.graphml"))[-1:]
            if last and last[0].stat().st_size < 16_000_000:
                shutil.copy2(last[0], kept / f"{folder.name}-{last[0].name}")


# ---- the command line -----------------------------------------------------------------------


def machine(args: argparse.Namespace) -> None:
    """What the evidence ran on: OUT/machine.txt."""
    log = args.out / "machine.txt"
    args.device_name = args.gpu.device
    if shutil.which("nvidia-smi") and args.gpu.device.startswith("cuda"):
        query = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
        found = subprocess.run(query, capture_output=True, text=True).stdout.strip()
        args.device_name = found.splitlines()[0].split(",")[0] if found else args.gpu.device
        say(found, log)
    versions = "import torch; print('torch', torch.__version__, end=' ')\ntry:\n import triton; print('triton', triton.__version__)\nexcept ImportError: print()"
    say(subprocess.run([sys.executable, "-c", versions], capture_output=True, text=True).stdout.strip(), log)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    say(f"cores {os.cpu_count()}, commit {commit.stdout.strip() or '?'}, {' '.join(sys.argv[1:])}", log)


def parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--out", type=Path, default=None, help="logs and results (default gpu-SUBCOMMAND)")
    common.add_argument(
        "--work", type=Path, default=None, help="renders (default /tmp/gpu-evidence/SUBCOMMAND)"
    )
    common.add_argument("--parts", default=None, help="comma-separated parts (see the module's docstring)")
    common.add_argument(
        "--gpu", type=Side, default=Side(os.environ.get("PHYSARUM_EVIDENCE_GPU", "triton:cuda"))
    )
    common.add_argument(
        "--cpu", type=Side, default=Side(os.environ.get("PHYSARUM_EVIDENCE_CPU", "torch:cpu"))
    )
    common.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="on every render")
    common.add_argument(
        "--presets", nargs="*", default=None, help="names, paths or groups: plain, worlds, animation, all"
    )
    common.add_argument("--formats", default=None, help="output.formats of the compared renders, e.g. png")
    common.add_argument(
        "--stills", action="store_true", help="keep the GPU's PNG stills and sidecars in OUT/stills"
    )
    common.add_argument("--tests", nargs="*", default=None, help="test files of the tests part")
    common.add_argument("--cpu-jobs", type=int, default=8, help="CPU renders at a time")
    common.add_argument("--cpu-threads", type=int, default=2, help="torch threads of each CPU render")
    common.add_argument("--cpu-wait-s", type=float, default=1200, help="the longest wait for the CPU renders")
    common.add_argument("--render-s", type=float, default=600, help="the longest a GPU render may take")
    common.add_argument("--test-s", type=float, default=150, help="the longest the tests may take")
    common.add_argument(
        "--step-s", type=float, default=420, help="the longest one benchmark command may take"
    )
    common.add_argument("--pack", action="store_true", help="pack OUT into OUT.tar.gz (few files come back)")
    top = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter
    )
    sub = top.add_subparsers(dest="command", required=True)
    defaults = {
        "check": "tests,renders,formats",
        "art": "renders",
        "bench": "tests,profile,configs,xl",
        "outputs": "times,mp4-threads,gif",
        "research": "checkpoint,graphs",
    }
    helps = {
        "check": "GPU tests; curated presets and MP4 settings, GPU vs CPU byte for byte",
        "art": "animation presets at full size: GPU times, then CPU renders compared",
        "bench": "GPU tests, profile, physarum bench; pipeline, keyframes, sweeps, sweep-profile",
        "outputs": "time to each file, MP4 threads, GIF encoding",
        "research": "checkpoint resumes compared, graphs; sensitivity, resolution",
    }
    commands = {}
    for name, parts in defaults.items():
        commands[name] = sub.add_parser(name, parents=[common], help=helps[name])
        commands[name].set_defaults(default_parts=parts)
    commands["art"].set_defaults(cpu_jobs=4, cpu_threads=4, cpu_wait_s=330)
    commands["bench"].add_argument("--configs", default="S,L,X")
    commands["bench"].add_argument("--frames", type=int, default=600, help="frames of the pipeline part")
    commands["outputs"].add_argument("--label", default="h200")
    research = commands["research"]
    research.add_argument("--resumes", nargs="*", default=["triton:cuda", "torch:cuda", "torch:cpu"])
    research.add_argument("--jobs", type=int, default=5, help="graphs at a time")
    research.add_argument("--graph-presets", default=None)
    research.add_argument("--sensitivity-presets", default=None)
    research.add_argument("--sizes", nargs="*", default=["512x512", "1024x1024", "2048x2048", "3840x2160"])
    research.add_argument("--seeds", type=int, default=1)
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.parts = (args.parts or args.default_parts).split(",")
    args.out = (args.out or Path(f"gpu-{args.command}")).resolve()
    args.work = (args.work or Path("/tmp/gpu-evidence") / args.command).resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    machine(args)
    commands = {"check": cmd_check, "art": cmd_art, "bench": cmd_bench, "outputs": cmd_outputs}
    commands["research"] = cmd_research
    try:
        commands[args.command](args)
    finally:
        CHILDREN.end_all()
    if args.pack:
        archive = args.out.with_suffix(".tar.gz")
        with tarfile.open(archive, "w:gz") as tar:
            tar.add(args.out, arcname=args.out.name)
        shutil.rmtree(args.out)
        args.out.mkdir()
        shutil.move(archive, args.out / archive.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
